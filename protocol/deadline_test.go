package protocol

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/scheduler/schedtest"
)

// slowStore is the memory store, each call of which takes slow, or waits
// for hold when it is set: a store slower than the backend timeout that
// declares its calls may take up to timeout (Info.Timeout), as Redis with
// ?wait=N waits for its replicas up to wait-timeout.
type slowStore struct {
	*memory.Store
	slow    time.Duration
	timeout time.Duration
	hold    chan struct{}
}

func (s *slowStore) Info() backend.Info { return backend.Info{Timeout: s.timeout} }

func (s *slowStore) delay() {
	if s.hold != nil {
		<-s.hold
		return
	}
	time.Sleep(s.slow) // the store's slowness itself, not a wait for an event
}

func (s *slowStore) Run(ctx context.Context, ops []backend.Op, res []backend.Result, iso backend.Isolation) error {
	s.delay()
	return s.Store.Run(ctx, ops, res, iso)
}

func (s *slowStore) RunOne(ctx context.Context, op backend.Op) backend.Result {
	s.delay()
	return s.Store.RunOne(ctx, op)
}

// TestStoreDeadline: a store that declares its calls may take longer than
// the backend timeout (backend.Info.Timeout) is given that long on every
// path that waits for it, a batch, a run of its own, and EXEC: one deadline
// per submission. It was once given the plain backend timeout on these
// paths while the loop's Redis connection waited backend timeout plus
// wait-timeout, so a write with ?wait=N whose replica took longer than
// the backend timeout answered -UNAVAILABLE on one path and :1 on the
// other. Past the store's own deadline, the command is still answered
// -UNAVAILABLE.
func TestStoreDeadline(t *testing.T) {
	for _, sc := range []struct {
		name string
		schedtest.Schedule
	}{{"batch", schedtest.Joined}, {"calls", schedtest.Alone}} {
		t.Run(sc.name, func(t *testing.T) {
			st := &slowStore{Store: memory.New(backend.Options{}), slow: 300 * time.Millisecond, timeout: 5 * time.Second}
			addr := serve(t, Config{BackendTimeout: 100 * time.Millisecond}, commands.New(schedtest.Declare(st, sc.Schedule), commands.DefaultLimits, nil))
			a := dialLines(t, addr)
			a.send(req("PK.PREPARE", "ns", "k", "v"))
			a.expect(":1\r\n")
			a.send(req("MULTI") + req("PK.GET", "ns", "k") + req("EXEC"))
			a.expect("+OK\r\n")
			a.expect("+QUEUED\r\n")
			a.expect("*1\r\n")
			a.expect("$1\r\n")
			a.expect("v\r\n")
		})
		t.Run(sc.name+"/past", func(t *testing.T) {
			hold := make(chan struct{})
			release := sync.OnceFunc(func() { close(hold) })
			st := &slowStore{Store: memory.New(backend.Options{}), timeout: 300 * time.Millisecond, hold: hold}
			addr := serve(t, Config{BackendTimeout: 100 * time.Millisecond}, commands.New(schedtest.Declare(st, sc.Schedule), commands.DefaultLimits, nil))
			t.Cleanup(release) // runs first: a failed test must not leave the store held
			a := dialLines(t, addr)
			a.send(req("PK.PREPARE", "ns", "k", "v"))
			a.expect("-UNAVAILABLE no answer within 300ms\r\n")
			a.send(req("MULTI") + req("PK.GET", "ns", "k") + req("EXEC"))
			a.expect("+OK\r\n")
			a.expect("+QUEUED\r\n")
			a.expect("-UNAVAILABLE no answer within 300ms\r\n")
		})
	}
}
