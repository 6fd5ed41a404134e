package conncmd

import (
	"crypto/subtle"
	"strings"

	"github.com/prepkey/prepkey/commands"
)

// PING, ECHO, QUIT, SELECT, AUTH and HELLO: the commands of the session.

func ping(c Conn, args [][]byte) {
	w := c.Out()
	switch len(args) {
	case 1:
		w.Simple("PONG")
	case 2:
		w.Bulk(args[1])
	default:
		w.Failf(commands.ErrArity, "ping")
	}
}

func echo(c Conn, args [][]byte) { c.Out().Bulk(args[1]) }

func quit(c Conn, _ [][]byte) {
	c.Out().Simple("OK")
	c.Quit()
}

func selectDB(c Conn, args [][]byte) {
	w := c.Out()
	n, ok := commands.ParseInt(args[1]) // string2ll, as Redis: "+0" is not an index
	switch {
	case !ok:
		w.Fail(commands.ErrNotInteger)
	case n != 0:
		w.Fail(commands.ErrDBIndex)
	default:
		w.Simple("OK")
	}
}

// AUTH [user] password
func (t *Table) auth(c Conn, args [][]byte) {
	w := c.Out()
	if len(args) > 3 {
		w.Fail(commands.ErrSyntax)
		return
	}
	user, pass := "default", args[len(args)-1]
	if len(args) == 3 {
		user = string(args[1])
	}
	if t.password == "" && len(args) == 2 {
		w.Fail(commands.ErrAuthNoPassword)
		return
	}
	if !t.checkPassword(user, pass) {
		w.Fail(commands.ErrWrongPass)
		return
	}
	c.Authenticate()
	w.Simple("OK")
}

// checkPassword accepts the one user, "default", with the configured
// password, or with any password when none is set (Redis's nopass).
func (t *Table) checkPassword(user string, pass []byte) bool {
	if user != "default" {
		return false
	}
	want := t.password
	return want == "" || subtle.ConstantTimeCompare([]byte(want), pass) == 1
}

// HELLO [protover [AUTH user pass] [SETNAME name]]
func (t *Table) hello(c Conn, args [][]byte) {
	w := c.Out()
	proto := 2
	if w.RESP3 {
		proto = 3
	}
	var name []byte
	var setName, authOK bool
	if len(args) > 1 {
		// string2ll, as Redis's getLongLongFromObject: "+3" and "03"
		// are not versions (strconv took them for 3).
		v, ok := commands.ParseInt(args[1])
		if !ok {
			w.Fail(commands.ErrProtoVersion)
			return
		}
		if v != 2 && v != 3 {
			w.Fail(commands.ErrNoProto)
			return
		}
		proto = int(v)
		for i := 2; i < len(args); i++ {
			switch opt := strings.ToLower(string(args[i])); {
			case opt == "auth" && i+2 < len(args):
				if !t.checkPassword(string(args[i+1]), args[i+2]) {
					w.Fail(commands.ErrWrongPass)
					return
				}
				authOK = true
				i += 2
			case opt == "setname" && i+1 < len(args):
				name, setName = args[i+1], true
				i++
			default:
				w.Failf(commands.ErrHelloOption, args[i])
				return
			}
		}
	}
	if !c.Authed() && !authOK {
		w.Fail(commands.ErrHelloNoAuth)
		return
	}
	if setName && !validClientName(name) {
		w.Fail(commands.ErrClientName)
		return
	}
	c.Authenticate()
	w.RESP3 = proto == 3
	c.SetMeta(func(m *Meta) {
		if setName {
			m.Name = string(name)
		}
		m.Proto = proto
	})
	w.MapHeader(7)
	w.BulkString("server")
	w.BulkString("prepkey")
	w.BulkString("version")
	w.BulkString(redisVersion)
	w.BulkString("proto")
	w.Int(int64(proto))
	w.BulkString("id")
	w.Int(c.Client().ID)
	w.BulkString("mode")
	w.BulkString("standalone")
	w.BulkString("role")
	w.BulkString("master")
	w.BulkString("modules")
	w.Array(0)
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
