package memory

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// hashIn is a hash in shard 0: a table holds the records of one shard,
// whose hashes share their first shardBits bits.
func hashIn(seed maphash.Seed, k string) uint64 { return hashKey(seed, []byte(k)) >> shardBits }

// requireTable checks a table's invariants: its records are in (hash,
// key) order, each at or past its home with no empty slot between, and
// each is found by its key.
func requireTable(t *testing.T, tb *table, seed maphash.Seed, want map[string]*entry) {
	t.Helper()
	n := 0
	var prev *slot
	for i := range tb.slots {
		s := &tb.slots[i]
		if s.en == nil {
			continue
		}
		n++
		require.Equal(t, hashIn(seed, s.en.key()), s.h, "slot %d: hash", i)
		home := tb.home(s.h)
		require.LessOrEqual(t, home, i, "slot %d before its home", i)
		for j := home; j < i; j++ {
			require.NotNil(t, tb.slots[j].en, "slot %d: empty slot %d between home and record", i, j)
		}
		if prev != nil {
			require.True(t, prev.h < s.h || prev.h == s.h && prev.en.key() < s.en.key(), "slot %d out of order", i)
		}
		prev = s
	}
	require.Equal(t, len(want), n)
	require.Equal(t, len(want), tb.Len())
	for k, en := range want {
		require.Same(t, en, tb.get(hashIn(seed, k), []byte(k)), "key %q", k)
	}
}

// TestTableRandom inserts and removes random keys, some of one hash (the
// seed's hash of distinct keys cannot be chosen: these are made by hand),
// against a map, checking the invariants as the table grows and shrinks.
func TestTableRandom(t *testing.T) {
	seed := maphash.MakeSeed()
	rng := rand.New(rand.NewPCG(1, 2))
	tb := newTable()
	want := map[string]*entry{}
	var keys []string
	for i := range 20000 {
		if len(keys) > 0 && rng.IntN(3) == 0 {
			j := rng.IntN(len(keys))
			k := keys[j]
			keys[j] = keys[len(keys)-1]
			keys = keys[:len(keys)-1]
			tb.remove(hashIn(seed, k), want[k])
			delete(want, k)
		} else {
			k := fmt.Sprintf("k%d", rng.IntN(1<<30))
			if want[k] != nil {
				continue
			}
			en := newEntry(k, nil, backend.Forever)
			tb.insert(hashIn(seed, k), en)
			want[k] = en
			keys = append(keys, k)
		}
		if i%997 == 0 {
			requireTable(t, tb2(tb), seed, want)
		}
	}
	requireTable(t, tb2(tb), seed, want)
	// A record not there is not removed by mistake, and lookups of absent
	// keys find nothing.
	other := newEntry("absent", nil, backend.Forever)
	tb.remove(hashIn(seed, "absent"), other)
	require.Nil(t, tb.get(hashIn(seed, "absent"), []byte("absent")))
	requireTable(t, tb2(tb), seed, want)
}

func tb2(tb table) *table { return &tb }

// TestTableSameHash: records of one hash (a collision) are kept in key
// order and each found, removed and scanned past as one position.
func TestTableSameHash(t *testing.T) {
	tb := newTable()
	const h = 0x00ff_0000_0000_0001
	ens := map[string]*entry{}
	for _, k := range []string{"c", "a", "b", "d"} {
		ens[k] = newEntry(k, nil, backend.Forever)
		tb.insert(h, ens[k])
	}
	var order []string
	for _, en := range tb.Items() {
		order = append(order, en.key())
	}
	require.Equal(t, []string{"a", "b", "c", "d"}, order)
	for k, en := range ens {
		i, ok := tb.find(h, k)
		require.True(t, ok)
		require.Same(t, en, tb.slots[i].en)
	}
	require.Equal(t, len(tb.slots), tb.after(h), "after passes every record of the hash")
	tb.remove(h, ens["b"])
	_, ok := tb.find(h, "b")
	require.False(t, ok)
	for _, k := range []string{"a", "c", "d"} {
		_, ok := tb.find(h, k)
		require.True(t, ok, k)
	}
}

// TestScanAmongOtherNamespaces: namespaces share the tables; a scan of a
// small one among many records of another returns all of its records and
// none of the other's, page after page (some pages empty), for any COUNT.
func TestScanAmongOtherNamespaces(t *testing.T) {
	s := newStore(backend.Options{}, 1<<62)
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	for i := range 5000 {
		_, err := (backend.Calls{Runner: s}).Prepare(ctx, "big", fmt.Appendf(nil, "b%d", i), []byte("vb"), backend.Expiry{})
		require.NoError(t, err)
	}
	want := map[string]bool{}
	for i := range 7 {
		k := fmt.Sprintf("s%d", i)
		_, err := (backend.Calls{Runner: s}).Prepare(ctx, "small", []byte(k), []byte("vs"), backend.Expiry{})
		require.NoError(t, err)
		want[k] = true
	}
	for _, count := range []int{1, 3, 1000} {
		got := map[string]bool{}
		var pos []byte
		pages := 0
		for {
			page, err := s.Scan(ctx, "small", pos, count)
			require.NoError(t, err)
			pages++
			require.LessOrEqual(t, len(page.Records), count+1)
			for _, r := range page.Records {
				require.Equal(t, "vs", string(r.Record.Value))
				got[string(r.Key)] = true
			}
			if page.Done {
				break
			}
			require.Len(t, page.Next, 8)
			pos = page.Next
		}
		require.Equal(t, want, got, "COUNT %d", count)
		if count == 1 {
			// A page passes over at most 10 x COUNT records: the scan
			// takes a page per ten records of the store, or more.
			require.GreaterOrEqual(t, pages, 5000/10)
		}
	}
}

// TestTableShrinks: a table gives its slots back as its records go (the
// sweep deleting a mass of expired records), down to its first size.
func TestTableShrinks(t *testing.T) {
	seed := maphash.MakeSeed()
	tb := newTable()
	want := map[string]*entry{}
	for i := range 10000 {
		k := fmt.Sprintf("k%d", i)
		want[k] = newEntry(k, nil, backend.Forever)
		tb.insert(hashIn(seed, k), want[k])
	}
	big := len(tb.slots)
	require.Greater(t, big, 10000)
	for i := range 9990 {
		k := fmt.Sprintf("k%d", i)
		tb.remove(hashIn(seed, k), want[k])
		delete(want, k)
	}
	require.Less(t, len(tb.slots), 200, "slots after all but 10 records went")
	requireTable(t, &tb, seed, want)
	for k, en := range want {
		tb.remove(hashIn(seed, k), en)
	}
	require.Equal(t, 1<<minTableBits+tableSpare, len(tb.slots))
	requireTable(t, &tb, seed, map[string]*entry{})
}
