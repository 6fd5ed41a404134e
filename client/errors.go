package client

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrUnavailable is matched (errors.Is) by a -UNAVAILABLE reply: the sidecar's
// backend failed or did not answer within --backend-timeout.
//
// The outcome is unknown: the command may or may not have taken effect. It is
// never a false. Before retrying, look with GetValue: a record holding your
// value means a prepare (or a key change, an MPrepare) went through; no
// record, or another value, means it did not, or that someone else's did.
// A write retried blindly can answer false for the reservation its own first
// attempt made.
var ErrUnavailable = errors.New("prepkey: unavailable")

// ErrMismatch is matched (errors.Is) by a -MISMATCH reply: ChangeKey's old key
// has no record, or one with another value than the old value given. Nothing
// changed (the new key is not left reserved).
var ErrMismatch = errors.New("prepkey: mismatch")

// ErrInvalidArgument is matched (errors.Is) by the errors this package
// returns before sending anything, for arguments the sidecar would refuse
// whatever its configuration: an invalid namespace, an empty key, a TTL
// below one millisecond, more than one expiry, and the like. What depends on
// the sidecar's flags (--max-key-bytes, --max-value-bytes) or its clock (an
// ExpireAt already past) is left to the sidecar, whose -ERR comes back as a
// *ReplyError.
var ErrInvalidArgument = errors.New("prepkey: invalid argument")

// ReplyError is an error reply of the sidecar (-ERR ..., -UNAVAILABLE ...,
// -MISMATCH ..., -NOAUTH ...). errors.Is matches ErrUnavailable and
// ErrMismatch by the reply's prefix; errors.As reaches the go-redis error
// (redis.Error) underneath.
type ReplyError struct {
	// Command is the PK command that got the reply, e.g. "PK.PREPARE".
	Command string
	// Msg is the reply as the sidecar sent it, without the leading '-',
	// e.g. "UNAVAILABLE backend: dial tcp ...".
	Msg string

	err error
}

func (e *ReplyError) Error() string { return "prepkey: " + e.Command + ": " + e.Msg }

// Unwrap returns the go-redis error.
func (e *ReplyError) Unwrap() error { return e.err }

// Is matches ErrUnavailable and ErrMismatch by the reply's error prefix.
func (e *ReplyError) Is(target error) bool {
	switch target {
	case ErrUnavailable:
		return hasPrefix(e.Msg, "UNAVAILABLE")
	case ErrMismatch:
		return hasPrefix(e.Msg, "MISMATCH")
	}
	return false
}

// hasPrefix tells whether msg's error code (its first word) is code.
func hasPrefix(msg, code string) bool {
	return msg == code || strings.HasPrefix(msg, code+" ")
}

// RollbackError is what UsingPrepare returns when the body failed (or ctx
// was cancelled before it ran) after a successful prepare, and the rollback
// of that reservation failed too: the reservation may still be held. Rollback
// is the rollback's error (errors.Is(err, ErrUnavailable) for a -UNAVAILABLE),
// Body the body's (or ctx.Err()); Unwrap returns both, so errors.Is and
// errors.As see either.
type RollbackError struct {
	Rollback error
	Body     error
}

func (e *RollbackError) Error() string {
	return fmt.Sprintf("prepkey: rolling back after the body failed: %v (the body's error: %v)", e.Rollback, e.Body)
}

// Unwrap returns the rollback's error, then the body's.
func (e *RollbackError) Unwrap() []error { return []error{e.Rollback, e.Body} }

// invalid returns an ErrInvalidArgument for command with the reason.
func invalid(command, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidArgument, command, fmt.Sprintf(format, args...))
}

// wrap turns what go-redis returned for command into this package's error:
// a reply error into a *ReplyError; anything else (a connection error, a
// context's error) wrapped as is, its outcome unknown as well.
func wrap(command string, err error) error {
	var re redis.Error
	if errors.As(err, &re) {
		return &ReplyError{Command: command, Msg: re.Error(), err: err}
	}
	return fmt.Errorf("prepkey: %s: %w", command, err)
}
