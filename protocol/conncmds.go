package protocol

import (
	"bytes"
	"crypto/subtle"
	"strings"
	"time"

	"github.com/prepkey/prepkey/commands"
)

// connCmd is a connection command: it answers from the connection's and the
// server's own state, never the backend's (but INFO's readiness).
type connCmd struct {
	arity int // as in Redis: negative is a minimum
	run   func(c *conn, args [][]byte)
	// offLoop is set for a command that may wait on the backend (INFO
	// pings it): it runs off the event loop.
	offLoop bool
	// subs are a container's subcommands (CLIENT, COMMAND), by lower-case
	// name; run, if set, answers the container alone.
	subs map[string]connCmd
}

// connCommandTable is the table of connection commands, by lower-case name.
func connCommandTable() map[string]connCmd {
	return map[string]connCmd{
		"ping":    {arity: -1, run: (*conn).ping},
		"echo":    {arity: 2, run: (*conn).echo},
		"quit":    {arity: -1, run: (*conn).quitCmd},
		"auth":    {arity: -2, run: (*conn).auth},
		"hello":   {arity: -1, run: (*conn).hello},
		"select":  {arity: 2, run: (*conn).selectDB},
		"client":  {arity: -2, subs: clientSubs()},
		"command": {arity: -1, run: (*conn).commandAll, subs: commandSubs()},
		"info":    {arity: -1, run: (*conn).info, offLoop: true},
		// Transactions (transaction.go); inside MULTI, queue answers these.
		"multi":   {arity: 1, run: (*conn).multi},
		"exec":    {arity: 1, run: (*conn).execCmd},
		"discard": {arity: 1, run: (*conn).discardCmd},
		"watch":   {arity: -2, run: (*conn).watch},
		"unwatch": {arity: 1, run: (*conn).watch},
	}
}

// connCommand runs the connection command in args, arity checked. It
// reports false when args[0] names none.
func (c *conn) connCommand(args [][]byte) bool {
	cmd, refusal, found := c.srv.lookupConnCmd(args)
	switch {
	case !found:
		return false
	case refusal.Err != commands.NoError:
		c.out.Reply(refusal)
		return true
	}
	if cmd.offLoop {
		args = cloneArgs(args) // they point into gnet's buffer
		idx, began := c.statIndex(args[0]), c.began
		c.offload(func() {
			errs := c.out.Errs
			cmd.run(c, args)
			o, p := c.outcomeSince(0, errs)
			c.stats.Record(idx, o, p, time.Since(began))
		})
		return true
	}
	cmd.run(c, args)
	return true
}

// lookupConnCmd finds the connection command that args names, down to a
// container's subcommand (CLIENT LIST), and checks its arity. found is false
// when args[0] names no connection command; refusal is the error to answer
// when the subcommand or the arity is wrong.
func (s *Server) lookupConnCmd(args [][]byte) (cmd connCmd, refusal commands.Reply, found bool) {
	lower := strings.ToLower(string(args[0]))
	cmd, found = s.connCmds[lower]
	if !found {
		return cmd, commands.Reply{}, false
	}
	if n := len(args); (cmd.arity > 0 && n != cmd.arity) || n < -cmd.arity {
		return cmd, commands.ErrArity.Replyf(lower), true
	}
	if cmd.subs != nil && len(args) > 1 {
		sub := strings.ToLower(string(args[1]))
		sc, ok := cmd.subs[sub]
		if !ok {
			return cmd, commands.ErrUnknownSubcommand.Replyf(args[1], strings.ToUpper(lower)), true
		}
		if n := len(args); (sc.arity > 0 && n != sc.arity) || n < -sc.arity {
			return cmd, commands.ErrSubcommandArity.Replyf(lower, sub), true
		}
		cmd = sc
	}
	return cmd, commands.Reply{}, true
}

func cloneArgs(args [][]byte) [][]byte {
	kept := make([][]byte, len(args))
	for i, a := range args {
		kept[i] = bytes.Clone(a)
	}
	return kept
}

// allowedBeforeAuth are the commands Redis lets through before AUTH.
func allowedBeforeAuth(name []byte) bool {
	switch strings.ToLower(string(name)) {
	case "auth", "hello", "quit":
		return true
	}
	return false
}

func (c *conn) ping(args [][]byte) {
	switch len(args) {
	case 1:
		c.out.Simple("PONG")
	case 2:
		c.out.Bulk(args[1])
	default:
		c.out.Failf(commands.ErrArity, "ping")
	}
}

func (c *conn) echo(args [][]byte) { c.out.Bulk(args[1]) }

func (c *conn) quitCmd([][]byte) {
	c.out.Simple("OK")
	c.st.quitNow()
}

func (c *conn) selectDB(args [][]byte) {
	n, ok := commands.ParseInt(args[1]) // string2ll, as Redis: "+0" is not an index
	switch {
	case !ok:
		c.out.Fail(commands.ErrNotInteger)
	case n != 0:
		c.out.Fail(commands.ErrDBIndex)
	default:
		c.out.Simple("OK")
	}
}

// AUTH [user] password
func (c *conn) auth(args [][]byte) {
	if len(args) > 3 {
		c.out.Fail(commands.ErrSyntax)
		return
	}
	user, pass := "default", args[len(args)-1]
	if len(args) == 3 {
		user = string(args[1])
	}
	if c.srv.cfg.Password == "" && len(args) == 2 {
		c.out.Fail(commands.ErrAuthNoPassword)
		return
	}
	if !c.checkPassword(user, pass) {
		c.out.Fail(commands.ErrWrongPass)
		return
	}
	c.authed = true
	c.out.Simple("OK")
}

// checkPassword accepts the one user, "default", with the configured
// password, or with any password when none is set (Redis's nopass).
func (c *conn) checkPassword(user string, pass []byte) bool {
	if user != "default" {
		return false
	}
	want := c.srv.cfg.Password
	return want == "" || subtle.ConstantTimeCompare([]byte(want), pass) == 1
}

// HELLO [protover [AUTH user pass] [SETNAME name]]
func (c *conn) hello(args [][]byte) {
	proto := 2
	if c.out.RESP3 {
		proto = 3
	}
	var name []byte
	var setName, authOK bool
	if len(args) > 1 {
		// string2ll, as Redis's getLongLongFromObject: "+3" and "03"
		// are not versions (strconv took them for 3).
		v, ok := commands.ParseInt(args[1])
		if !ok {
			c.out.Fail(commands.ErrProtoVersion)
			return
		}
		if v != 2 && v != 3 {
			c.out.Fail(commands.ErrNoProto)
			return
		}
		proto = int(v)
		for i := 2; i < len(args); i++ {
			switch opt := strings.ToLower(string(args[i])); {
			case opt == "auth" && i+2 < len(args):
				if !c.checkPassword(string(args[i+1]), args[i+2]) {
					c.out.Fail(commands.ErrWrongPass)
					return
				}
				authOK = true
				i += 2
			case opt == "setname" && i+1 < len(args):
				name, setName = args[i+1], true
				i++
			default:
				c.out.Failf(commands.ErrHelloOption, args[i])
				return
			}
		}
	}
	if !c.authed && !authOK {
		c.out.Fail(commands.ErrHelloNoAuth)
		return
	}
	if setName {
		if !validClientName(name) {
			c.out.Fail(commands.ErrClientName)
			return
		}
		c.setMeta(func() { c.name = string(name) })
	}
	c.authed = true
	c.out.RESP3 = proto == 3
	c.setMeta(func() { c.proto = proto })
	c.out.MapHeader(7)
	c.out.BulkString("server")
	c.out.BulkString("prepkey")
	c.out.BulkString("version")
	c.out.BulkString(redisVersion)
	c.out.BulkString("proto")
	c.out.Int(int64(proto))
	c.out.BulkString("id")
	c.out.Int(c.id)
	c.out.BulkString("mode")
	c.out.BulkString("standalone")
	c.out.BulkString("role")
	c.out.BulkString("master")
	c.out.BulkString("modules")
	c.out.Array(0)
}

// redisVersion is the Redis version whose client-facing behaviour prepkey
// follows; clients that gate features on HELLO's or INFO's version see a
// current Redis. prepkey's own version is INFO's prepkey_version.
const redisVersion = "7.2.0"

// validClientName is Redis's rule: printable ASCII without spaces.
func validClientName(name []byte) bool {
	for _, b := range name {
		if b < '!' || b > '~' {
			return false
		}
	}
	return true
}
