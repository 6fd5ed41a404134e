package client

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// OutcomeUnknown tells whether err, returned by a method of this package,
// leaves the command's outcome unknown: it may or may not have taken effect
// on the sidecar, and a retry can answer false for the reservation its own
// first attempt made. Look with GetValue before retrying (UsingPrepare does
// it itself; see there).
//
// True for:
//   - -UNAVAILABLE (ErrUnavailable): the backend failed or did not answer
//     within --backend-timeout;
//   - a connection error (a *net.OpError, io.EOF, io.ErrUnexpectedEOF,
//     ECONNRESET, EPIPE) and a timeout (a net.Error whose Timeout is true,
//     go-redis's pool timeout);
//   - ctx's error (context.Canceled, context.DeadlineExceeded) once the
//     command was on its way;
//   - a *RollbackError (the rollback's outcome is unknown: the reservation
//     may still be held).
//
// False for nil, for what was refused before anything was sent
// (ErrInvalidArgument; ctx already done when the method was called; a
// closed go-redis client), for every other reply error (-ERR, -MISMATCH,
// -NOAUTH: the sidecar answered, and nothing changed), and for the errors
// UsingPrepare returns after it resolved an unknown outcome itself (it read
// the record and released what was its own: ctx's error, or the prepare's
// error when no record of ours was there).
//
// A refused dial (ECONNREFUSED) is true too, although that attempt sent
// nothing: go-redis returns the error of its last attempt only, and with
// MaxRetries (3 by default) an earlier attempt may have written the command
// before its connection broke. With MaxRetries: -1 a dial error is known
// not to have sent anything; the predicate cannot see the setting, so it
// answers the safe way.
//
// The errors fn returns through UsingPrepare are fn's own and not judged:
// OutcomeUnknown is false for them unless they wrap one of the above.
func OutcomeUnknown(err error) bool {
	if err == nil {
		return false
	}
	var known *knownError
	if errors.As(err, &known) || errors.Is(err, ErrInvalidArgument) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var rb *RollbackError
	if errors.As(err, &rb) {
		return true
	}
	var re *ReplyError
	if errors.As(err, &re) {
		return errors.Is(re, ErrUnavailable)
	}
	var netErr net.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, net.ErrClosed), errors.As(err, &netErr):
		return true
	}
	// go-redis's pool timeout ("redis: connection pool timeout") is not a
	// net.Error in every version: matched by its exported value.
	return errors.Is(err, redis.ErrPoolTimeout)
}

// knownError is an error whose outcome is known although its cause alone
// would not say so: ctx's error when ctx was done before the command was
// sent (nothing happened), and the errors UsingPrepare returns after it
// resolved the prepare (nothing of its own is held). OutcomeUnknown is false
// for it; errors.Is and errors.As see the cause.
type knownError struct{ err error }

func (e *knownError) Error() string { return e.err.Error() }
func (e *knownError) Unwrap() error { return e.err }
