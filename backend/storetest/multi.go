package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

func entry(ns, key, value string) backend.Entry {
	return backend.Entry{NS: ns, Key: []byte(key), Value: []byte(value)}
}

func (e *env) mprepare(exp backend.Expiry, entries ...backend.Entry) bool {
	e.t.Helper()
	ok, err := e.calls.MPrepare(e.ctx, entries, exp)
	require.NoError(e.t, err, "MPrepare(%v)", entries)
	return ok
}

func mprepareRows() []row {
	three := func(exp func(e *env) backend.Expiry) func(e *env) any {
		return func(e *env) any {
			return e.mprepare(exp(e), entry(ns, "a", "va"), entry("ns2", "b", "vb"), entry(ns, "c", "vc"))
		}
	}
	noTTL := func(*env) backend.Expiry { return forever }
	inMinute := func(e *env) backend.Expiry { return e.after(time.Minute) }
	atHours := func(e *env) backend.Expiry { return e.at(5 * time.Hour) }
	return []row{
		{
			name: "absent keys in two namespaces are reserved forever",
			call: three(noTTL),
			want: true,
			then: []check{holds("a", "va", ttlForever), holds("b", "vb", ttlForever).in("ns2"), holds("c", "vc", ttlForever)},
		},
		{
			name: "EX counts from the store's clock",
			call: three(inMinute),
			want: true,
			then: []check{holds("a", "va", ttlNew), holds("b", "vb", ttlNew).in("ns2"), holds("c", "vc", ttlNew)},
		},
		{
			name: "EXAT gives every key that ttlAt",
			call: three(atHours),
			want: true,
			then: []check{holds("a", "va", ttlNew), holds("b", "vb", ttlNew).in("ns2"), holds("c", "vc", ttlNew)},
		},
		{
			name:  "first key live: nothing reserved",
			seeds: []seed{live("a", "taken")},
			call:  three(noTTL),
			want:  false,
			then:  []check{same("a"), absent("b").in("ns2"), absent("c")},
		},
		{
			name:  "last key live: nothing reserved",
			seeds: []seed{liveFor("c", "taken", time.Hour)},
			call:  three(inMinute),
			want:  false,
			then:  []check{absent("a"), absent("b").in("ns2"), same("c")},
		},
		{
			name:  "a live key in the other namespace: nothing reserved, expired records kept",
			seeds: []seed{expired("a", "old"), live("b", "taken").in("ns2")},
			call:  three(noTTL),
			want:  false,
			then:  []check{same("a"), same("b").in("ns2"), absent("c")},
		},
		{
			name:  "same key in another namespace does not count",
			seeds: []seed{live("b", "other")},
			call:  three(noTTL),
			want:  true,
			then:  []check{holds("a", "va", ttlForever), holds("b", "vb", ttlForever).in("ns2"), same("b"), holds("c", "vc", ttlForever)},
		},
		{
			name:  "expired retained and lapsed records are replaced",
			seeds: []seed{expired("a", "old"), lapsed("c", "older")},
			call:  three(atHours),
			want:  true,
			then:  []check{holds("a", "va", ttlNew), holds("b", "vb", ttlNew).in("ns2"), holds("c", "vc", ttlNew)},
		},
		{
			name:        "retention 0: expired records are replaced",
			noRetention: true,
			seeds:       []seed{expired("a", "old")},
			call:        three(noTTL),
			want:        true,
			then:        []check{holds("a", "va", ttlForever), holds("b", "vb", ttlForever).in("ns2"), holds("c", "vc", ttlForever)},
		},
		{
			name: "one key",
			call: func(e *env) any { return e.mprepare(forever, entry(ns, "a", "")) },
			want: true,
			then: []check{holds("a", "", ttlForever)},
		},
	}
}

// testMPrepareOneTTLAt: with EX every key gets the same ttlAt, to the
// millisecond, also where the store composes the command from one step
// per key.
func testMPrepareOneTTLAt(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	var entries []backend.Entry
	for i := range 8 {
		entries = append(entries, entry(fmt.Sprintf("ns%d", i%3), fmt.Sprintf("k%d", i), "v"))
	}
	require.True(t, e.mprepare(e.after(time.Hour), entries...))
	first, ok := e.get(entries[0].NS, string(entries[0].Key))
	require.True(t, ok)
	e.requireTTLAt(e.want, first.TTLAt)
	for _, en := range entries[1:] {
		rec, ok := e.get(en.NS, string(en.Key))
		require.True(t, ok, "%s %s", en.NS, en.Key)
		require.Equal(t, first.TTLAt, rec.TTLAt, "%s %s", en.NS, en.Key)
	}
}

// testMPrepareMany: 64 binary keys at once, then again with one of them
// taken by a live record: nothing of the second is left.
func testMPrepareMany(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	mk := func(round string) []backend.Entry {
		var out []backend.Entry
		for i := range 64 {
			out = append(out, entry(ns, fmt.Sprintf("%s\x00%c*[%d]\r\n%s", round, 'a'+i%26, i, e.highByte()), fmt.Sprintf("%s-%d", round, i)))
		}
		return out
	}
	first := mk("one")
	require.True(t, e.mprepare(forever, first...))
	for _, en := range first {
		e.requireRecord(ns, string(en.Key), string(en.Value), ttlWant{}, true)
	}
	second := mk("two")
	second[37] = first[37]
	second[37].Value = []byte("mine")
	require.False(t, e.mprepare(forever, second...))
	for i, en := range second {
		if i == 37 {
			e.requireRecord(ns, string(en.Key), "one-37", ttlWant{}, true)
			continue
		}
		e.requireAbsent(ns, string(en.Key))
	}
}

// testRaceMPrepare: two MPREPAREs sharing one key, each with a key of its
// own, round after round: exactly one reserves, and the loser holds
// nothing.
func testRaceMPrepare(t *testing.T, e *env) {
	const rounds = 50
	for r := range rounds {
		shared := fmt.Sprintf("shared-%d", r)
		// Own keys sort before and after the shared one, so that composed
		// stores reserve one before the shared key and one after.
		own := [2]string{fmt.Sprintf("a-%d", r), fmt.Sprintf("z-%d", r)}
		winners := Race(t, 2, func(i int) (bool, error) {
			return e.calls.MPrepare(e.ctx, []backend.Entry{
				entry(ns, own[i], RacerValue(i)), entry("ns2", shared, RacerValue(i)),
			}, backend.Expiry{})
		})
		require.Len(t, winners, 1, "round %d", r)
		w := winners[0]
		e.requireRecord(ns, own[w], RacerValue(w), ttlWant{}, true)
		e.requireRecord("ns2", shared, RacerValue(w), ttlWant{}, true)
		e.requireAbsent(ns, own[1-w])
	}
}
