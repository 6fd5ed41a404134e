package main

import (
	"math"
	"runtime/debug"
)

// defaultClientsMemory is --max-clients-memory when neither the flag nor
// PK_MAX_CLIENTS_MEMORY is given: half of GOMEMLIMIT when one is set (the
// Kubernetes example sets it to the container's limit), else 512 MiB.
//
// Redis's maxmemory-clients is off by default; the sidecar's is on,
// because nothing else bounds the sum of what its connections hold (each
// may hold 64 MiB of unread replies) and 50 slow readers took 3.1 GB
// (issue 30). Half of the limit leaves the other half to the heap the
// store and the runtime need (the memory: store's records among them);
// below GOMEMLIMIT the runtime would otherwise collect harder and harder
// as slow readers filled it, and the kernel kill the pod past the
// container's limit. Without a limit, 512 MiB is eight connections at
// their own bound of unread replies, far more than readers that read
// ever hold, and a bound a 1 GB machine survives.
func defaultClientsMemory() int64 {
	if limit := debug.SetMemoryLimit(-1); limit > 0 && limit < math.MaxInt64 {
		return limit / 2
	}
	return 512 << 20
}
