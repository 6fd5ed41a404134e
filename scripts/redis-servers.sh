#!/usr/bin/env bash
# Starts or stops the real Redis servers that the Redis backend's tests use,
# all on free loopback ports, with every file under DIR:
#
#   standalone   one redis-server                       PREPKEY_REDIS_URL
#   cluster      three masters, no replicas              PREPKEY_REDIS_CLUSTER_URL
#   sentinel     one master, one replica, three sentinels (quorum 2)
#                                                         PREPKEY_REDIS_SENTINEL_URL
#
# Usage:
#   eval "$(scripts/redis-servers.sh up DIR)"    # prints the export lines
#   scripts/redis-servers.sh down DIR
#
# A sentinel set of its own, for a test that kills its master (appendonly
# with appendfsync always on master and replica):
#   eval "$(scripts/redis-servers.sh sentinel-set DIR)"
#     # PREPKEY_SET_SENTINEL_URL, PREPKEY_SET_MASTER_PORT, PREPKEY_SET_REPLICA_PORT;
#     # the master's pid is in DIR/sentinel-master/redis.pid
#   scripts/redis-servers.sh start-again DIR sentinel-master   # same port, args, data
#
# Needs redis-server and redis-cli (Debian: apt-get install redis-server
# redis-tools). Sentinel runs as redis-server --sentinel, so the separate
# redis-sentinel package is not needed. Logs go to DIR/*/redis.log.
set -euo pipefail
. "$(dirname "$0")/pidfile.sh"

usage() { echo "usage: $0 up|down DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
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
      # for start-again: the same server on the same port and data
      printf '%q ' --port "$port" --bind 127.0.0.1 --daemonize yes \
        --pidfile "$dir/$name/redis.pid" --logfile "$dir/$name/redis.log" \
        --dir "$dir/$name" --save '' --appendonly no "$@" >"$dir/$name/args"
      echo "$port"
      return 0
    fi
    stop_pidfile "$dir/$name/redis.pid"
    log "$name did not start on port $port, retrying"
  done
  log "$name did not start; see $dir/$name/redis.log"
  return 1
}

# start_sentinel NAME MASTER_PORT [QUORUM]: one sentinel watching mymaster.
start_sentinel() {
  local name=$1 mport=$2 quorum=${3:-1} port
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
sentinel monitor mymaster 127.0.0.1 $mport $quorum
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

  local master replica sentinels
  sentinel_set

  echo "export PREPKEY_REDIS_URL=redis://127.0.0.1:$standalone"
  echo "export PREPKEY_REDIS_CLUSTER_URL=redis+cluster://127.0.0.1:$c1,127.0.0.1:$c2,127.0.0.1:$c3"
  echo "export PREPKEY_REDIS_SENTINEL_URL=redis+sentinel://$sentinels/mymaster"
  log "up in $dir (standalone :$standalone, cluster :$c1 :$c2 :$c3, sentinels $sentinels master :$master replica :$replica)"
}

# sentinel_set [server args...]: a master, its replica and three sentinels
# with quorum 2 (one sentinel may fail, and one alone cannot fail the
# master over); sets master, replica and sentinels (host:port,...).
sentinel_set() {
  local s p n
  # no 5 s delay before the replica's first sync (Redis's default for
  # diskless sync), so the set is ready at once
  master=$(start_server sentinel-master --repl-diskless-sync-delay 0 "$@")
  replica=$(start_server sentinel-replica --replicaof 127.0.0.1 "$master" "$@")
  for _ in $(seq 200); do
    if redis-cli -p "$replica" info replication 2>/dev/null | grep -q '^master_link_status:up'; then
      break
    fi
    sleep 0.1
  done
  sentinels=
  for n in 1 2 3; do
    p=$(start_sentinel "sentinel$n" "$master" 2)
    sentinels=${sentinels:+$sentinels,}127.0.0.1:$p
  done
  for s in ${sentinels//,/ }; do
    for _ in $(seq 100); do
      if redis-cli -p "${s##*:}" sentinel get-master-addr-by-name mymaster 2>/dev/null | grep -q "$master"; then
        break
      fi
      sleep 0.1
    done
  done
  # the sentinels know each other and the replica before anything fails
  for s in ${sentinels//,/ }; do
    for _ in $(seq 100); do
      if redis-cli -p "${s##*:}" sentinel master mymaster 2>/dev/null | tr '\n' ' ' | grep -q 'num-slaves 1 .*num-other-sentinels 2'; then
        break
      fi
      sleep 0.1
    done
  done
}

set_up() {
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local master replica sentinels
  sentinel_set --appendonly yes --appendfsync always
  echo "export PREPKEY_SET_SENTINEL_URL=redis+sentinel://$sentinels/mymaster"
  echo "export PREPKEY_SET_MASTER_PORT=$master"
  echo "export PREPKEY_SET_REPLICA_PORT=$replica"
  log "sentinel set up in $dir (sentinels $sentinels master :$master replica :$replica)"
}

# start_again NAME: starts DIR/NAME again as it was started (port, data).
start_again() {
  local name=$1 port
  [ -f "$dir/$name/args" ] || { log "no $dir/$name/args"; return 1; }
  eval "redis-server $(cat "$dir/$name/args")" >&2
  port=$(sed -E 's/.*--port ([0-9]+).*/\1/' "$dir/$name/args")
  wait_ping "$port" || { log "$name did not start again on port $port"; return 1; }
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
  sentinel-set)
    trap 'log "sentinel-set failed; stopping what was started"; down' ERR
    set_up
    ;;
  start-again) start_again "${3:?usage: $0 start-again DIR NAME}" ;;
  down) down ;;
  *) usage ;;
esac
