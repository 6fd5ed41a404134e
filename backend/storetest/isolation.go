package storetest

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// A slot is one (namespace, key) pair.
type slot struct{ ns, key string }

// distinctSlots are sets of slots that a store must keep apart although a
// careless encoding of (namespace, key) would merge them. Namespaces are
// only ever what the contract allows (1 to 64 of A-Z a-z 0-9 _ . -), so a
// store may use a separator outside that set.
var distinctSlots = []struct {
	name  string
	slots []slot
}{
	{"same key in two namespaces", []slot{{"users", "k"}, {"skus", "k"}}},
	{"namespaces are case-sensitive", []slot{{"ns", "k"}, {"NS", "k"}, {"Ns", "k"}}},
	{"keys are case-sensitive", []slot{{ns, "k"}, {ns, "K"}}},
	{"concatenation without a separator", []slot{{"a", "bc"}, {"ab", "c"}, {"abc", "c"}}},
	{"separator from the namespace alphabet", []slot{
		{"a", "b.c"}, {"a.b", "c"}, {"a", "b_c"}, {"a_b", "c"}, {"a", "b-c"}, {"a-b", "c"},
	}},
	{"separator from outside it", []slot{{"a", "b:c"}, {"a", ":b:c"}, {"a", "b\x00c"}, {"ab", "\x00c"}}},
	{"keys that prefix each other", []slot{{ns, "k"}, {ns, "kk"}, {ns, "k\x00"}, {ns, "k\x00\x00"}, {ns, "kkk"}}},
	{"length-prefix traps", []slot{{"a", "\x01b"}, {"ab", "\x01"}, {"b", "\x01a"}, {"a", "\x02ab"}}},
	{"binary keys", []slot{
		{ns, "\x00"}, {ns, "\x00\x00"}, {ns, "\r\n"}, {ns, "\r\n\r\n"}, {ns, "\xff\xfe"}, {ns, "\xfe\xff"},
		{ns, " "}, {ns, "*1\r\n$4\r\nPING\r\n"}, {ns, "{tag}"}, {ns, "$"}, {ns, "a\\b"}, {ns, "é"},
	}},
}

// testDistinctSlots reserves every slot of a set with its own value, then
// checks each holds its own value and that releasing one leaves the others.
func testDistinctSlots(t *testing.T, newStore NewStore) {
	for _, tc := range distinctSlots {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, newStore, tableRetention)
			slots := tc.slots
			if e.h.TextKeys != "" {
				slots = nil
				for _, s := range tc.slots {
					if len(e.textKeys([]string{s.key})) == 1 {
						slots = append(slots, s)
					}
				}
			}
			value := func(i int) string { return string(rune('A'+i)) + "\x00" + slots[i].key }
			for i, s := range slots {
				require.True(t, e.prepare(s.ns, s.key, value(i), forever), "PREPARE %q %q", s.ns, s.key)
			}
			for i, s := range slots {
				require.False(t, e.prepare(s.ns, s.key, "again", forever), "PREPARE %q %q twice", s.ns, s.key)
				e.requireRecord(s.ns, s.key, value(i), ttlWant{}, true)
			}
			first := slots[0]
			require.True(t, e.rollback(first.ns, first.key, ifeq(value(0))))
			e.requireAbsent(first.ns, first.key)
			for i, s := range slots[1:] {
				e.requireRecord(s.ns, s.key, value(i+1), ttlWant{}, true)
			}
		})
	}
}

// testBinaryValues round-trips values a text protocol or a string type would
// mangle, through every call that stores a value.
func testBinaryValues(t *testing.T, newStore NewStore) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	big := bytes.Repeat([]byte("0123456789abcdef\x00\r\n\xff"), 65536/20+1)[:65536]
	values := []struct{ name, value string }{
		{"empty", ""},
		{"NUL", "\x00"},
		{"CRLF", "a\r\nb\r\n"},
		{"invalid UTF-8", "\xff\xfe\xc3\x28"},
		{"every byte", string(all)},
		{"64 KiB", string(big)},
	}
	for _, tc := range values {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, newStore, tableRetention)
			key := "k" + tc.value[:min(len(tc.value), 300)]
			if e.h.TextKeys != "" && !utf8.ValidString(key) {
				key = "k " + tc.name // the values are the case here, not the keys
			}
			forever := ttlWant{}

			require.True(t, e.prepare(ns, key, tc.value, backend.Expiry{}))
			e.requireRecord(ns, key, tc.value, forever, true)

			require.True(t, e.reprepare(ns, key, tc.value+"2", ifeq(tc.value), keepTTL))
			e.requireRecord(ns, key, tc.value+"2", forever, true)

			require.Equal(t, backend.Moved, e.move(ns, key+"m", tc.value, key, tc.value+"2", backend.Expiry{}))
			e.requireRecord(ns, key+"m", tc.value, forever, true)

			require.False(t, e.rollback(ns, key+"m", ifeq(tc.value+"x")))
			require.True(t, e.rollback(ns, key+"m", ifeq(tc.value)))
			e.requireAbsent(ns, key+"m")
		})
	}
}

// testLongKey checks a key of the default max-key-bytes.
func testLongKey(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	high := byte(0xff)
	if e.h.TextKeys != "" {
		high = 0x7f // every prefix of the key must be UTF-8 too
	}
	long := string(bytes.Repeat([]byte{high, 'k', 0}, 1024/3+1)[:1024])
	require.True(t, e.prepare(ns, long, "v", forever))
	e.requireAbsent(ns, long[:1023])
	e.requireRecord(ns, long, "v", ttlWant{}, true)
}

// testArgumentsCopied checks that a store keeps copies of its arguments:
// the sidecar passes slices of its read buffer and reuses them for the next
// command.
func testArgumentsCopied(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	s, ctx := e.calls, e.ctx
	scribble := func(bs ...[]byte) {
		for _, b := range bs {
			for i := range b {
				b[i] = '#'
			}
		}
	}

	key, value := []byte("k1"), []byte("v1")
	ok, err := s.Prepare(ctx, ns, key, value, backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok)
	scribble(key, value)
	e.requireRecord(ns, "k1", "v1", ttlWant{}, true)
	e.requireAbsent(ns, "##")

	key, value, cur := []byte("k1"), []byte("v2"), []byte("v1")
	ok, err = s.Reprepare(ctx, ns, key, value, backend.IfEq(cur), backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok)
	scribble(key, value, cur)
	e.requireRecord(ns, "k1", "v2", ttlWant{}, true)

	newKey, newValue, oldKey, oldValue := []byte("k2"), []byte("v3"), []byte("k1"), []byte("v2")
	res, err := s.Move(ctx, ns, newKey, newValue, oldKey, oldValue, backend.Expiry{})
	require.NoError(t, err)
	require.Equal(t, backend.Moved, res)
	scribble(newKey, newValue, oldKey, oldValue)
	e.requireRecord(ns, "k2", "v3", ttlWant{}, true)
	e.requireAbsent(ns, "k1")
	e.requireAbsent(ns, "##")

	rec, ok, err := s.Get(ctx, ns, []byte("k2"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []byte("v3"), rec.Value)
}

func testPing(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	require.NoError(t, e.h.Store.Ping(e.ctx))
}
