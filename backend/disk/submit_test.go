package disk

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// TestSubmitGroupCommit: the submissions that arrive while every
// committer is in a commit (the first one's fsync held, the others
// queued behind it in pebble) join the next group: 64 submissions take
// at most maxCommitters commits, not 64, and each is finished Elsewhere
// with its own results.
func TestSubmitGroupCommit(t *testing.T) {
	syncs := &walSyncs{entered: make(chan struct{}), release: make(chan struct{})}
	s, err := open(t.TempDir(), backend.Options{}, config{fs: errorfs.Wrap(vfs.Default, syncs)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	t.Cleanup(func() { syncs.once.Do(func() { close(syncs.entered) }); close(syncs.release) })

	syncs.held.Store(true)
	first, firstDone := submitOps(s, []backend.Op{{Kind: backend.OpPrepare, NS: "ns", Key: []byte("first"), Value: []byte("v")}})
	<-syncs.entered // the first committer is in its commit's fsync
	syncs.held.Store(false)
	before := s.group.groups.Load()

	const n = 64
	subs := make([]*backend.Submission, n)
	dones := make([]<-chan backend.Completion, n)
	for i := range n {
		// Each prepares its key twice: in order, the second finds it
		// taken. (Submissions in flight at once are concurrent, as their
		// connections are: groups committing at once keep no order
		// between them.)
		ops := []backend.Op{
			{Kind: backend.OpPrepare, NS: "ns", Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")},
			{Kind: backend.OpPrepare, NS: "ns", Key: fmt.Appendf(nil, "k%d", i), Value: []byte("w")},
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
	require.LessOrEqual(t, s.group.groups.Load()-before, int64(maxCommitters), "commits of the %d submissions", n)
}

// BenchmarkSubmit is PK.PREPARE of random keys through Submit (the group
// commit), from 1 and 16 submitters each waiting for its Done, against
// the same through RunOne (each its own commit; pebble shares the fsyncs
// of concurrent commits).
func BenchmarkSubmit(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("submit/%d", n), func(b *testing.B) {
			s := benchStore(b)
			setClients(b, n)
			b.RunParallel(func(pb *testing.PB) {
				done := make(chan struct{}, 1)
				sub := &backend.Submission{Res: make([]backend.Result, 1), Timeout: time.Minute,
					Done: func(*backend.Submission, backend.Completion) { done <- struct{}{} }}
				for pb.Next() {
					sub.Ops = []backend.Op{{Kind: backend.OpPrepare, NS: "ns", Key: fmt.Appendf(nil, "k:%d", rand.IntN(1_000_000)), Value: []byte("v")}}
					sub.Watch()
					s.Submit(sub)
					<-done
					if sub.Res[0].Err != nil {
						b.Error(sub.Res[0].Err)
						return
					}
				}
			})
			reportOps(b)
		})
		b.Run(fmt.Sprintf("runone/%d", n), func(b *testing.B) {
			s := benchStore(b)
			setClients(b, n)
			ctx := context.Background()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					op := backend.Op{Kind: backend.OpPrepare, NS: "ns", Key: fmt.Appendf(nil, "k:%d", rand.IntN(1_000_000)), Value: []byte("v")}
					if r := s.RunOne(ctx, op); r.Err != nil {
						b.Error(r.Err)
						return
					}
				}
			})
			reportOps(b)
		})
	}
}
