//go:build wasip1

package main

import (
	"syscall"
	"time"
)

// storeClock is the clock of the store and the PK commands (expiry times,
// in milliseconds since the epoch). On wasip1 every reading of a clock is
// a call out of the module to its host (clock_time_get), and time.Now makes
// two: the wall clock and the monotonic one, which nothing here needs. A
// PK.PREPARE read the time twice (the command's expiry, the store's), so
// four of a request's calls to the host were the clock's; reading the wall
// clock alone halves them (issue 34; the host counts them with
// WASMHOST_COUNT). Its times have no monotonic reading: they are only
// turned into milliseconds.
func storeClock() func() time.Time { return wallClock }

func wallClock() time.Time {
	var tv syscall.Timeval
	if err := syscall.Gettimeofday(&tv); err != nil {
		return time.Now()
	}
	return time.Unix(tv.Sec, tv.Usec*1000)
}
