package client

import (
	"context"
	"time"
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
//   - the prepare fails (ErrUnavailable, a connection error, ctx done): that
//     error, and fn is not run.
//
// Context: the prepare's reply is waited for even when ctx is cancelled
// meanwhile (go-redis bounds the wait with its ReadTimeout), so that
// UsingPrepare knows whether it holds a reservation; the other methods
// return at once instead, leaving the outcome unknown. The rollback is sent
// on context.WithoutCancel(ctx) bounded by 5 s, so a fn that failed because
// ctx was cancelled still releases the reservation. When ctx is done after
// the prepare succeeded and before fn starts, fn is not run, the reservation
// is rolled back as above and ctx.Err() is returned (in a *RollbackError if
// the rollback fails). When go-redis loses the prepare's reply (a connection
// error, or a read timeout from ctx's deadline with
// Options.ContextTimeoutEnabled), the outcome is unknown: the sidecar may
// have reserved key. UsingPrepare returns that error, does not run fn, and
// does not roll back (the record may be one the same value held before).
// Look with GetValue before retrying, as after ErrUnavailable.
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
	if err != nil {
		return zero, err
	}
	if !prepared {
		return fn(ctx, false)
	}
	if err := ctx.Err(); err != nil {
		return zero, c.release(ctx, name, key, value, err)
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
