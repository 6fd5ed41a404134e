package disk

import (
	"fmt"
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

// walSyncs counts the WAL's fsyncs, and holds them while held is set.
type walSyncs struct {
	n       atomic.Int64
	held    atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (w *walSyncs) String() string { return "wal-syncs" }

func (w *walSyncs) MaybeError(op errorfs.Op) error {
	switch op.Kind {
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
	default:
		return nil
	}
	if !strings.HasSuffix(op.Path, ".log") {
		return nil
	}
	w.n.Add(1)
	if w.held.Load() {
		w.once.Do(func() { close(w.entered) })
		<-w.release
	}
	return nil
}

// submitOps submits ops to s, watched, and returns where Done reports.
func submitOps(s *Store, ops []backend.Op) (*backend.Submission, <-chan backend.Completion) {
	done := make(chan backend.Completion, 1)
	sub := &backend.Submission{Ops: ops, Res: make([]backend.Result, len(ops)), Timeout: time.Minute,
		Done: func(_ *backend.Submission, how backend.Completion) { done <- how }}
	sub.Watch()
	s.Submit(sub)
	return sub, done
}

// TestSubmitGroupCommit: the submissions that arrive while a commit is
// under way (its fsync held) join the next commit: one fsync for the 16
// of them, each finished Elsewhere with its own results, in order.
func TestSubmitGroupCommit(t *testing.T) {
	syncs := &walSyncs{entered: make(chan struct{}), release: make(chan struct{})}
	s, err := open(t.TempDir(), backend.Options{}, config{fs: errorfs.Wrap(vfs.Default, syncs)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	t.Cleanup(func() { syncs.once.Do(func() { close(syncs.entered) }); close(syncs.release) })

	syncs.held.Store(true)
	before := syncs.n.Load()
	first, firstDone := submitOps(s, []backend.Op{{Kind: backend.OpPrepare, NS: "ns", Key: []byte("first"), Value: []byte("v")}})
	<-syncs.entered // the committer is in the first commit's fsync
	syncs.held.Store(false)

	const n = 16
	subs := make([]*backend.Submission, n)
	dones := make([]<-chan backend.Completion, n)
	for i := range n {
		// Each prepares its key and one that the one before prepared:
		// in order, each finds it taken.
		ops := []backend.Op{
			{Kind: backend.OpPrepare, NS: "ns", Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")},
			{Kind: backend.OpPrepare, NS: "ns", Key: fmt.Appendf(nil, "k%d", max(i-1, 0)), Value: []byte("w")},
		}
		subs[i], dones[i] = submitOps(s, ops)
	}
	syncs.release <- struct{}{} // let the first fsync through; the next ones pass
	require.Equal(t, backend.Elsewhere, <-firstDone)
	require.True(t, first.Res[0].OK)
	for i := range n {
		require.Equal(t, backend.Elsewhere, <-dones[i])
		require.NoError(t, subs[i].Res[0].Err)
		require.True(t, subs[i].Res[0].OK, "submission %d", i)
		require.False(t, subs[i].Res[1].OK, "submission %d: its second key is taken", i)
	}
	require.Equal(t, int64(2), syncs.n.Load()-before, "WAL fsyncs: the first commit's, then one for the 16 that waited")
}
