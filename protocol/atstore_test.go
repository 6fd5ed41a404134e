package protocol

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/scheduler/schedtest"
)

// TestHungStoreBoundsLate: a store that holds every call past the
// deadline keeps at most 16 of a loop's submissions (maxAtStore): each is
// answered -UNAVAILABLE at the deadline, and past 16 still held a command
// is answered at once without reaching the store. Once the store lets
// them go (each finish after the deadline comes back as Dropped), the
// loop counts none held and the store serves again.
func TestHungStoreBoundsLate(t *testing.T) {
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	st := &slowStore{Store: memory.New(backend.Options{}), timeout: 50 * time.Millisecond, hold: hold}
	addr, srv := serveServer(t, Config{}, commands.New(schedtest.Declare(st, schedtest.Joined), commands.DefaultLimits, nil))
	t.Cleanup(release) // runs first: a failed test must not leave the store held
	a := dialLines(t, addr)
	for range 16 {
		a.send(req("PK.PREPARE", "ns", "k", "v"))
		a.expect("-UNAVAILABLE no answer within 50ms\r\n")
	}
	a.send(req("PK.PREPARE", "ns", "k", "v"))
	a.expect("-UNAVAILABLE no answer within 50ms: 16 submissions still at the backend\r\n")
	require.Equal(t, 16, batchGauges(srv)[0].Late)

	release()
	require.Eventually(t, func() bool { return batchGauges(srv)[0].Late == 0 }, 10*time.Second, time.Millisecond,
		"the store's finishes after the deadline (Dropped) count them as no longer held")
	a.send(req("PK.GET", "ns", "nothing"))
	a.expect("$-1\r\n")
}
