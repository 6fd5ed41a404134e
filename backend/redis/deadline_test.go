package redis

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDeadlines(t *testing.T) {
	d := deadlines{timeout: time.Second}

	// Calls that cannot be cancelled share a deadline at least the timeout
	// away, at most timeout+granule.
	before := time.Now()
	a, cancel := d.bound(context.Background())
	cancel()
	b, cancel := d.bound(context.WithoutCancel(t.Context()))
	cancel()
	after := time.Now()
	dl, ok := a.Deadline()
	require.True(t, ok)
	// a was made between before and after: its deadline is at least the
	// timeout after before, at most timeout+granule after after.
	require.False(t, dl.Before(before.Add(time.Second)), "deadline %s is less than the timeout away", dl)
	require.False(t, dl.After(after.Add(time.Second+granule)), "deadline %s is too far", dl)
	if after.Sub(before) < granule/2 {
		require.True(t, a == b, "calls within a granule share one context")
	}
	require.NoError(t, a.Err())

	// A later call gets a context of its own.
	time.Sleep(granule)
	c, cancel := d.bound(context.Background())
	cancel()
	require.False(t, a == c)

	// A cancellable context keeps its cancellation.
	parent, cancelParent := context.WithCancel(context.Background())
	e, cancel := d.bound(parent)
	defer cancel()
	cancelParent()
	<-e.Done()
	require.ErrorIs(t, e.Err(), context.Canceled)
}
