package conncmd

import (
	"testing"

	"github.com/prepkey/prepkey/protocol/cmddocs"
)

// TestEveryCommandHasDocs holds every command and subcommand that COMMAND
// lists to an entry in package cmddocs: without one, redis-cli has no hint and
// no help for it. The v2 PK commands are documented before their specs
// land, so that they are listed with docs the day they are.
func TestEveryCommandHasDocs(t *testing.T) {
	list := New(nil, "", nil).List()
	if len(list) == 0 {
		t.Fatal("COMMAND lists nothing")
	}
	check := func(name string) {
		if !cmddocs.Complete(name) {
			t.Errorf("%s: listed by COMMAND, no docs (summary, since, group, complexity) in package cmddocs", name)
		}
	}
	for _, name := range list { // each command, then its subcommands
		check(name)
	}
	// The transaction commands are package protocol's, given to New.
	for _, name := range []string{"pk.prepare", "pk.get", "pk.getvalue", "pk.rollback", "pk.reprepare", "pk.mprepare", "pk.scan",
		"multi", "exec", "discard", "watch", "unwatch"} {
		check(name)
	}
}
