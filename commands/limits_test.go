package commands

import "testing"

// TestNamespacesIntern: an interned namespace is its bytes, copied (the
// input is a connection's buffer, overwritten later), and a namespace seen
// before costs no allocation; names that share a slot take it in turn.
func TestNamespacesIntern(t *testing.T) {
	var n namespaces
	buf := []byte("users")
	s := n.intern(buf)
	copy(buf, "XXXXX")
	if s != "users" {
		t.Fatalf("intern = %q after its input changed, want users", s)
	}
	buf = []byte("users")
	if allocs := testing.AllocsPerRun(100, func() { _ = n.intern(buf) }); allocs != 0 {
		t.Errorf("intern of a known namespace: %v allocations, want 0", allocs)
	}
	// "users" and "skuss" share length and last byte: the same slot.
	for _, name := range []string{"users", "skuss", "users", "skuss"} {
		if got := n.intern([]byte(name)); got != name {
			t.Errorf("intern(%q) = %q", name, got)
		}
	}
	if got := n.intern(nil); got != "" {
		t.Errorf("intern(nil) = %q", got)
	}
}
