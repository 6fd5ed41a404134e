package disk

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// walSyncGate holds the WAL's fsyncs while armed, so a test can look at the
// store while a write is applied but not yet durable.
type walSyncGate struct {
	mu      sync.Mutex
	armed   bool
	entered chan struct{} // closed when a held fsync begins
	release chan struct{} // closing it lets held fsyncs through
	once    sync.Once
}

// open lets every held fsync through, now and later.
func (g *walSyncGate) open() { g.once.Do(func() { close(g.release) }) }

func newWALSyncGate() *walSyncGate {
	return &walSyncGate{entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *walSyncGate) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = true
}

func (g *walSyncGate) String() string { return "wal-sync-gate" }

func (g *walSyncGate) MaybeError(op errorfs.Op) error {
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

// TestNothingSeenBeforeFsync holds the WAL fsync of a PREPARE and checks
// that a GET of that key waits for it (pebble alone would answer from the
// memtable), while a GET of a key on another stripe does not.
func TestNothingSeenBeforeFsync(t *testing.T) {
	ctx := context.Background()
	gate := newWALSyncGate()
	clock := newFakeClock()
	s, err := open(t.TempDir(), backend.Options{Now: clock.Now}, config{fs: errorfs.Wrap(vfs.Default, gate)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	t.Cleanup(gate.open) // runs first: a failed test must not leave Close waiting

	key := []byte("k")
	other := []byte("other")
	for i := 0; s.stripe(recordKey("ns", other)) == s.stripe(recordKey("ns", key)); i++ {
		other = append(other, 'x')
	}
	_, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", other, []byte("o"), forever())
	require.NoError(t, err)

	gate.arm()
	prepared := make(chan bool)
	go func() {
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", key, []byte("v"), forever())
		if err != nil {
			t.Error(err)
		}
		prepared <- ok
	}()
	<-gate.entered // the record is in the memtable, its fsync is held

	got := make(chan backend.Record, 1)
	go func() {
		rec, ok, err := (backend.Calls{Runner: s}).Get(ctx, "ns", key)
		if err != nil || !ok {
			t.Errorf("get after fsync: ok %v, err %v", ok, err)
		}
		got <- rec
	}()
	rec, ok, err := (backend.Calls{Runner: s}).Get(ctx, "ns", other) // another stripe is not held up
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []byte("o"), rec.Value)
	select {
	case rec := <-got:
		t.Fatalf("GET answered %q before the PREPARE's fsync", rec.Value)
	case <-time.After(50 * time.Millisecond): // a bound on non-progress, not on expiry
	}

	gate.open()
	require.True(t, <-prepared)
	require.Equal(t, []byte("v"), (<-got).Value)
}

// TestBatchNothingSeenBeforeFsync holds the WAL fsync of a batch that
// prepares a key and reads it back: the batch does not return, and a GET
// of that key from another client waits, until the fsync is done; a GET of
// a key on another stripe does not wait.
func TestBatchNothingSeenBeforeFsync(t *testing.T) {
	ctx := context.Background()
	gate := newWALSyncGate()
	s, err := open(t.TempDir(), backend.Options{Now: newFakeClock().Now}, config{fs: errorfs.Wrap(vfs.Default, gate)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	t.Cleanup(gate.open) // runs first: a failed test must not leave Close waiting

	key, other := "k", "other"
	for s.stripe(recordKey("ns", []byte(other))) == s.stripe(recordKey("ns", []byte(key))) {
		other += "x"
	}
	require.Equal(t, []backend.Result{yes}, runAlone(ctx, s, []backend.Op{opPrepare(other, "o", forever())}))

	gate.arm()
	ops := []backend.Op{opPrepare(key, "v", forever()), opGet(key), opPrepare(key, "w", forever())}
	res := make([]backend.Result, len(ops))
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, ops, res, backend.Pipelined)
	}()
	<-gate.entered // the batch is in the memtable, its fsync is held

	got := make(chan []backend.Result, 1)
	go func() { got <- runAlone(ctx, s, []backend.Op{opGet(key)}) }()
	require.Equal(t, []backend.Result{found("o", 0, true)}, runAlone(ctx, s, []backend.Op{opGet(other)}))
	select {
	case <-done:
		t.Fatalf("Batch returned %+v before its fsync", res)
	case r := <-got:
		t.Fatalf("GET answered %+v before the batch's fsync", r)
	case <-time.After(50 * time.Millisecond): // a bound on non-progress, not on expiry
	}

	gate.open()
	<-done
	requireResults(t, []backend.Result{yes, found("v", 0, true), no}, res)
	requireResults(t, []backend.Result{found("v", 0, true)}, <-got)
}

// TestFsyncFailure checks that a write whose WAL write or fsync fails is
// never answered, alone or in a batch: pebble cannot go on after it, so the
// process exits (in a helper process here), and the writes acknowledged
// before it are all found on the next Open.
func TestFsyncFailure(t *testing.T) {
	for _, mode := range []string{"single", "batch"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFailingFsync$")
			cmd.Env = append(os.Environ(), "DISK_FAIL_DIR="+dir, "DISK_FAIL_MODE="+mode)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "stdout: %s\nstderr: %s", &stdout, &stderr)
			require.Equal(t, 1, exit.ExitCode())
			require.Contains(t, stderr.String(), "fatal commit error")
			require.NotContains(t, stdout.String(), "answered")

			s := openTest(t, dir, newFakeClock(), time.Hour)
			for i := range 10 {
				rec, ok, err := (backend.Calls{Runner: s}).Get(context.Background(), "ns", fmt.Appendf(nil, "acked-%d", i))
				require.NoError(t, err)
				require.True(t, ok, "acked-%d lost", i)
				require.Equal(t, []byte("v"), rec.Value)
			}
			_, ok, err := (backend.Calls{Runner: s}).Get(context.Background(), "ns", []byte("failed"))
			require.NoError(t, err)
			require.False(t, ok, "the write whose fsync failed was found")
		})
	}
}

// TestHelperFailingFsync is the process of TestFsyncFailure: it reserves
// ten keys, then makes every WAL write fail and tries one more, alone or as
// the first op of a batch that reads it back.
func TestHelperFailingFsync(t *testing.T) {
	dir := os.Getenv("DISK_FAIL_DIR")
	if dir == "" {
		t.Skip("helper process of TestFsyncFailure")
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	var failing atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failing.Load() && strings.HasSuffix(op.Path, ".log") && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return errorfs.ErrInjected
		}
		return nil
	})
	ctx := context.Background()
	s, err := open(dir, backend.Options{}, config{fs: errorfs.Wrap(vfs.Default, inj)})
	require.NoError(t, err)
	for i := range 10 {
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", fmt.Appendf(nil, "acked-%d", i), []byte("v"), forever())
		require.NoError(t, err)
		require.True(t, ok)
	}
	failing.Store(true)
	if os.Getenv("DISK_FAIL_MODE") == "batch" {
		ops := []backend.Op{opPrepare("failed", "v", forever()), opGet("failed"), opGet("acked-0")}
		res := make([]backend.Result, len(ops))
		s.Run(ctx, ops, res, backend.Pipelined)
		fmt.Printf("answered %+v\n", res) // never reached: pebble exits
		return
	}
	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("failed"), []byte("v"), forever())
	fmt.Printf("answered %v, %v\n", ok, err) // never reached: pebble exits
}
