package memory

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExpiryHeapAgainstSort pushes, moves and removes entries at random and
// checks, after each step, that every entry knows its slot, that each slot
// holds its entry's ttlAt, and that removing the minimum repeatedly yields
// the ttlAts in sorted order.
func TestExpiryHeapAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h expiryHeap
	var in []*entry
	check := func() {
		t.Helper()
		for i, s := range h {
			require.Equal(t, int32(i), s.en.index)
			require.Equal(t, s.en.ttlAt, s.ttlAt)
			if i > 0 {
				require.LessOrEqual(t, h[(i-1)/2].ttlAt, s.ttlAt)
			}
		}
		require.Len(t, h, len(in))
	}
	// 5,000 random steps; -short takes 500 (each step checks the whole
	// heap: the long run takes half a minute on a loaded machine).
	steps := 5000
	if testing.Short() {
		steps = 500
	}
	for step := 0; step < steps; step++ {
		switch op := rng.IntN(4); {
		case op <= 1 || len(in) == 0:
			en := newEntry("k", nil, rng.Int64N(1000))
			h.push(en)
			in = append(in, en)
		case op == 2:
			en := in[rng.IntN(len(in))]
			en.ttlAt = rng.Int64N(1000)
			h.fix(int(en.index))
		default:
			k := rng.IntN(len(in))
			en := in[k]
			require.Same(t, en, h.remove(int(en.index)))
			require.Equal(t, int32(-1), en.index)
			in = slices.Delete(in, k, k+1)
		}
		check()
	}
	want := make([]int64, len(in))
	for i, en := range in {
		want[i] = en.ttlAt
	}
	slices.Sort(want)
	got := make([]int64, 0, len(h))
	for len(h) > 0 {
		got = append(got, h.remove(0).ttlAt)
	}
	require.Equal(t, want, got)
}
