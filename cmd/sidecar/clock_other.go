//go:build !wasip1

package main

import "time"

// storeClock is the clock of the store and the PK commands: nil, time.Now
// (clock_wasip1.go says why the WebAssembly build has its own).
func storeClock() func() time.Time { return nil }
