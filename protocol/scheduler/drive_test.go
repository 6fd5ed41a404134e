package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/stats"
	"github.com/prepkey/prepkey/protocol/transport"
)

// echoStore answers each command with the number of its arguments.
type echoStore struct{}

func (echoStore) Do(_ context.Context, args [][]byte) (commands.Reply, bool) {
	return commands.Reply{Kind: commands.Int, Int: int64(len(args))}, true
}

func (s echoStore) Batch(ctx context.Context, cmds [][][]byte, replies []commands.Reply) {
	for i, args := range cmds {
		replies[i], _ = s.Do(ctx, args)
	}
}

func (echoStore) ParseBatch([][][]byte, []commands.Reply) commands.Parsed { return commands.Parsed{} }

func newDrivers(drive backend.Drive, store Store) *Drivers {
	return New(Config{Drive: drive, Store: store, Deadline: time.Second, Stats: stats.New(nil)})
}

// TestDriveWireWithoutWire: a store whose opener says DriveWire, served
// with no Config.Wire (the conformance suite's server, the WebAssembly
// build), is driven DriveBatch (package protocol's test of the same name
// sends the runs of several clients through it); a server with no store
// (one that only counts) is driven DriveCalls.
func TestDriveWireWithoutWire(t *testing.T) {
	if ds := newDrivers(backend.DriveWire, echoStore{}); ds.drive != backend.DriveBatch {
		t.Fatalf("drive %v, want %v", ds.drive, backend.DriveBatch)
	}
	if ds := newDrivers(backend.DriveBatch, nil); ds.drive != backend.DriveCalls {
		t.Fatalf("no store: drive %v, want %v", ds.drive, backend.DriveCalls)
	}
}

// fakeLoop is a loop that runs nothing: For only keys its drivers by it.
type fakeLoop struct{ _ int }

func (*fakeLoop) Later(func()) error     { return nil }
func (*fakeLoop) CloseConn(transport.IO) {}

// TestDriverFor: each Drive gets its driver, one per loop; the portable
// transport (no loop) drives a store that batches with one driver for all
// its connections (drive_portable.go), and a store that does not a run
// at a time, one command per store call.
func TestDriverFor(t *testing.T) {
	loop := &fakeLoop{}
	for _, tc := range []struct {
		drive   backend.Drive
		driver  string
		perCall int // on the portable transport
	}{
		{backend.DriveInline, "scheduler.inlineDriver", 0},
		{backend.DriveBatch, "*scheduler.batchDriver", 0},
		{backend.DriveCalls, "*scheduler.callsDriver", 1},
	} {
		ds := newDrivers(tc.drive, echoStore{})
		d := ds.For(loop)
		if got := fmt.Sprintf("%T", d); got != tc.driver {
			t.Errorf("%v: driver %s, want %s", ds.drive, got, tc.driver)
		}
		if ds.For(loop) != d {
			t.Errorf("%v: a second driver for the same loop", ds.drive)
		}
		switch p := ds.For(nil).(type) {
		case inlineDriver:
		case portableDriver:
			if tc.drive != backend.DriveBatch || ds.For(nil) != p {
				t.Errorf("%v, portable: %T, or not one for all connections", ds.drive, p)
			}
		case *callsDriver:
			if p.perCall != tc.perCall {
				t.Errorf("%v, portable: %d commands per store call, want %d", ds.drive, p.perCall, tc.perCall)
			}
		default:
			t.Errorf("%v, portable: driver %T", ds.drive, p)
		}
		ds.Close()
	}
}

// fakeRun is a run of n commands that notes what the driver does with it.
type fakeRun struct {
	n       int
	parked  bool
	served  int // times unparked
	answers [][]commands.Reply
	resumed chan struct{}
	l       *loopRuns // served again, it submits its run there
}

func (r *fakeRun) Commands() [][][]byte {
	cmds := make([][][]byte, r.n)
	for i := range cmds {
		cmds[i] = [][]byte{[]byte("PK.ECHO"), fmt.Appendf(nil, "%d", i)}
	}
	return cmds
}
func (r *fakeRun) Big() bool { return false }
func (r *fakeRun) Park() bool {
	if r.parked {
		return false
	}
	r.parked = true
	return true
}
func (r *fakeRun) Unpark() {
	r.parked = false
	r.served++
	r.l.queued += r.n // its serve submits its run, on the loop
}
func (r *fakeRun) Answer(replies []commands.Reply, _ time.Time, _ bool) {
	r.answers = append(r.answers, replies)
}
func (r *fakeRun) Resume()      {}
func (r *fakeRun) ResumeLater() { close(r.resumed) }

// TestLoopRunsBound: past MaxLoopCmds under way a run is parked, once
// however often it asks, and the parked runs are served oldest first as
// commands land, while there is room.
func TestLoopRunsBound(t *testing.T) {
	var l loopRuns
	l.queued = MaxLoopCmds - 1
	if !l.Admit(&fakeRun{n: 1}) {
		t.Fatal("a run refused below the bound")
	}
	l.queued = MaxLoopCmds
	a, b := &fakeRun{n: 1, l: &l}, &fakeRun{n: 1, l: &l}
	for _, r := range []*fakeRun{a, a, b} {
		if l.Admit(r) {
			t.Fatal("a run admitted at the bound")
		}
	}
	if len(l.parked) != 2 || !a.parked || !b.parked {
		t.Fatalf("parked %d runs (a %v, b %v), want a and b once each", len(l.parked), a.parked, b.parked)
	}
	l.Landed(1) // room for one run: a's, the oldest
	if a.served != 1 || b.served != 0 || len(l.parked) != 1 {
		t.Fatalf("after one landed: a served %d, b %d, %d parked", a.served, b.served, len(l.parked))
	}
	l.Landed(MaxLoopCmds)
	if b.served != 1 || len(l.parked) != 0 || l.queued != 1 {
		t.Fatalf("after all landed: b served %d, %d parked, %d under way", b.served, len(l.parked), l.queued)
	}
}

// TestCallsDriverAnswers: a run given to the calls driver is answered in
// order, one store call per command, and resumed from off the loop.
func TestCallsDriverAnswers(t *testing.T) {
	ds := newDrivers(backend.DriveCalls, echoStore{})
	defer ds.Close()
	r := &fakeRun{n: 3, resumed: make(chan struct{})}
	ds.For(nil).Submit(r)
	select {
	case <-r.resumed:
	case <-time.After(5 * time.Second):
		t.Fatal("the run was not resumed")
	}
	if len(r.answers) != 1 || len(r.answers[0]) != 3 {
		t.Fatalf("answers %v, want one Answer of 3 replies", r.answers)
	}
	for i, rep := range r.answers[0] {
		if rep.Int != 2 {
			t.Errorf("reply %d: %+v", i, rep)
		}
	}
}
