# Sourced by the scripts that start test servers.

# stop_pidfile PIDFILE: stops the process of that pid file (TERM, then KILL
# after 5 s), waits for its exit and removes the file.
stop_pidfile() {
	local pid
	[ -f "$1" ] || return 0
	pid=$(cat "$1")
	if kill "$pid" 2>/dev/null; then
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$1"
}
