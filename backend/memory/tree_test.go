package memory

import (
	"context"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestScanSkipsNamespaceOfSameHash: a namespace is one range of a shard's
// tree, by a 32-bit hash of its name; another namespace whose name has the
// same hash shares that range, and a scan must skip its records. A real
// collision cannot be chosen (the seed is random), so one record of "b" is
// put in "a"'s range by hand.
func TestScanSkipsNamespaceOfSameHash(t *testing.T) {
	s := newStore(backend.Options{}, 1<<62)
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	for _, k := range []string{"k1", "k2", "k3"} {
		ok, err := s.Prepare(ctx, "a", []byte(k), []byte("va"), backend.Expiry{})
		require.NoError(t, err)
		require.True(t, ok)
	}
	sh := &s.shards[0]
	k := mapKey(nil, "b", []byte("intruder"))
	en := &entry{kv: packKV(string(k), []byte("vb")), klen: uint32(len(k)), index: -1}
	prefixA := string(mapKey(nil, "a", nil))
	for _, h := range []uint64{sh.recs.nsOrder(prefixA), sh.recs.nsOrder(prefixA) | 1<<31} {
		sh.recs.t.Set(item{h: h, en: en})
	}
	for _, count := range []int{1, 10} {
		var keys []string
		var pos []byte
		for {
			page, err := s.Scan(ctx, "a", pos, count)
			require.NoError(t, err)
			for _, r := range page.Records {
				keys = append(keys, string(r.Key))
				require.Equal(t, "va", string(r.Record.Value))
			}
			if page.Done {
				break
			}
			pos = page.Next
		}
		require.ElementsMatch(t, []string{"k1", "k2", "k3"}, keys, "COUNT %d", count)
	}
}

// TestTreeOrder: a record's order puts its namespace's hash above its
// key's, and is the same whether computed from the map key or from the
// namespace's prefix.
func TestTreeOrder(t *testing.T) {
	s := newStore(backend.Options{}, 1<<62)
	t.Cleanup(func() { _ = s.Close() })
	tr := &s.shards[0].recs
	for _, ns := range []string{"", "a", "username", string(make([]byte, 300))} {
		prefix := mapKey(nil, ns, nil)
		for _, key := range []string{"", "k", "user-00000000001"} {
			o := tr.order(mapKey(nil, ns, []byte(key)))
			require.Equal(t, tr.nsOrder(unsafe.String(unsafe.SliceData(prefix), len(prefix))), o&^keyBits, "ns %q key %q", ns, key)
		}
	}
}
