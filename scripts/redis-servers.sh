#!/usr/bin/env bash
# Starts or stops the real Redis servers that the Redis backend's tests use,
# all on free loopback ports, with every file under DIR:
#
#   standalone   one redis-server                       PREPKEY_REDIS_URL
#   cluster      three masters, no replicas              PREPKEY_REDIS_CLUSTER_URL
#   sentinel     one master, one replica, one sentinel   PREPKEY_REDIS_SENTINEL_URL
#
# Usage:
#   eval "$(scripts/redis-servers.sh up DIR)"    # prints the export lines
#   scripts/redis-servers.sh down DIR
#
# Needs redis-server and redis-cli (Debian: apt-get install redis-server
# redis-tools). Sentinel runs as redis-server --sentinel, so the separate
# redis-sentinel package is not needed. Logs go to DIR/*/redis.log.
set -euo pipefail
. "$(dirname "$0")/pidfile.sh"

usage() { echo "usage: $0 up|down DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$2

log() { echo "redis-servers: $*" >&2; }

# listening reports whether a local TCP port is in use, from /proc (no ss or
# netstat needed on a fresh machine).
listening() {
  local hex
  hex=$(printf '%04X' "$1")
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v p=":$hex" '$2 ~ p"$" {f=1} END {exit !f}'
}

# free_port prints a port that is free along with port+10000 (the cluster
# bus port). Another process may still take it before the server binds it:
# start_server checks that the server came up and retries.
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 35000))
    if ! listening "$p" && ! listening $((p + 10000)); then
      echo "$p"
      return 0
    fi
  done
  log "no free port found"
  return 1
}

# wait_ping PORT: waits up to 10 s for PING to answer PONG.
wait_ping() {
  for _ in $(seq 100); do
    if [ "$(redis-cli -p "$1" ping 2>/dev/null)" = PONG ]; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# start_server NAME [redis-server args...]: starts NAME in DIR/NAME on a free
# port and prints the port.
start_server() {
  local name=$1 port
  shift
  mkdir -p "$dir/$name"
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    rm -f "$dir/$name/redis.pid"
    redis-server --port "$port" --bind 127.0.0.1 --daemonize yes \
      --pidfile "$dir/$name/redis.pid" --logfile "$dir/$name/redis.log" \
      --dir "$dir/$name" --save '' --appendonly no "$@" >&2 || true
    if wait_ping "$port"; then
      echo "$port"
      return 0
    fi
    stop_pidfile "$dir/$name/redis.pid"
    log "$name did not start on port $port, retrying"
  done
  log "$name did not start; see $dir/$name/redis.log"
  return 1
}

# start_sentinel NAME MASTER_PORT: one sentinel watching mymaster.
start_sentinel() {
  local name=$1 mport=$2 port
  mkdir -p "$dir/$name"
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    rm -f "$dir/$name/redis.pid"
    cat >"$dir/$name/sentinel.conf" <<CONF
port $port
bind 127.0.0.1
daemonize yes
pidfile $dir/$name/redis.pid
logfile $dir/$name/redis.log
dir $dir/$name
sentinel monitor mymaster 127.0.0.1 $mport 1
sentinel down-after-milliseconds mymaster 1000
sentinel failover-timeout mymaster 5000
CONF
    redis-server "$dir/$name/sentinel.conf" --sentinel >&2 || true
    if wait_ping "$port"; then
      echo "$port"
      return 0
    fi
    stop_pidfile "$dir/$name/redis.pid"
    log "$name did not start on port $port, retrying"
  done
  log "$name did not start; see $dir/$name/redis.log"
  return 1
}

up() {
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)

  local standalone
  standalone=$(start_server standalone)

  local c1 c2 c3 ok
  c1=$(start_server cluster1 --cluster-enabled yes --cluster-node-timeout 2000)
  c2=$(start_server cluster2 --cluster-enabled yes --cluster-node-timeout 2000)
  c3=$(start_server cluster3 --cluster-enabled yes --cluster-node-timeout 2000)
  redis-cli --cluster create "127.0.0.1:$c1" "127.0.0.1:$c2" "127.0.0.1:$c3" \
    --cluster-replicas 0 --cluster-yes >"$dir/cluster-create.log" 2>&1 || {
    log "cluster create failed; see $dir/cluster-create.log"
    return 1
  }
  for _ in $(seq 100); do
    ok=0
    for p in "$c1" "$c2" "$c3"; do
      if redis-cli -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; then
        ok=$((ok + 1))
      fi
    done
    [ "$ok" = 3 ] && break
    sleep 0.1
  done
  if [ "$ok" != 3 ]; then
    log "cluster did not reach cluster_state:ok"
    return 1
  fi

  local master replica sentinel
  master=$(start_server sentinel-master)
  replica=$(start_server sentinel-replica --replicaof 127.0.0.1 "$master")
  sentinel=$(start_sentinel sentinel "$master")
  for _ in $(seq 100); do
    if redis-cli -p "$sentinel" sentinel get-master-addr-by-name mymaster 2>/dev/null | grep -q "$master"; then
      break
    fi
    sleep 0.1
  done

  echo "export PREPKEY_REDIS_URL=redis://127.0.0.1:$standalone"
  echo "export PREPKEY_REDIS_CLUSTER_URL=redis+cluster://127.0.0.1:$c1,127.0.0.1:$c2,127.0.0.1:$c3"
  echo "export PREPKEY_REDIS_SENTINEL_URL=redis+sentinel://127.0.0.1:$sentinel/mymaster"
  log "up in $dir (standalone :$standalone, cluster :$c1 :$c2 :$c3, sentinel :$sentinel master :$master replica :$replica)"
}

down() {
  [ -d "$dir" ] || return 0
  local f
  for f in "$dir"/*/redis.pid; do
    [ -e "$f" ] && stop_pidfile "$f"
  done
  log "down in $dir"
}

case $cmd in
  up)
    # A failure half way stops what was started, so nothing is left running.
    trap 'log "up failed; stopping what was started"; down' ERR
    up
    ;;
  down) down ;;
  *) usage ;;
esac
