package conncmd

import (
	"crypto/rand"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"github.com/prepkey/prepkey/commands"
)

// Handler answers a connection command, its arity checked, on c: it
// writes one reply to c.Out().
type Handler func(c Conn, args [][]byte)

// Cmd is a connection command: it answers from the connection's and the
// server's own state, never the backend's (but INFO's readiness).
type Cmd struct {
	Arity int // as in Redis: negative is a minimum
	Run   Handler
	// OffLoop is set for a command that may wait on the backend (INFO
	// pings it): it is to run off the event loop.
	OffLoop bool
	// Subs are a container's subcommands (CLIENT, COMMAND), by lower-case
	// name; Run, if set, answers the container alone.
	Subs map[string]Cmd
}

// Table is the table of connection commands of one server.
type Table struct {
	cmds     map[string]Cmd // by lower-case name
	srv      Server
	password string
	runID    string // INFO's run_id: tells a restart apart
}

// New returns the table of the connection commands, which run on srv,
// with AUTH checking password (none: any is taken, Redis's nopass), and
// the server's own commands in more (by lower-case name).
func New(srv Server, password string, more map[string]Cmd) *Table {
	t := &Table{srv: srv, password: password, runID: newRunID()}
	t.cmds = map[string]Cmd{
		"ping":    {Arity: -1, Run: ping},
		"echo":    {Arity: 2, Run: echo},
		"quit":    {Arity: -1, Run: quit},
		"auth":    {Arity: -2, Run: t.auth},
		"hello":   {Arity: -1, Run: t.hello},
		"select":  {Arity: 2, Run: selectDB},
		"client":  {Arity: -2, Subs: t.clientSubs()},
		"command": {Arity: -1, Run: t.commandAll, Subs: t.commandSubs()},
		"info":    {Arity: -1, Run: t.info, OffLoop: true},
	}
	maps.Copy(t.cmds, more)
	return t
}

// Names are the names of the connection commands (for the counters).
func (t *Table) Names() []string { return slices.Sorted(maps.Keys(t.cmds)) }

// Lookup finds the connection command that args names, down to a
// container's subcommand (CLIENT LIST), and checks its arity. found is
// false when args[0] names no connection command; refusal is the error to
// answer when the subcommand or the arity is wrong.
func (t *Table) Lookup(args [][]byte) (cmd Cmd, refusal commands.Reply, found bool) {
	lower := strings.ToLower(string(args[0]))
	cmd, found = t.cmds[lower]
	if !found {
		return cmd, commands.Reply{}, false
	}
	if n := len(args); (cmd.Arity > 0 && n != cmd.Arity) || n < -cmd.Arity {
		return cmd, commands.ErrArity.Replyf(lower), true
	}
	if cmd.Subs != nil && len(args) > 1 {
		sub := strings.ToLower(string(args[1]))
		sc, ok := cmd.Subs[sub]
		if !ok {
			return cmd, commands.ErrUnknownSubcommand.Replyf(args[1], strings.ToUpper(lower)), true
		}
		if n := len(args); (sc.Arity > 0 && n != sc.Arity) || n < -sc.Arity {
			return cmd, commands.ErrSubcommandArity.Replyf(lower, sub), true
		}
		cmd = sc
	}
	return cmd, commands.Reply{}, true
}

// AllowedBeforeAuth reports whether name is a command Redis lets through
// before AUTH.
func AllowedBeforeAuth(name []byte) bool {
	switch strings.ToLower(string(name)) {
	case "auth", "hello", "quit":
		return true
	}
	return false
}

// newRunID is a random 40-hex-digit id, as Redis's run_id.
func newRunID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
