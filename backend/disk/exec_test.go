package disk

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestExecAllOrNothing: unlike a batch, a transaction block that meets a
// failing op (a record this package did not write) fails whole, and none
// of its writes, before or after that op, reaches the disk.
func TestExecAllOrNothing(t *testing.T) {
	s := openTest(t, t.TempDir(), newFakeClock(), time.Hour)
	require.NoError(t, s.db.Set(recordKey("ns", []byte("bad")), []byte{1, 2, 3}, nil))
	ops := []backend.Op{opPrepare("a", "v", forever()), opGet("bad"), opPrepare("c", "v", forever())}
	err := s.Run(context.Background(), ops, make([]backend.Result, len(ops)), backend.Isolated)
	require.ErrorIs(t, err, errCorrupt)
	require.Equal(t, []backend.Result{notFound, notFound}, runAlone(context.Background(), s, []backend.Op{opGet("a"), opGet("c")}))

	// A closed store refuses the block.
	require.NoError(t, s.Close())
	err = s.Run(context.Background(), ops[:1], make([]backend.Result, 1), backend.Isolated)
	require.ErrorIs(t, err, ErrClosed)
}
