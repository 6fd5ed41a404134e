package storetest

import (
	"time"

	"github.com/prepkey/prepkey/backend"
)

func prepareRows() []row {
	return []row{
		{
			name: "absent key is reserved forever",
			call: func(e *env) any { return e.prepare(ns, "k", "v", forever) },
			want: true,
			then: []check{holds("k", "v", ttlForever)},
		},
		{
			name: "absent key with EX counts from the store's clock",
			call: func(e *env) any { return e.prepare(ns, "k", "v", e.after(time.Minute)) },
			want: true,
			then: []check{holds("k", "v", ttlNew)},
		},
		{
			name: "absent key with EXAT gets that ttlAt",
			call: func(e *env) any { return e.prepare(ns, "k", "v", e.at(time.Hour)) },
			want: true,
			then: []check{holds("k", "v", ttlNew)},
		},
		{
			name:  "live record with the same value is kept",
			seeds: []seed{live("k", "v")},
			call:  func(e *env) any { return e.prepare(ns, "k", "v", forever) },
			want:  false,
			then:  []check{same("k")},
		},
		{
			name:  "live record with another value is kept",
			seeds: []seed{live("k", "old")},
			call:  func(e *env) any { return e.prepare(ns, "k", "new", e.after(time.Minute)) },
			want:  false,
			then:  []check{same("k")},
		},
		{
			name:  "live record with a TTL is kept",
			seeds: []seed{liveFor("k", "old", time.Hour)},
			call:  func(e *env) any { return e.prepare(ns, "k", "new", forever) },
			want:  false,
			then:  []check{same("k")},
		},
		{
			name:  "expired retained record is replaced with the new ttlAt",
			seeds: []seed{expired("k", "old")},
			call:  func(e *env) any { return e.prepare(ns, "k", "new", e.after(time.Minute)) },
			want:  true,
			then:  []check{holds("k", "new", ttlNew)},
		},
		{
			name:  "expired retained record is replaced forever",
			seeds: []seed{expired("k", "old")},
			call:  func(e *env) any { return e.prepare(ns, "k", "new", forever) },
			want:  true,
			then:  []check{holds("k", "new", ttlForever)},
		},
		{
			name:  "expired record with the same value is replaced",
			seeds: []seed{expired("k", "v")},
			call:  func(e *env) any { return e.prepare(ns, "k", "v", e.at(time.Hour)) },
			want:  true,
			then:  []check{holds("k", "v", ttlNew)},
		},
		{
			name:  "record past retention is replaced",
			seeds: []seed{lapsed("k", "old")},
			call:  func(e *env) any { return e.prepare(ns, "k", "new", forever) },
			want:  true,
			then:  []check{holds("k", "new", ttlForever)},
		},
		{
			name:        "retention 0: record is replaced right at expiry",
			noRetention: true,
			seeds:       []seed{expired("k", "old")},
			call:        func(e *env) any { return e.prepare(ns, "k", "new", forever) },
			want:        true,
			then:        []check{holds("k", "new", ttlForever)},
		},
		{
			name:  "other keys are untouched",
			seeds: []seed{live("k2", "v2"), expired("k3", "v3")},
			call:  func(e *env) any { return e.prepare(ns, "k", "v", forever) },
			want:  true,
			then:  []check{holds("k", "v", ttlForever), same("k2"), same("k3")},
		},
	}
}

func getRows() []row {
	return []row{
		{
			name: "absent key has no record",
			then: []check{absent("k")},
		},
		{
			name:  "live forever record",
			seeds: []seed{live("k", "v")},
			then:  []check{holds("k", "v", ttlForever)},
		},
		{
			name:  "live record with a TTL",
			seeds: []seed{liveFor("k", "v", time.Hour)},
			then:  []check{holds("k", "v", ttlSeed)},
		},
		{
			name:  "expired record is returned while retained, not live",
			seeds: []seed{expired("k", "v")},
			then:  []check{expiredAs("k", "v")},
		},
		{
			name:  "record past retention has no record",
			seeds: []seed{lapsed("k", "v")},
			then:  []check{absent("k")},
		},
		{
			name:        "retention 0: record is gone at expiry",
			noRetention: true,
			seeds:       []seed{expired("k", "v")},
			then:        []check{absent("k")},
		},
		{
			name:  "empty value",
			seeds: []seed{live("k", "")},
			then:  []check{holds("k", "", ttlForever)},
		},
	}
}

func rollbackRows() []row {
	return []row{
		{
			name: "absent key",
			call: func(e *env) any { return e.rollback(ns, "k", always) },
			want: false,
			then: []check{absent("k")},
		},
		{
			name:  "live record is deleted",
			seeds: []seed{live("k", "v")},
			call:  func(e *env) any { return e.rollback(ns, "k", always) },
			want:  true,
			then:  []check{absent("k")},
		},
		{
			name:  "live record with a TTL is deleted",
			seeds: []seed{liveFor("k", "v", time.Hour)},
			call:  func(e *env) any { return e.rollback(ns, "k", always) },
			want:  true,
			then:  []check{absent("k")},
		},
		{
			name:  "expired retained record is deleted",
			seeds: []seed{expired("k", "v")},
			call:  func(e *env) any { return e.rollback(ns, "k", always) },
			want:  true,
			then:  []check{absent("k")},
		},
		{
			name:  "record past retention is not there to delete",
			seeds: []seed{lapsed("k", "v")},
			call:  func(e *env) any { return e.rollback(ns, "k", always) },
			want:  false,
			then:  []check{absent("k")},
		},
		{
			name:        "retention 0: expired record is not there to delete",
			noRetention: true,
			seeds:       []seed{expired("k", "v")},
			call:        func(e *env) any { return e.rollback(ns, "k", always) },
			want:        false,
			then:        []check{absent("k")},
		},
		{
			name:  "IFEQ mismatch keeps the record",
			seeds: []seed{live("k", "v")},
			call:  func(e *env) any { return e.rollback(ns, "k", ifeq("w")) },
			want:  false,
			then:  []check{same("k")},
		},
		{
			name:  "IFEQ prefix of the value is a mismatch",
			seeds: []seed{live("k", "value")},
			call:  func(e *env) any { return e.rollback(ns, "k", ifeq("val")) },
			want:  false,
			then:  []check{same("k")},
		},
		{
			name:  "IFEQ match deletes",
			seeds: []seed{live("k", "v")},
			call:  func(e *env) any { return e.rollback(ns, "k", ifeq("v")) },
			want:  true,
			then:  []check{absent("k")},
		},
		{
			name:  "IFEQ match deletes an expired retained record",
			seeds: []seed{expired("k", "v")},
			call:  func(e *env) any { return e.rollback(ns, "k", ifeq("v")) },
			want:  true,
			then:  []check{absent("k")},
		},
		{
			name:  "IFEQ mismatch keeps an expired retained record",
			seeds: []seed{expired("k", "v")},
			call:  func(e *env) any { return e.rollback(ns, "k", ifeq("w")) },
			want:  false,
			then:  []check{same("k")},
		},
		{
			name: "IFEQ on an absent key",
			call: func(e *env) any { return e.rollback(ns, "k", ifeq("v")) },
			want: false,
			then: []check{absent("k")},
		},
		{
			name:  "IFEQ empty matches an empty value",
			seeds: []seed{live("k", "")},
			call:  func(e *env) any { return e.rollback(ns, "k", ifeq("")) },
			want:  true,
			then:  []check{absent("k")},
		},
		{
			name:  "IFEQ empty is a real condition",
			seeds: []seed{live("k", "v")},
			call:  func(e *env) any { return e.rollback(ns, "k", ifeq("")) },
			want:  false,
			then:  []check{same("k")},
		},
		{
			name:  "IFEQ on an empty value is a real condition",
			seeds: []seed{live("k", "")},
			call:  func(e *env) any { return e.rollback(ns, "k", ifeq("v")) },
			want:  false,
			then:  []check{same("k")},
		},
		{
			name:  "other keys are untouched",
			seeds: []seed{live("k", "v"), live("k2", "v"), live("kk", "v")},
			call:  func(e *env) any { return e.rollback(ns, "k", ifeq("v")) },
			want:  true,
			then:  []check{absent("k"), same("k2"), same("kk")},
		},
	}
}

func reprepareRows() []row {
	return []row{
		{
			name: "absent key",
			call: func(e *env) any { return e.reprepare(ns, "k", "new", always, forever) },
			want: false,
			then: []check{absent("k")},
		},
		{
			name:  "expired retained record is not replaced",
			seeds: []seed{expired("k", "old")},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", always, forever) },
			want:  false,
			then:  []check{same("k")},
		},
		{
			name:  "expired retained record with a matching IFEQ is not replaced",
			seeds: []seed{expired("k", "old")},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", ifeq("old"), keepTTL) },
			want:  false,
			then:  []check{same("k")},
		},
		{
			name:  "record past retention is not replaced",
			seeds: []seed{lapsed("k", "old")},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", always, forever) },
			want:  false,
			then:  []check{absent("k")},
		},
		{
			name:  "live record is replaced forever",
			seeds: []seed{live("k", "old")},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", always, forever) },
			want:  true,
			then:  []check{holds("k", "new", ttlForever)},
		},
		{
			name:  "live record with a TTL becomes forever without an option",
			seeds: []seed{liveFor("k", "old", time.Hour)},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", always, forever) },
			want:  true,
			then:  []check{holds("k", "new", ttlForever)},
		},
		{
			name:  "EX gives a new ttlAt",
			seeds: []seed{liveFor("k", "old", time.Hour)},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", always, e.after(time.Minute)) },
			want:  true,
			then:  []check{holds("k", "new", ttlNew)},
		},
		{
			name:  "EXAT gives that ttlAt",
			seeds: []seed{live("k", "old")},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", always, e.at(2*time.Hour)) },
			want:  true,
			then:  []check{holds("k", "new", ttlNew)},
		},
		{
			name:  "KEEPTTL keeps the ttlAt",
			seeds: []seed{liveFor("k", "old", time.Hour)},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", always, keepTTL) },
			want:  true,
			then:  []check{holds("k", "new", ttlSeed)},
		},
		{
			name:  "KEEPTTL keeps a forever record forever",
			seeds: []seed{live("k", "old")},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", always, keepTTL) },
			want:  true,
			then:  []check{holds("k", "new", ttlForever)},
		},
		{
			name:  "same value renews the ttlAt",
			seeds: []seed{liveFor("k", "v", time.Hour)},
			call:  func(e *env) any { return e.reprepare(ns, "k", "v", always, e.after(3*time.Hour)) },
			want:  true,
			then:  []check{holds("k", "v", ttlNew)},
		},
		{
			name:  "IFEQ mismatch keeps the record",
			seeds: []seed{liveFor("k", "old", time.Hour)},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", ifeq("other"), forever) },
			want:  false,
			then:  []check{same("k")},
		},
		{
			name:  "IFEQ match replaces",
			seeds: []seed{live("k", "old")},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", ifeq("old"), e.after(time.Minute)) },
			want:  true,
			then:  []check{holds("k", "new", ttlNew)},
		},
		{
			name:  "IFEQ empty matches an empty value",
			seeds: []seed{live("k", "")},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", ifeq(""), forever) },
			want:  true,
			then:  []check{holds("k", "new", ttlForever)},
		},
		{
			name:  "IFEQ empty is a real condition",
			seeds: []seed{live("k", "old")},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", ifeq(""), forever) },
			want:  false,
			then:  []check{same("k")},
		},
		{
			name:  "IFEQ on an empty value is a real condition",
			seeds: []seed{live("k", "")},
			call:  func(e *env) any { return e.reprepare(ns, "k", "new", ifeq("old"), forever) },
			want:  false,
			then:  []check{same("k")},
		},
		{
			name:  "new value may be empty",
			seeds: []seed{live("k", "old")},
			call:  func(e *env) any { return e.reprepare(ns, "k", "", ifeq("old"), forever) },
			want:  true,
			then:  []check{holds("k", "", ttlForever)},
		},
	}
}

func moveRows() []row {
	move := func(newValue, oldValue string, exp func(e *env) backend.Expiry) func(e *env) any {
		return func(e *env) any { return e.move(ns, "new", newValue, "old", oldValue, exp(e)) }
	}
	noTTL := func(*env) backend.Expiry { return forever }
	inMinute := func(e *env) backend.Expiry { return e.after(time.Minute) }
	inHours := func(e *env) backend.Expiry { return e.at(5 * time.Hour) }
	return []row{
		{
			name:  "moves to an absent key forever",
			seeds: []seed{live("old", "ov")},
			call:  move("nv", "ov", noTTL),
			want:  backend.Moved,
			then:  []check{holds("new", "nv", ttlForever), absent("old")},
		},
		{
			name:  "moves with EX",
			seeds: []seed{live("old", "ov")},
			call:  move("nv", "ov", inMinute),
			want:  backend.Moved,
			then:  []check{holds("new", "nv", ttlNew), absent("old")},
		},
		{
			name:  "moves with EXAT",
			seeds: []seed{live("old", "ov")},
			call:  move("nv", "ov", inHours),
			want:  backend.Moved,
			then:  []check{holds("new", "nv", ttlNew), absent("old")},
		},
		{
			name:  "new key does not inherit the old ttlAt",
			seeds: []seed{liveFor("old", "ov", time.Hour)},
			call:  move("nv", "ov", noTTL),
			want:  backend.Moved,
			then:  []check{holds("new", "nv", ttlForever), absent("old")},
		},
		{
			name:  "same value under both keys",
			seeds: []seed{live("old", "v")},
			call:  move("v", "v", noTTL),
			want:  backend.Moved,
			then:  []check{holds("new", "v", ttlForever), absent("old")},
		},
		{
			name:  "live new key is taken, nothing changes",
			seeds: []seed{live("new", "taken"), live("old", "ov")},
			call:  move("nv", "ov", inMinute),
			want:  backend.NewKeyTaken,
			then:  []check{same("new"), same("old")},
		},
		{
			name:  "live new key holding the new value is taken",
			seeds: []seed{liveFor("new", "nv", time.Hour), live("old", "ov")},
			call:  move("nv", "ov", noTTL),
			want:  backend.NewKeyTaken,
			then:  []check{same("new"), same("old")},
		},
		{
			// PROTOCOL.md defines a move as PREPARE newKey then ROLLBACK
			// oldKey IFEQ: the PREPARE answers first.
			name:  "taken new key is reported before an old key mismatch",
			seeds: []seed{live("new", "taken"), live("old", "other")},
			call:  move("nv", "ov", noTTL),
			want:  backend.NewKeyTaken,
			then:  []check{same("new"), same("old")},
		},
		{
			name: "absent old key is a mismatch and new key is not reserved",
			call: move("nv", "ov", inMinute),
			want: backend.OldKeyMismatch,
			then: []check{absent("new"), absent("old")},
		},
		{
			name:  "old key with another value is a mismatch, nothing changes",
			seeds: []seed{live("old", "other")},
			call:  move("nv", "ov", noTTL),
			want:  backend.OldKeyMismatch,
			then:  []check{absent("new"), same("old")},
		},
		{
			name:  "old key whose value has the old value as prefix is a mismatch",
			seeds: []seed{live("old", "ov2")},
			call:  move("nv", "ov", noTTL),
			want:  backend.OldKeyMismatch,
			then:  []check{absent("new"), same("old")},
		},
		{
			name:  "empty old value matches an empty value",
			seeds: []seed{live("old", "")},
			call:  move("nv", "", noTTL),
			want:  backend.Moved,
			then:  []check{holds("new", "nv", ttlForever), absent("old")},
		},
		{
			name:  "empty old value is a real condition",
			seeds: []seed{live("old", "ov")},
			call:  move("nv", "", noTTL),
			want:  backend.OldKeyMismatch,
			then:  []check{absent("new"), same("old")},
		},
		{
			name:  "expired retained old key with the matching value moves",
			seeds: []seed{expired("old", "ov")},
			call:  move("nv", "ov", inMinute),
			want:  backend.Moved,
			then:  []check{holds("new", "nv", ttlNew), absent("old")},
		},
		{
			name:  "expired retained old key with another value is a mismatch",
			seeds: []seed{expired("old", "other")},
			call:  move("nv", "ov", noTTL),
			want:  backend.OldKeyMismatch,
			then:  []check{absent("new"), same("old")},
		},
		{
			name:  "old key past retention is a mismatch",
			seeds: []seed{lapsed("old", "ov")},
			call:  move("nv", "ov", noTTL),
			want:  backend.OldKeyMismatch,
			then:  []check{absent("new"), absent("old")},
		},
		{
			name:        "retention 0: expired old key is a mismatch",
			noRetention: true,
			seeds:       []seed{expired("old", "ov")},
			call:        move("nv", "ov", noTTL),
			want:        backend.OldKeyMismatch,
			then:        []check{absent("new"), absent("old")},
		},
		{
			name:  "expired retained new key is replaced",
			seeds: []seed{expired("new", "stale"), live("old", "ov")},
			call:  move("nv", "ov", inMinute),
			want:  backend.Moved,
			then:  []check{holds("new", "nv", ttlNew), absent("old")},
		},
		{
			name:  "expired retained new key is kept on an old key mismatch",
			seeds: []seed{expired("new", "stale"), live("old", "other")},
			call:  move("nv", "ov", noTTL),
			want:  backend.OldKeyMismatch,
			then:  []check{same("new"), same("old")},
		},
		{
			name:  "new key past retention is replaced",
			seeds: []seed{lapsed("new", "stale"), live("old", "ov")},
			call:  move("nv", "ov", noTTL),
			want:  backend.Moved,
			then:  []check{holds("new", "nv", ttlForever), absent("old")},
		},
		{
			name:  "keys of another namespace do not count",
			seeds: []seed{live("new", "taken").in("other"), live("old", "ov"), live("old", "ov").in("other")},
			call:  move("nv", "ov", noTTL),
			want:  backend.Moved,
			then: []check{
				holds("new", "nv", ttlForever), absent("old"),
				same("new").in("other"), same("old").in("other"),
			},
		},
	}
}
