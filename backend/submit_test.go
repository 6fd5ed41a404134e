package backend

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSubmissionLateDropsFinish: the deadline answers a watched
// submission whose store is silent (Late, every op failed), and the
// store's Finish after that runs Done only as Dropped (no answer: the
// server counts the submission as no longer at the store, maxAtStore).
func TestSubmissionLateDropsFinish(t *testing.T) {
	hows := make(chan Completion, 2)
	s := &Submission{
		Ops:     []Op{{Kind: OpGet, NS: "ns", Key: []byte("k")}},
		Res:     make([]Result, 1),
		Timeout: 20 * time.Millisecond,
		Done:    func(_ *Submission, how Completion) { hows <- how },
	}
	s.Watch()
	require.Equal(t, Late, <-hows)
	require.ErrorContains(t, s.LateErr, "no answer within 20ms")
	require.NoError(t, s.Res[0].Err, "the deadline leaves Res to the store")
	require.True(t, s.Expired())
	s.Finish(Elsewhere)
	require.Equal(t, Dropped, <-hows, "the store's Finish after Late")
	require.Empty(t, hows)
}

// TestSubmissionAgain: a submission finished by its store is no longer
// watched, and can be submitted again to a store that finishes at once
// (no watch): Finish then runs Done. Before, the claimed watch of the
// first round dropped every later Finish.
func TestSubmissionAgain(t *testing.T) {
	var hows []Completion
	s := &Submission{Timeout: time.Hour, Done: func(_ *Submission, how Completion) { hows = append(hows, how) }}
	s.Watch()
	s.Finish(Elsewhere)
	s.Finish(AtOnce) // submitted again, unwatched
	require.Equal(t, []Completion{Elsewhere, AtOnce}, hows)
	require.False(t, s.Expired())
}

// TestSubmissionNoTimeout: a Timeout of zero is no deadline: Watch arms
// nothing, and Context has no deadline.
func TestSubmissionNoTimeout(t *testing.T) {
	var hows []Completion
	s := &Submission{Done: func(_ *Submission, how Completion) { hows = append(hows, how) }}
	s.Watch()
	ctx, cancel := s.Context()
	defer cancel()
	_, has := ctx.Deadline()
	require.False(t, has)
	require.NoError(t, ctx.Err())
	s.Finish(Elsewhere)
	require.Equal(t, []Completion{Elsewhere}, hows)
}
