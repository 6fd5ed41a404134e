package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// row is one contract row: records to start from, one call, its exact
// result and the exact state of the records afterwards.
type row struct {
	name string
	// noRetention builds the store with Retention 0 instead of the plan's.
	noRetention bool
	seeds       []seed
	// call makes the one call under test; nil for rows about Get, whose
	// checks are the test.
	call func(e *env) any
	want any
	then []check
}

// seedState is what a seeded record has become when the call is made.
type seedState uint8

const (
	seedLive    seedState = iota
	seedExpired           // expired, still retained (absent with Retention 0)
	seedLapsed            // past ttlAt+Retention: must read as no record
)

type seed struct {
	ns, key, value string
	ttl            time.Duration // live seeds: EX ttl; 0 is forever
	state          seedState
}

func live(key, value string) seed { return seed{key: key, value: value} }
func liveFor(key, value string, ttl time.Duration) seed {
	return seed{key: key, value: value, ttl: ttl}
}
func expired(key, value string) seed { return seed{key: key, value: value, state: seedExpired} }
func lapsed(key, value string) seed  { return seed{key: key, value: value, state: seedLapsed} }

// in puts the seed in namespace n instead of ns.
func (s seed) in(n string) seed { s.ns = n; return s }

type checkKind uint8

const (
	checkAbsent  checkKind = iota + 1
	checkSame              // exactly the record as seeded, Live included
	checkHolds             // a live record with value and a ttlAt from ttl
	checkExpired           // an expired, retained record with value and its seeded ttlAt
)

// ttlFrom says where a check's expected ttlAt comes from.
type ttlFrom uint8

const (
	ttlForever ttlFrom = iota
	ttlNew             // the expiry the call built (e.want)
	ttlSeed            // the seeded record of the same key
)

type check struct {
	kind    checkKind
	ns, key string
	value   string
	ttl     ttlFrom
}

func absent(key string) check { return check{kind: checkAbsent, key: key} }
func same(key string) check   { return check{kind: checkSame, key: key} }
func holds(key, value string, ttl ttlFrom) check {
	return check{kind: checkHolds, key: key, value: value, ttl: ttl}
}
func expiredAs(key, value string) check {
	return check{kind: checkExpired, key: key, value: value, ttl: ttlSeed}
}

// in checks key in namespace n instead of ns.
func (c check) in(n string) check { c.ns = n; return c }

func ifeq(v string) backend.Cond { return backend.IfEq([]byte(v)) }

var always = backend.Cond{}

// runRows runs each row as a subtest on a fresh store.
func runRows(t *testing.T, newStore NewStore, rows []row) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			retention := tableRetention
			if r.noRetention {
				retention = 0
			}
			runRow(t, newEnv(t, newStore, retention), r, retention)
		})
	}
}

// seeded is a seeded record as the store reported it after seeding.
type seeded struct {
	rec  backend.Record
	ok   bool
	want ttlWant
}

type nsKey struct{ ns, key string }

func orNS(n string) string {
	if n == "" {
		return ns
	}
	return n
}

// runRow seeds the store in three phases (lapsed, expired, live) so that one
// move of the clock per phase makes every seed what it should be, checks that
// each seed reads as the contract says, then makes the call and checks.
func runRow(t *testing.T, e *env, r row, retention time.Duration) {
	t.Helper()
	seeds := map[nsKey]*seeded{}
	plant := func(state seedState, ttl time.Duration) {
		any := false
		for _, s := range r.seeds {
			if s.state != state {
				continue
			}
			any = true
			exp, want := forever, ttlWant{}
			switch {
			case state != seedLive:
				exp = e.after(e.plan.ttl)
				want = e.want
			case s.ttl > 0:
				exp = e.after(s.ttl)
				want = e.want
			}
			require.True(t, e.prepare(orNS(s.ns), s.key, s.value, exp), "seed %q", s.key)
			seeds[nsKey{orNS(s.ns), s.key}] = &seeded{want: want}
		}
		if any && ttl > 0 {
			e.advance(ttl)
		}
	}
	plant(seedLapsed, retention+e.plan.expire)
	plant(seedExpired, e.plan.expire)
	plant(seedLive, 0)
	e.want = ttlWant{}

	for _, s := range r.seeds {
		k := nsKey{orNS(s.ns), s.key}
		sd := seeds[k]
		switch {
		case s.state == seedLapsed, s.state == seedExpired && retention == 0:
			e.requireAbsent(k.ns, k.key)
		default:
			sd.rec = e.requireRecord(k.ns, k.key, s.value, sd.want, s.state == seedLive)
			sd.ok = true
		}
	}

	if r.call != nil {
		got := r.call(e)
		require.Equal(t, r.want, got, "result")
	}

	for _, c := range r.then {
		k := nsKey{orNS(c.ns), c.key}
		switch c.kind {
		case checkAbsent:
			e.requireAbsent(k.ns, k.key)
		case checkSame:
			sd := seeds[k]
			require.NotNil(t, sd, "check same(%q): not seeded", c.key)
			if !sd.ok {
				e.requireAbsent(k.ns, k.key)
				continue
			}
			rec, ok := e.get(k.ns, k.key)
			require.True(t, ok, "Get(%q, %q): no record, want it unchanged", k.ns, k.key)
			require.Equal(t, sd.rec, rec, "Get(%q, %q): want it unchanged", k.ns, k.key)
		case checkHolds, checkExpired:
			var want ttlWant
			switch c.ttl {
			case ttlNew:
				want = e.want
			case ttlSeed:
				sd := seeds[k]
				require.NotNil(t, sd, "check %q: ttlAt of a key not seeded", c.key)
				want = ttlWant{at: sd.rec.TTLAt, exact: true}
			}
			e.requireRecord(k.ns, k.key, c.value, want, c.kind == checkHolds)
		}
	}
}
