package client

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// rollbackTimeout bounds the rollback UsingPrepare sends on a context
// detached from the caller's cancellation: long enough for a sidecar whose
// backend is slow (its own --backend-timeout is 2 s by default), short
// enough that a caller whose ctx was cancelled is not held for long.
const rollbackTimeout = 5 * time.Second

// UsingPrepare runs fn under a reservation of key for value: the one flow a
// reservation exists for. It prepares (PK.PREPARE, with the Expiry if any),
// then:
//
//   - prepared false (a live record holds key): fn runs with prepared false;
//     nothing is rolled back; fn's error is returned as is.
//   - prepared true, fn returns nil: nothing is rolled back; nil.
//   - prepared true, fn returns an error (or panics): the reservation is
//     rolled back with PK.ROLLBACK name key IFEQ value, so only this
//     reservation is released, never one that replaced it, and fn's error is
//     returned (the panic goes on). A rollback that finds nothing to delete
//     is not an error.
//   - ... and the rollback fails: a *RollbackError, with the rollback's error
//     and fn's (errors.Is matches either); the reservation may still be held.
//   - the prepare fails and its outcome is known (a -ERR, ctx already done
//     before it was sent): that error, and fn is not run.
//
// # Resends and unknown outcomes
//
// go-redis sends a command again after a connection error (MaxRetries, 3 by
// default): a PK.PREPARE whose reply was lost answers false the second time,
// for the reservation its own first attempt made. And a prepare that fails
// with ErrUnavailable or a connection error (OutcomeUnknown) may have
// reserved key. In both cases UsingPrepare reads the record (PK.GETVALUE)
// and applies one rule: a live record whose value is exactly value is ours.
//
//   - after a false (read unless the client is a *redis.Client with
//     MaxRetries -1, which never resends: one more round trip on a taken
//     key): ours → prepared true; otherwise false as answered. A failed
//     read is returned, fn not run.
//   - after an outcome-unknown error: ours → prepared true (rolled back at
//     once instead when ctx is done); held by another value → prepared
//     false; no live record → the prepare's error (nothing is held: a retry
//     is safe); a failed read → the prepare's error, the outcome still
//     unknown.
//
// The rule's limit: a record that another writer made with a byte-identical
// value is indistinguishable from ours, so both bodies would run prepared,
// and one's rollback would release the other's reservation. Make the value
// identify the writer (a command or request id, as Wow's prepare values
// do), never only the key's owner's data.
//
// # Context
//
// The prepare's reply is waited for even when ctx is cancelled meanwhile
// (go-redis bounds the wait with its ReadTimeout), so that UsingPrepare
// knows whether it holds a reservation and never leaves it held; the other
// methods return at once instead, leaving the outcome unknown. The reads
// and rollbacks above are sent on context.WithoutCancel(ctx) bounded by 5
// s, so a cancelled ctx still resolves and releases the reservation. When
// ctx is done after the prepare succeeded and before fn starts, fn is not
// run, the reservation is rolled back and ctx.Err() is returned (in a
// *RollbackError if the rollback fails). When go-redis loses the prepare's
// reply and the sidecar has not yet run it (stalled: the read overtakes the
// prepare, or times out), the record may appear after UsingPrepare returned
// the error: give the reservation a TTL, so that such a record expires.
func (c *Client) UsingPrepare(ctx context.Context, name, key string, value []byte,
	fn func(ctx context.Context, prepared bool) error, exp ...Expiry) error {
	_, err := UsingPrepareResult(ctx, c, name, key, value, func(ctx context.Context, prepared bool) (struct{}, error) {
		return struct{}{}, fn(ctx, prepared)
	}, exp...)
	return err
}

// UsingPrepareResult is UsingPrepare for a fn that returns a result: the
// result fn returned is returned with its error, in every case where fn ran;
// the zero T where it did not.
func UsingPrepareResult[T any](ctx context.Context, c *Client, name, key string, value []byte,
	fn func(ctx context.Context, prepared bool) (T, error), exp ...Expiry) (T, error) {
	var zero T
	prepared, err := c.prepare(ctx, true, name, key, value, exp)
	if err != nil && !OutcomeUnknown(err) {
		return zero, err
	}
	if err != nil || (!prepared && c.mayResend()) {
		if prepared, err = c.resolve(ctx, name, key, value, err); err != nil {
			return zero, err
		}
	}
	if !prepared {
		return fn(ctx, false)
	}
	if err := ctx.Err(); err != nil {
		return zero, known(c.release(ctx, name, key, value, err))
	}
	returned := false
	defer func() {
		if !returned { // fn panicked (or called runtime.Goexit)
			_ = c.release(ctx, name, key, value, nil)
		}
	}()
	result, bodyErr := fn(ctx, true)
	returned = true
	if bodyErr != nil {
		return result, c.release(ctx, name, key, value, bodyErr)
	}
	return result, nil
}

// mayResend tells whether the go-redis client may send a command twice: any
// but a *redis.Client with MaxRetries -1 (which go-redis stores as 0). A
// ClusterClient also resends on its redirects, a Ring on its retries.
func (c *Client) mayResend() bool {
	if rc, ok := c.rdb.(*redis.Client); ok {
		return rc.Options().MaxRetries > 0
	}
	return true
}

// resolve reads key's record after a prepare whose outcome is unknown
// (prepErr) or that answered false while it may have been resent (prepErr
// nil), and tells whether the reservation is ours: a live record holding
// exactly value (see UsingPrepare). It returns an error instead when
// UsingPrepare must not run fn: the prepare's error when the record is not
// there or cannot be read, the read's error after a false.
func (c *Client) resolve(ctx context.Context, name, key string, value []byte, prepErr error) (bool, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	rec, found, err := c.GetValue(rctx, name, key)
	switch {
	case err != nil && prepErr != nil:
		return false, prepErr
	case err != nil:
		return false, err
	}
	// Live on this machine's clock: a record within the clocks' skew of its
	// expiry may be judged either way, as any reader's would.
	live := found && rec.Live(time.Now())
	switch {
	case live && bytes.Equal(rec.Value, value):
		return true, nil
	case prepErr == nil:
		return false, nil
	case live && ctx.Err() == nil:
		return false, nil // a live record of another value holds key
	default: // nothing of ours is held: known
		return false, &knownError{prepErr}
	}
}

// known marks err, returned after UsingPrepare released its reservation, as
// a known outcome; a *RollbackError stays unknown.
func known(err error) error {
	var rb *RollbackError
	if errors.As(err, &rb) {
		return err
	}
	return &knownError{err}
}

// release rolls back the reservation of key for value after cause (fn's
// error, or ctx's), on a context that ctx's cancellation does not reach,
// and returns cause, or a *RollbackError when the rollback fails.
func (c *Client) release(ctx context.Context, name, key string, value []byte, cause error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if _, err := c.RollbackIfEq(rctx, name, key, value); err != nil {
		return &RollbackError{Rollback: err, Body: cause}
	}
	return cause
}
