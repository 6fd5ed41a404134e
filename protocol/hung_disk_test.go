package protocol

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/disk"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/scheduler/schedtest"
)

// fsyncGate is a file system injector that holds the WAL's fsyncs while
// armed, as a disk that hangs would.
type fsyncGate struct {
	mu      sync.Mutex
	armed   bool
	entered chan struct{} // closed when a held fsync begins
	release chan struct{} // closing it lets held fsyncs through
	once    sync.Once
}

func newFsyncGate() *fsyncGate {
	return &fsyncGate{entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *fsyncGate) String() string { return "fsync-gate" }

func (g *fsyncGate) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = true
}

func (g *fsyncGate) open() { g.once.Do(func() { close(g.release) }) }

func (g *fsyncGate) MaybeError(op errorfs.Op) error {
	switch op.Kind {
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
	default:
		return nil
	}
	if !strings.HasSuffix(op.Path, ".log") {
		return nil
	}
	g.mu.Lock()
	armed := g.armed
	if armed {
		select {
		case <-g.entered:
		default:
			close(g.entered)
		}
	}
	g.mu.Unlock()
	if armed {
		<-g.release
	}
	return nil
}

// TestHungFsyncKeepsLoop holds the WAL fsync of the embedded store under a
// PK.PREPARE: the loop goes on answering PING, INFO and a read of another
// key for another client on the same loop; the held command gets
// -UNAVAILABLE once the backend timeout has passed, and so does an EXEC
// that writes meanwhile; when the fsync is let
// through, writes are acknowledged again and every acknowledged one is
// there after the store is reopened.
func TestHungFsyncKeepsLoop(t *testing.T) {
	dir := t.TempDir()
	gate := newFsyncGate()
	st, err := disk.OpenTuned(dir, backend.Options{}, disk.Tuning{FS: errorfs.Wrap(vfs.Default, gate)})
	require.NoError(t, err)
	addr := serve(t, Config{BackendTimeout: 300 * time.Millisecond}, commands.New(schedtest.Declare(st, schedtest.Joined), commands.DefaultLimits, nil))
	t.Cleanup(gate.open) // runs first: a failed test must not leave the store held

	a, b := dialLines(t, addr), dialLines(t, addr)
	a.send(req("PK.PREPARE", "ns", "k1", "v1"))
	a.expect(":1\r\n")

	gate.arm()
	a.send(req("PK.PREPARE", "ns", "k2", "v2"))
	<-gate.entered // k2 is applied, its fsync is held

	b.send(req("PING"))
	b.expect("+PONG\r\n")
	b.send(req("INFO", "server"))
	line, err := b.rd.ReadString('\n')
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
	require.NoError(t, err, line)
	_, err = io.ReadFull(b.rd, make([]byte, n+2))
	require.NoError(t, err)
	b.send(req("PK.GET", "ns", "k1") + req("PING", "again"))
	b.expect("$2\r\n")
	b.expect("v1\r\n")
	b.expect("$5\r\n")
	b.expect("again\r\n")
	a.expect("-UNAVAILABLE no answer within 300ms\r\n")
	a.send(req("PING")) // the connection is served again
	a.expect("+PONG\r\n")
	// A transaction is bounded alike.
	b.send(req("MULTI") + req("PK.PREPARE", "ns", "k4", "v4") + req("EXEC"))
	b.expect("+OK\r\n")
	b.expect("+QUEUED\r\n")
	b.expect("-UNAVAILABLE no answer within 300ms\r\n")
	b.send(req("PING"))
	b.expect("+PONG\r\n")

	gate.open()
	// The store answers again: a write is acknowledged once its fsync is.
	a.send(req("PK.PREPARE", "ns", "k3", "v3"))
	a.expect(":1\r\n")

	require.NoError(t, st.Close())
	st, err = disk.Open(dir, backend.Options{})
	require.NoError(t, err)
	defer st.Close()
	for _, k := range []string{"k1", "k3"} {
		rec, ok, err := (backend.Calls{Runner: st}).Get(t.Context(), "ns", []byte(k))
		require.NoError(t, err)
		require.True(t, ok, k)
		require.Equal(t, "v"+k[1:], string(rec.Value))
	}
}

// TestStoreTimeoutBoundsEveryPath holds a store that ignores its context,
// on each path a PK command takes to a store (a batch on the loop, a batch
// off it, a run of its own for a store that does not batch): the command
// gets -UNAVAILABLE once the backend timeout has passed, the late answer is
// dropped, and the connection's next commands are answered in order.
func TestStoreTimeoutBoundsEveryPath(t *testing.T) {
	for _, batches := range []bool{true, false} {
		t.Run(fmt.Sprintf("batches=%v", batches), func(t *testing.T) {
			h := &echoHandler{batches: batches}
			hold := make(chan struct{})
			release := sync.OnceFunc(func() { close(hold) })
			h.hold, h.entered = hold, make(chan struct{}, 8)
			addr := serve(t, Config{BackendTimeout: 200 * time.Millisecond}, h)
			t.Cleanup(release) // runs first: a failed test must not leave the store held
			a, b := dialLines(t, addr), dialLines(t, addr)
			a.send(echoReq(1) + echoReq(2))
			<-h.entered
			b.send(req("PING"))
			b.expect("+PONG\r\n")
			a.expect("-UNAVAILABLE no answer within 200ms\r\n")
			a.expect("-UNAVAILABLE no answer within 200ms\r\n")
			h.mu.Lock()
			h.hold = nil
			h.mu.Unlock()
			a.send(echoReq(3))
			a.expect(":3\r\n")
			release() // the late answers to 1 and 2 are dropped
			a.send(echoReq(4) + echoReq(5))
			a.expect(":4\r\n")
			a.expect(":5\r\n")
		})
	}
}

// TestStoreTimeoutIsSilence: the timeout bounds how long the store is
// silent, not a deep pipeline as a whole. A store that does not batch
// answers 10 commands one after the other, each well within the timeout,
// all of them together well past it: every one is answered.
func TestStoreTimeoutIsSilence(t *testing.T) {
	h := &echoHandler{delay: 60 * time.Millisecond}
	addr := serve(t, Config{BackendTimeout: 200 * time.Millisecond}, h)
	a := dialLines(t, addr)
	var reqs string
	for i := range 10 {
		reqs += echoReq(i)
	}
	a.send(reqs)
	for i := range 10 {
		a.expect(fmt.Sprintf(":%d\r\n", i))
	}
}
