//go:build unix

package main

import (
	"log/slog"
	"syscall"
)

// reservedFDs are the descriptors kept for what is not a client: the
// listeners, the event loops' epoll and wake-up descriptors, the store's
// files (pebble's WAL and tables) or connections (a Redis pool of ten per
// CPU, MongoDB's), the log. Redis keeps 32 for its own, with no pools.
const reservedFDs = 128

// fitClients is maxClients, or fewer when the process's descriptor limit
// (RLIMIT_NOFILE) cannot hold that many clients besides the admin port's
// connections and reservedFDs: as Redis does at start, it raises the soft
// limit as far as the hard one allows (Go's runtime already has, on Linux)
// and reduces maxclients to what fits, with a warning. A client past it then
// gets -ERR max number of clients reached instead of waiting unaccepted,
// and the store and the admin port keep their descriptors.
func fitClients(maxClients, adminConns int, log *slog.Logger) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return maxClients
	}
	need := uint64(maxClients) + uint64(adminConns) + reservedFDs
	if lim.Cur < need && lim.Cur < lim.Max {
		raised := lim
		raised.Cur = min(need, lim.Max)
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	if lim.Cur >= need {
		return maxClients
	}
	fit := max(int(lim.Cur)-adminConns-reservedFDs, 1)
	log.Warn("maxclients has been reduced to compensate for low ulimit; if you need higher maxclients increase 'ulimit -n'",
		"maxclients_requested", maxClients, "maxclients", fit, "open_files_limit", lim.Cur,
		"admin_max_clients", adminConns, "reserved", reservedFDs)
	return fit
}
