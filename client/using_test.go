package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/client"
)

// TestUsingPrepare runs each case of UsingPrepare (clients.md) against the
// real sidecar, on every backend, in RESP2 and RESP3. Case 5 (-UNAVAILABLE
// on the prepare) is in TestUnavailable. Where a real sidecar cannot be made
// to fail or be cancelled between two commands on demand (a failing
// rollback, a cancellation right after the prepare's reply), a go-redis hook
// does it: it sends the PK.ROLLBACK to a sidecar whose backend is down, so
// the -UNAVAILABLE is a real one, or cancels the context.
func TestUsingPrepare(t *testing.T) {
	down := start(t, "--backend", "redis://"+closedPort(t))
	eachTarget(t, func(t *testing.T, tg target) {
		pk, ns := client.New(tg.rdb), uniqueNS(t)
		v := []byte(`{"userId":"42"}`)
		errBody := errors.New("the body failed")
		downRDB := down.client(t, 3, &recorder{})
		prepare := func(key string, exp ...string) []string {
			return append([]string{"PK.PREPARE", ns, key, string(v)}, exp...)
		}
		rollbackIfEq := func(key string) []string { return []string{"PK.ROLLBACK", ns, key, "IFEQ", string(v)} }

		t.Run("1 prepared false: body runs with false, nothing rolled back, its error as is", func(t *testing.T) {
			_, err := pk.Prepare(testContext(t), ns, "taken", []byte("other"))
			require.NoError(t, err)
			tg.rec.take()
			var calls []bool
			err = pk.UsingPrepare(testContext(t), ns, "taken", v, func(_ context.Context, prepared bool) error {
				calls = append(calls, prepared)
				return errBody
			})
			require.True(t, err == errBody, "got %v", err)
			require.Equal(t, []bool{false}, calls)
			require.Equal(t, [][]string{prepare("taken")}, tg.rec.take())
			requireRecord(t, pk, ns, "taken", "other", time.Time{})

			got, err := client.UsingPrepareResult(testContext(t), pk, ns, "taken", v, func(_ context.Context, prepared bool) (string, error) {
				return fmt.Sprint("prepared=", prepared), nil
			})
			require.NoError(t, err)
			require.Equal(t, "prepared=false", got)
		})

		t.Run("2 prepared true, body succeeds: nothing rolled back, its result", func(t *testing.T) {
			at := pxat(time.Hour)
			tg.rec.take()
			got, err := client.UsingPrepareResult(testContext(t), pk, ns, "ok", v, func(ctx context.Context, prepared bool) (int, error) {
				require.True(t, prepared)
				requireRecord(t, pk, ns, "ok", string(v), at) // held while the body runs
				return 42, nil
			}, client.ExpireAt(at))
			require.NoError(t, err)
			require.Equal(t, 42, got)
			require.Equal(t, [][]string{
				prepare("ok", "PXAT", fmt.Sprint(at.UnixMilli())),
				{"PK.GETVALUE", ns, "ok"},
			}, tg.rec.take())
			requireRecord(t, pk, ns, "ok", string(v), at)
		})

		t.Run("3 prepared true, body fails: ROLLBACK IFEQ, then the body's error", func(t *testing.T) {
			tg.rec.take()
			got, err := client.UsingPrepareResult(testContext(t), pk, ns, "fails", v, func(context.Context, bool) (string, error) {
				return "partial", errBody
			})
			require.True(t, err == errBody, "got %v", err)
			require.Equal(t, "partial", got)
			require.Equal(t, [][]string{prepare("fails"), rollbackIfEq("fails")}, tg.rec.take())
			requireNoRecord(t, pk, ns, "fails")
		})

		t.Run("3 ... the record was replaced meanwhile: the rollback's :0 is no error, the other kept", func(t *testing.T) {
			err := pk.UsingPrepare(testContext(t), ns, "replaced", v, func(ctx context.Context, prepared bool) error {
				ok, err := pk.Reprepare(ctx, ns, "replaced", []byte("theirs"))
				require.NoError(t, err)
				require.True(t, ok)
				return errBody
			})
			require.True(t, err == errBody, "got %v", err)
			requireRecord(t, pk, ns, "replaced", "theirs", time.Time{})
		})

		t.Run("4 the rollback fails: its error, with the body's", func(t *testing.T) {
			tg.rec.setAround(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
				if cmd.Name() == "pk.rollback" {
					tg.rec.note(cmd)
					return downRDB.Process(ctx, cmd) // a real -UNAVAILABLE
				}
				return next(ctx, cmd)
			})
			defer tg.rec.setAround(nil)
			tg.rec.take()
			err := pk.UsingPrepare(testContext(t), ns, "stuck", v, func(context.Context, bool) error { return errBody })
			var rbErr *client.RollbackError
			require.ErrorAs(t, err, &rbErr)
			require.ErrorIs(t, rbErr.Rollback, client.ErrUnavailable)
			require.True(t, rbErr.Body == errBody)
			require.ErrorIs(t, err, client.ErrUnavailable)
			require.ErrorIs(t, err, errBody)
			require.Regexp(t, `^prepkey: rolling back after the body failed: prepkey: PK.ROLLBACK: UNAVAILABLE .* \(the body's error: the body failed\)$`, err.Error())
			require.Equal(t, [][]string{prepare("stuck"), rollbackIfEq("stuck")}, tg.rec.take())
			tg.rec.setAround(nil)
			requireRecord(t, pk, ns, "stuck", string(v), time.Time{}) // still held: the caller's to resolve
		})

		t.Run("racing for one key: one body runs prepared, the others with false", func(t *testing.T) {
			const racers = 8
			losers := make(chan int, racers)
			var wg sync.WaitGroup
			winners := make(chan int, racers)
			for i := range racers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := pk.UsingPrepare(testContext(t), ns, "raced", []byte(fmt.Sprint(i)), func(ctx context.Context, prepared bool) error {
						if !prepared {
							losers <- i
							return nil
						}
						winners <- i
						// Hold the reservation until every other racer was
						// answered false.
						for range racers - 1 {
							select {
							case <-losers:
							case <-time.After(10 * time.Second): // a second winner: never answered false
								return errors.New("not every other racer was answered false")
							}
						}
						return nil
					})
					require.NoError(t, err)
				}()
			}
			wg.Wait()
			close(winners)
			var won []int
			for i := range winners {
				won = append(won, i)
			}
			require.Len(t, won, 1)
			requireRecord(t, pk, ns, "raced", fmt.Sprint(won[0]), time.Time{})
		})

		t.Run("the body panics: rolled back, the panic goes on", func(t *testing.T) {
			tg.rec.take()
			require.PanicsWithValue(t, "boom", func() {
				_ = pk.UsingPrepare(testContext(t), ns, "panics", v, func(context.Context, bool) error { panic("boom") })
			})
			require.Equal(t, [][]string{prepare("panics"), rollbackIfEq("panics")}, tg.rec.take())
			requireNoRecord(t, pk, ns, "panics")
		})

		t.Run("ctx cancelled between the prepare and the body: body not run, rolled back, ctx's error", func(t *testing.T) {
			ctx, cancel := context.WithCancel(testContext(t))
			defer cancel()
			tg.rec.setAround(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
				err := next(ctx, cmd)
				if cmd.Name() == "pk.prepare" {
					cancel() // after the reply came: prepared, then cancelled
				}
				return err
			})
			defer tg.rec.setAround(nil)
			tg.rec.take()
			ran := false
			err := pk.UsingPrepare(ctx, ns, "cancelled", v, func(context.Context, bool) error { ran = true; return nil })
			require.ErrorIs(t, err, context.Canceled)
			require.False(t, client.OutcomeUnknown(err), "resolved: rolled back")
			require.False(t, ran, "the body ran")
			// The rollback went out although ctx was done.
			require.Equal(t, [][]string{prepare("cancelled"), rollbackIfEq("cancelled")}, tg.rec.take())
			tg.rec.setAround(nil)
			requireNoRecord(t, pk, ns, "cancelled")
		})

		t.Run("ctx cancelled between the prepare and the body, the rollback fails", func(t *testing.T) {
			ctx, cancel := context.WithCancel(testContext(t))
			defer cancel()
			tg.rec.setAround(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
				switch cmd.Name() {
				case "pk.prepare":
					err := next(ctx, cmd)
					cancel()
					return err
				case "pk.rollback":
					require.NoError(t, ctx.Err(), "the rollback's context is detached from the cancellation")
					_, bounded := ctx.Deadline()
					require.True(t, bounded, "the rollback's context has a deadline")
					tg.rec.note(cmd)
					return downRDB.Process(ctx, cmd)
				}
				return next(ctx, cmd)
			})
			defer tg.rec.setAround(nil)
			err := pk.UsingPrepare(ctx, ns, "cancelled-stuck", v, func(context.Context, bool) error { panic("the body ran") })
			var rbErr *client.RollbackError
			require.ErrorAs(t, err, &rbErr)
			require.ErrorIs(t, err, client.ErrUnavailable)
			require.ErrorIs(t, err, context.Canceled)
			tg.rec.setAround(nil)
			requireRecord(t, pk, ns, "cancelled-stuck", string(v), time.Time{})
		})

		t.Run("the body fails because ctx was cancelled: still rolled back", func(t *testing.T) {
			ctx, cancel := context.WithCancel(testContext(t))
			defer cancel()
			tg.rec.take()
			err := pk.UsingPrepare(ctx, ns, "body-cancelled", v, func(ctx context.Context, prepared bool) error {
				require.True(t, prepared)
				cancel()
				return ctx.Err()
			})
			require.True(t, err == context.Canceled, "got %v", err)
			require.Equal(t, [][]string{prepare("body-cancelled"), rollbackIfEq("body-cancelled")}, tg.rec.take())
			requireNoRecord(t, pk, ns, "body-cancelled")
		})

		t.Run("the prepare's reply lost: the record read, ours, so the body runs prepared", func(t *testing.T) {
			// As go-redis loses a reply to ctx's deadline with
			// ContextTimeoutEnabled, or to a broken connection with
			// MaxRetries -1 (TestCancelOnTheWay and TestResendSafety do it
			// for real).
			lost := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
			tg.rec.setAround(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
				err := next(ctx, cmd)
				if cmd.Name() != "pk.prepare" {
					return err
				}
				cmd.SetErr(lost) // the sidecar ran it, and the reply is lost
				return lost
			})
			defer tg.rec.setAround(nil)
			tg.rec.take()
			var calls []bool
			err := pk.UsingPrepare(testContext(t), ns, "lost", v, func(_ context.Context, prepared bool) error {
				calls = append(calls, prepared)
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, []bool{true}, calls)
			require.Equal(t, [][]string{prepare("lost"), {"PK.GETVALUE", ns, "lost"}}, tg.rec.take())
			tg.rec.setAround(nil)
			requireRecord(t, pk, ns, "lost", string(v), time.Time{})

			// Not ours (another value holds the key): prepared false. No
			// record at all: the prepare's error, a known outcome.
			tg.rec.setAround(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
				if cmd.Name() != "pk.prepare" {
					return next(ctx, cmd)
				}
				tg.rec.note(cmd)
				cmd.SetErr(lost) // lost on the way: never ran
				return lost
			})
			calls = nil
			err = pk.UsingPrepare(testContext(t), ns, "lost", []byte("mine"), func(_ context.Context, prepared bool) error {
				calls = append(calls, prepared)
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, []bool{false}, calls)
			err = pk.UsingPrepare(testContext(t), ns, "never", v, func(context.Context, bool) error { panic("the body ran") })
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			require.EqualError(t, err, "prepkey: PK.PREPARE: read tcp: i/o timeout")
			require.False(t, client.OutcomeUnknown(err), "resolved: no record")
			requireNoRecord(t, pk, ns, "never")
		})
	})
}
