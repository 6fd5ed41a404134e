package stats

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/commands"
)

// TestFrameOutcome: the outcome of each kind of reply the connection
// commands write, other than an error.
func TestFrameOutcome(t *testing.T) {
	for in, want := range map[string]Outcome{
		":1\r\n": Outcome1, ":0\r\n": Outcome0, ":10\r\n": OutcomeOK, "$-1\r\n": OutcomeNil, "*-1\r\n": OutcomeNil,
		"_\r\n": OutcomeNil, "+OK\r\n": OutcomeOK, "$1\r\nx\r\n": OutcomeOK, "": OutcomeOK,
	} {
		require.Equal(t, want, FrameOutcome([]byte(in)), "%q", in)
	}
}

// TestErrorOutcome: an error's outcome and prefix come from its code.
func TestErrorOutcome(t *testing.T) {
	for code, want := range map[commands.ErrCode]Outcome{
		commands.ErrSyntax: OutcomeError, commands.ErrUnavailable: OutcomeUnavailable,
		commands.ErrMismatch: OutcomeMismatch, commands.ErrNoAuth: OutcomeError, commands.ErrWrongPass: OutcomeError,
		commands.ErrExecAbort: OutcomeError,
	} {
		o, got := ErrorOutcome(code)
		require.Equal(t, want, o, "%v", code)
		require.Equal(t, code, got)
	}
	o, got := ErrorOutcome(commands.NoError)
	require.Equal(t, OutcomeError, o, "an Error reply without a code is an ERR")
	require.Equal(t, commands.PrefixERR, got.Prefix())

	for r, want := range map[*commands.Reply]Outcome{
		{Kind: commands.Int, Int: 1}: Outcome1, {Kind: commands.Int}: Outcome0, {Kind: commands.Int, Int: 7}: OutcomeOK,
		{Kind: commands.Nil}: OutcomeNil, {Kind: commands.NilArray}: OutcomeNil, {Kind: commands.Bulk}: OutcomeOK,
	} {
		o, code := Classify(r)
		require.Equal(t, want, o)
		require.Equal(t, commands.NoError, code)
	}
	r := commands.ErrUnavailable.Replyf("down")
	o, code := Classify(&r)
	require.Equal(t, OutcomeUnavailable, o)
	require.Equal(t, commands.ErrUnavailable, code)
}

// TestSnapshot: what the loops count is summed, errors by prefix, every
// command listed whether used or not.
func TestSnapshot(t *testing.T) {
	s := New([]string{"ping"})
	a, b := s.ForLoop("a"), s.ForLoop("b")
	require.Same(t, a, s.ForLoop("a"))
	ping := s.Table.Index([]byte("PING"))
	a.Record(ping, OutcomeOK, commands.NoError, 3*time.Microsecond)
	b.RecordN(ping, OutcomeOK, 2, 40e3)
	b.Record(s.Table.Index([]byte("nope")), OutcomeError, commands.ErrUnknownCommand, time.Microsecond)
	a.CountError(commands.ErrWrongPass)
	gets := make([][][]byte, 16)
	for i := range gets {
		gets[i] = [][]byte{[]byte("PK.GET"), []byte("ns"), []byte("k")}
	}
	a.StoreCall(gets, 16, time.Millisecond)
	b.StoreCall([][][]byte{gets[0], {[]byte("pk.prepare"), []byte("ns"), []byte("k"), []byte("v")}}, 2, 2*time.Millisecond)
	b.StoreCall([][][]byte{{[]byte("pk.rollback"), []byte("ns"), []byte("k")}}, 1, 3*time.Millisecond)

	snap := s.Snapshot()
	byName := map[string]CommandStats{}
	for _, cs := range snap.Commands {
		byName[cs.Name] = cs
	}
	require.Contains(t, byName, "pk.prepare")
	require.Equal(t, uint64(3), byName["ping"].Calls())
	require.Equal(t, uint64(3), byName["ping"].Latency.Count())
	require.Equal(t, uint64(3e3+2*40e3), byName["ping"].Latency.Sum)
	require.Equal(t, uint64(1), byName["unknown"].Outcomes[OutcomeError])
	require.Equal(t, map[string]uint64{"ERR": 1, "WRONGPASS": 1}, snap.Errors)
	require.Equal(t, uint64(3), snap.BatchSize.Count())
	require.Equal(t, uint64(19), snap.BatchSize.Sum)
	// Store calls by op: the commands' shared name without "pk.", or mixed.
	byOp := map[string]uint64{}
	for i, op := range snap.BackendOps {
		if n := snap.BackendLatency[i].Count(); n > 0 {
			byOp[op] = snap.BackendLatency[i].Sum
		}
	}
	require.Equal(t, map[string]uint64{"get": 1e6, "mixed": 2e6, "rollback": 3e6}, byOp)
	require.Equal(t, len(snap.BackendOps), len(snap.BackendLatency))
}

// BenchmarkStoreCall: the cost of counting one store call by op, for a
// call of one command and of a pipeline of 16 of one kind (the op is told
// by one lookup and a comparison of each command's name with the first's).
func BenchmarkStoreCall(b *testing.B) {
	s := New([]string{"ping"})
	l := s.ForLoop(nil)
	for _, n := range []int{1, 16} {
		cmds := make([][][]byte, n)
		for i := range cmds {
			cmds[i] = [][]byte{[]byte("PK.PREPARE"), []byte("ns"), []byte("k"), []byte("v")}
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l.StoreCall(cmds, n, time.Millisecond)
			}
		})
	}
}
