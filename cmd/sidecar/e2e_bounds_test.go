package main

import (
	"testing"
)

// The end-to-end tests of issue 9: hostile input and resource bounds.

// onBackends runs f on a fresh sidecar for each backend named in names that
// this run has (memory and file always; redis where scripts/test.sh started
// it).
func onBackends(t *testing.T, names []string, f func(t *testing.T, s *sidecar)) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for _, b := range backends(t) {
		if !want[b.name] {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, start(t, b.args(t)...))
		})
	}
}

var memFileRedis = []string{"memory", "file", "redis"}

// TestIntegerArguments: integers are read as Redis's string2ll reads them;
// a numeral it refuses gets Redis's own error, and nothing is stored.
func TestIntegerArguments(t *testing.T) {
	onBackends(t, memFileRedis, func(t *testing.T, s *sidecar) {
		r := s.raw(t)
		ns := uniqueNS(t)
		notInt := "-ERR value is not an integer or out of range\r\n"
		r.do(notInt, "PK.PREPARE", ns, "a", "v", "EX", "+5")
		r.do(notInt, "PK.PREPARE", ns, "a", "v", "EX", "007")
		r.do(notInt, "PK.PREPARE", ns, "a", "v", "px", "-0")
		r.do(notInt, "PK.REPREPARE", ns, "a", "v", "EXAT", "+4102444800")
		r.do("-ERR invalid expire time in 'pk.prepare' command\r\n", "PK.PREPARE", ns, "a", "v", "EX", "99999999999999999999")
		r.do("-ERR invalid expire time in 'pk.prepare' command\r\n", "PK.PREPARE", ns, "a", "v", "EX", "1.5")
		r.do("*-1\r\n", "PK.GETVALUE", ns, "a")
		r.do(":1\r\n", "PK.PREPARE", ns, "a", "v", "EX", "5")
	})
}
