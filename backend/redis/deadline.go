package redis

import (
	"context"
	"sync/atomic"
	"time"
)

// granule is how much later than the timeout a call may give up: calls
// that start within one granule share one deadline context.
const granule = time.Millisecond

// deadlines bounds every call by the timeout. context.WithTimeout per call
// costs a timer and five allocations, a real share of a call's CPU at tens
// of thousands of calls per second; so calls whose context can never be
// cancelled (the sidecar's) share one context per granule, whose deadline
// is between timeout and timeout+granule after each of them started.
type deadlines struct {
	timeout time.Duration
	cur     atomic.Pointer[sharedDeadline]
}

type sharedDeadline struct {
	ctx    context.Context
	cancel context.CancelFunc // never called: the deadline releases it
	until  time.Time          // calls starting before it may share ctx
}

func noop() {}

// bound returns ctx limited to the timeout and its cancel function.
func (d *deadlines) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Done() != nil {
		return context.WithTimeout(ctx, d.timeout)
	}
	now := time.Now()
	if c := d.cur.Load(); c != nil && now.Before(c.until) {
		return c.ctx, noop
	}
	c := &sharedDeadline{until: now.Add(granule)}
	c.ctx, c.cancel = context.WithDeadline(context.Background(), now.Add(d.timeout+granule))
	d.cur.Store(c)
	return c.ctx, noop
}
