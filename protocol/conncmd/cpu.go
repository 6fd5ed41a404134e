//go:build !wasip1

package conncmd

import (
	"syscall"
	"time"
)

// cpuSeconds is the CPU time the process has used, user and system.
func cpuSeconds() (user, sys float64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds()
}
