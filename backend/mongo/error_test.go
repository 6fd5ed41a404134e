package mongo

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// The sidecar writes the error after -UNAVAILABLE: one line, whatever the
// driver's message holds.
func TestErrorIsOneLine(t *testing.T) {
	cause := errors.New("server said\r\n  no")
	err := wrap("move", errors.Join(cause, errors.New("undo: refused\n")))
	require.EqualError(t, err, "mongo: move: server said; no; undo: refused")
	require.ErrorIs(t, err, cause)
}
