package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/watchdog"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/transport"
)

// wireBatch is a batch on the loop's own connection to Redis (an
// loopconn.Batch): its commands are parsed into ops on the loop, when it
// is sent (the refused ones answered at once), the connection takes the
// ops to the store and hands back their results, and the batch answers
// its runs from them, on the loop. So the connection sees ops and
// results only, never a command or a reply.
type wireBatch struct {
	batch
	cfg     *Config
	loop    transport.Loop // where its connections are resumed
	replies []commands.Reply
	parsed  commands.Parsed
}

// newWireBatch parses runs' commands (on the loop) into a batch for the
// loop's connection.
func newWireBatch(w *wireDriver, runs []Conn) *wireBatch {
	b := &wireBatch{batch: newBatch(runs, w.stats), cfg: w.cfg, loop: w.loop}
	b.replies = make([]commands.Reply, len(b.cmds))
	b.parsed = w.cfg.Store.ParseBatch(b.cmds, b.replies)
	return b
}

func (b *wireBatch) Ops() []backend.Op { return b.parsed.Ops }

func (b *wireBatch) Stored(n int, took time.Duration) { b.stats.StoreCall(b.cmds, n, took) }

// Answer writes the replies to the connections' output and resumes them,
// on the loop. The ops the connection hands back (again: a scan, an op
// answered NOSCRIPT) go through the store's own client first, on a
// goroutine (runAgain), and the batch is answered when they are done.
func (b *wireBatch) Answer(res []backend.Result, again []int) {
	b.parsed.Answer(res, b.replies)
	if len(again) == 0 {
		answer(b.runs, b.replies, false)
		resumeAll(b.runs)
		return
	}
	go b.runAgain(again)
}

// runAgain runs the commands of the ops in again through Store.Batch, under
// the store's one deadline counted as its silence, as every batch is
// (watchdog.Watch): when the store has not answered for that long, they are
// answered -UNAVAILABLE, whatever it does, and its late answer is dropped.
// The first of the two claims the batch and has the loop answer it.
func (b *wireBatch) runAgain(again []int) {
	timeout := b.cfg.Deadline
	w := new(watchdog.Watch)
	w.Start(timeout, func() {
		if w.Expired() {
			r := commands.Unavailable(fmt.Errorf("no answer within %s", timeout))
			for _, k := range again {
				b.replies[b.parsed.Index(k)] = r
			}
			// The store may still read the commands: the connections
			// let go of their copies (late).
			b.answerLater(true)
		}
	})
	cmds := make([][][]byte, len(again))
	replies := make([]commands.Reply, len(again))
	for j, k := range again {
		cmds[j] = b.cmds[b.parsed.Index(k)]
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	b.cfg.Store.Batch(ctx, cmds, replies)
	cancel()
	if !w.Claim() {
		return // the deadline answered them
	}
	for j, k := range again {
		b.replies[b.parsed.Index(k)] = replies[j]
	}
	b.answerLater(false)
}

// answerLater has the loop answer the batch and resume its connections.
func (b *wireBatch) answerLater(late bool) {
	_ = b.loop.Later(func() {
		answer(b.runs, b.replies, late)
		resumeAll(b.runs)
	})
	// An error means the loops are stopping; they close the connections.
}
