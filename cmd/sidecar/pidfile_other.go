//go:build !unix

package main

// processAlive cannot tell on this platform (wasip1, windows): a pid file
// left behind is taken as stale.
func processAlive(pid int) bool { return false }
