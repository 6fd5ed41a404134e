package protocol

import (
	"context"
	"sync"

	"github.com/panjf2000/gnet/v2"

	"github.com/prepkey/prepkey/commands"
)

// batcher sends the PK runs of one event loop's connections to the store.
// Runs that arrive while the store works on a batch wait and go together in
// the next: one Redis pipeline, or one fsync, for many clients. So the
// batch grows with the load and no timer delays a lone request. Each
// command stays atomic on its own; commands of different connections are
// concurrent anyway, and one connection has at most one run in a batch.
type batcher struct {
	handler Handler
	loop    gnet.EventLoop

	mu    sync.Mutex
	queue []*conn
	wake  chan struct{} // holds a token while queue may be non-empty
	stop  chan struct{}
}

func newBatcher(h Handler, loop gnet.EventLoop) *batcher {
	b := &batcher{handler: h, loop: loop, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	go b.run()
	return b
}

// submit queues c's run (c.runArgs); called on the loop.
func (b *batcher) submit(c *conn) {
	b.mu.Lock()
	b.queue = append(b.queue, c)
	first := len(b.queue) == 1
	b.mu.Unlock()
	if first {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

func (b *batcher) run() {
	var cmds [][][]byte
	var replies []commands.Reply
	for {
		select {
		case <-b.wake:
		case <-b.stop:
			return
		}
		b.mu.Lock()
		conns := b.queue
		// The resume below keeps conns until the loop runs it: a new slice,
		// sized for a batch like this one.
		b.queue = make([]*conn, 0, 2*len(conns))
		b.mu.Unlock()
		if len(conns) == 0 {
			continue
		}
		cmds = cmds[:0]
		for _, c := range conns {
			cmds = append(cmds, c.runArgs...)
		}
		if cap(replies) < len(cmds) {
			replies = make([]commands.Reply, len(cmds))
		}
		replies = replies[:len(cmds)]
		b.handler.Batch(context.Background(), cmds, replies)
		i := 0
		for _, c := range conns {
			for range c.runArgs {
				c.out.reply(replies[i])
				i++
			}
		}
		clear(replies) // do not pin reply values until the next batch
		_ = b.loop.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			for _, c := range conns {
				c.resume()
			}
			return nil
		}))
		// An error means the loops are stopping; they close the connections.
	}
}

func (b *batcher) close() { close(b.stop) }
