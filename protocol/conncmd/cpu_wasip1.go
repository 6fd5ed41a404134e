//go:build wasip1

package conncmd

// cpuSeconds: WASI has no getrusage; INFO shows 0.
func cpuSeconds() (user, sys float64) { return 0, 0 }
