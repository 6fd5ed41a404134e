//go:build !unix

package main

import "log/slog"

// fitClients is maxClients: the platform has no descriptor limit to fit
// (wasip1's host owns the sockets).
func fitClients(maxClients, _ int, _ *slog.Logger) int { return maxClients }
