package conncmd

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prepkey/prepkey/commands"
)

// clientSubs are CLIENT's subcommands. Those a client sends on connect to
// tune what a sidecar does not have (eviction, LRU, maintenance push
// messages) answer +OK and change nothing.
func (t *Table) clientSubs() map[string]Cmd {
	return map[string]Cmd{
		"id":                  {Arity: 2, Run: clientID},
		"getname":             {Arity: 2, Run: clientGetName},
		"setname":             {Arity: 3, Run: clientSetName},
		"setinfo":             {Arity: 4, Run: clientSetInfo},
		"info":                {Arity: 2, Run: clientInfo},
		"list":                {Arity: -2, Run: t.clientList},
		"kill":                {Arity: -3, Run: t.clientKill},
		"help":                {Arity: 2, Run: clientHelp},
		"no-evict":            {Arity: 3, Run: clientOnOff},
		"no-touch":            {Arity: 3, Run: clientOnOff},
		"maint_notifications": {Arity: -3, Run: func(c Conn, _ [][]byte) { c.Out().Simple("OK") }},
	}
}

func clientID(c Conn, _ [][]byte) { c.Out().Int(c.Client().ID) }

func clientGetName(c Conn, _ [][]byte) {
	name := c.Client().Name
	if name == "" {
		c.Out().Null()
		return
	}
	c.Out().BulkString(name)
}

func clientSetName(c Conn, args [][]byte) {
	if !validClientName(args[2]) {
		c.Out().Fail(commands.ErrClientName)
		return
	}
	c.SetMeta(func(m *Meta) { m.Name = string(args[2]) })
	c.Out().Simple("OK")
}

// CLIENT SETINFO LIB-NAME | LIB-VER value, with Redis 7.2's errors: the
// option it does not know, or the option whose value has a space.
func clientSetInfo(c Conn, args [][]byte) {
	attr := string(args[2])
	var i int
	switch strings.ToLower(attr) {
	case "lib-name":
		i = 0
	case "lib-ver":
		i = 1
	default:
		c.Out().Failf(commands.ErrUnrecognizedOption, attr)
		return
	}
	if !validClientName(args[3]) {
		c.Out().Failf(commands.ErrClientAttr, attr)
		return
	}
	c.SetMeta(func(m *Meta) { m.Lib[i] = string(args[3]) })
	c.Out().Simple("OK")
}

func clientInfo(c Conn, _ [][]byte) {
	c.Out().Verbatim(Line(c.Client(), time.Now().Unix()) + "\n")
}

// CLIENT NO-EVICT | NO-TOUCH ON | OFF
func clientOnOff(c Conn, args [][]byte) {
	switch strings.ToLower(string(args[2])) {
	case "on", "off":
		c.Out().Simple("OK")
	default:
		c.Out().Fail(commands.ErrSyntax)
	}
}

// Line is cl's line in CLIENT LIST at now (Unix seconds), in Redis 7.2's
// fields and order. What a sidecar does not have (databases, pub/sub,
// transactions, client-side caching, query buffers it does not measure)
// reads as Redis shows it for an idle connection that never used it; cmd,
// the last command, is not tracked (a cost on every command) and reads
// NULL, as for a connection that has run none.
func Line(cl Client, now int64) string {
	proto := cl.Proto
	if proto == 0 {
		proto = 2
	}
	addr, laddr, flags := cl.Addr, cl.LAddr, "N"
	if cl.Unix {
		// Redis shows a unix socket's path with port 0.
		addr, laddr, flags = cl.LAddr+":0", cl.LAddr+":0", "U"
	}
	user := "default"
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=NULL user=%s redir=-1 resp=%d lib-name=%s lib-ver=%s",
		cl.ID, addr, laddr, cl.FD, cl.Name, now-cl.Created, now-cl.LastInput, flags, user, proto, cl.Lib[0], cl.Lib[1])
}

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...]
func (t *Table) clientList(c Conn, args [][]byte) {
	keep, refusal := listFilter(args)
	if refusal.Err != commands.NoError {
		c.Out().Reply(&refusal)
		return
	}
	var b strings.Builder
	for _, o := range t.srv.Clients() {
		if keep(o.Client) {
			b.WriteString(Line(o.Client, time.Now().Unix()))
			b.WriteByte('\n')
		}
	}
	c.Out().Verbatim(b.String())
}

// listFilter is which connections CLIENT LIST's options (args[2:]) list,
// or the refusal to answer.
func listFilter(args [][]byte) (keep func(Client) bool, refusal commands.Reply) {
	keep = func(Client) bool { return true }
	switch {
	case len(args) == 2:
	case len(args) == 4 && strings.EqualFold(string(args[2]), "type"):
		switch strings.ToLower(string(args[3])) {
		case "normal":
		case "master", "replica", "slave", "pubsub":
			keep = func(Client) bool { return false }
		default:
			return nil, commands.ErrUnknownClientType.Replyf(args[3])
		}
	case len(args) > 3 && strings.EqualFold(string(args[2]), "id"):
		ids := map[int64]bool{}
		for _, a := range args[3:] {
			id, err := strconv.ParseInt(string(a), 10, 64)
			if err != nil {
				return nil, commands.ErrInvalidClientID.Reply()
			}
			ids[id] = true
		}
		keep = func(o Client) bool { return ids[o.ID] }
	default:
		return nil, commands.ErrSyntax.Reply()
	}
	return keep, commands.Reply{}
}

// CLIENT KILL addr | CLIENT KILL [ID id] [ADDR addr] [LADDR addr]
// [TYPE type] [USER user] [SKIPME yes|no], as Redis: the old form answers
// +OK or an error, the new one the number of connections closed.
func (t *Table) clientKill(c Conn, args [][]byte) {
	f, refusal := parseKill(args)
	if refusal.Err != commands.NoError {
		c.Out().Reply(&refusal)
		return
	}
	me := c.Client().ID
	killed := 0
	for _, o := range t.srv.Clients() {
		if !f.matches(o.Client, me) {
			continue
		}
		killed++
		if o.ID == me {
			c.Quit() // after this reply, as Redis
			continue
		}
		o.Close()
	}
	if len(args) == 3 {
		if killed == 0 {
			c.Out().Fail(commands.ErrNoSuchClient)
		} else {
			c.Out().Simple("OK")
		}
		return
	}
	c.Out().Int(int64(killed))
}

// killFilter is which connections CLIENT KILL closes.
type killFilter struct {
	id          int64 // 0: any
	addr, laddr string
	skipMe      bool // not the connection that sends it
	none        bool // TYPE master, replica, pubsub: a sidecar has none
}

// parseKill reads CLIENT KILL's filter, in its old form (one address) or
// its new one (options), or the refusal to answer.
func parseKill(args [][]byte) (f killFilter, refusal commands.Reply) {
	f.skipMe = true
	if len(args) == 3 {
		f.addr, f.skipMe = string(args[2]), false
		return f, commands.Reply{}
	}
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return f, commands.ErrSyntax.Reply()
		}
		v := string(args[i+1])
		switch strings.ToLower(string(args[i])) {
		case "id":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return f, commands.ErrClientIDRange.Reply()
			}
			f.id = n
		case "addr":
			f.addr = v
		case "laddr":
			f.laddr = v
		case "type":
			switch strings.ToLower(v) {
			case "normal":
			case "master", "replica", "slave", "pubsub":
				f.none = true
			default:
				return f, commands.ErrUnknownClientType.Replyf(v)
			}
		case "user":
			if v != "default" {
				return f, commands.ErrNoSuchUser.Replyf(v)
			}
		case "skipme":
			switch strings.ToLower(v) {
			case "yes":
				f.skipMe = true
			case "no":
				f.skipMe = false
			default:
				return f, commands.ErrSyntax.Reply()
			}
		default:
			return f, commands.ErrSyntax.Reply()
		}
	}
	return f, commands.Reply{}
}

// matches reports whether the filter closes o, CLIENT KILL being sent on
// the connection whose id is me.
func (f killFilter) matches(o Client, me int64) bool {
	switch {
	case f.none,
		f.id != 0 && o.ID != f.id,
		f.addr != "" && o.Addr != f.addr,
		f.laddr != "" && o.LAddr != f.laddr,
		o.ID == me && f.skipMe:
		return false
	}
	return true
}

// CLIENT HELP: Redis's text for the subcommands prepkey has.
func clientHelp(c Conn, _ [][]byte) {
	help(c.Out(), "CLIENT",
		"GETNAME",
		"    Return the name of the current connection.",
		"ID",
		"    Return the ID of the current connection.",
		"INFO",
		"    Return information about the current client connection.",
		"KILL <ip:port>",
		"    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]",
		"    Kill connections. Options are:",
		"    * ADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made from the specified address",
		"    * LADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made to specified local address",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Kill connections by type.",
		"    * USER <username>",
		"      Kill connections authenticated by <username>.",
		"    * SKIPME (YES|NO)",
		"      Skip killing current connection (default: yes).",
		"LIST [options ...]",
		"    Return information about client connections. Options:",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Return clients of specified type.",
		"SETNAME <name>",
		"    Assign the name <name> to the current connection.",
		"SETINFO <option> <value>",
		"    Set client meta attr. Options are:",
		"    * LIB-NAME: the client lib name.",
		"    * LIB-VER: the client lib version.",
		"NO-EVICT (ON|OFF)",
		"    Protect current client connection from eviction.",
		"NO-TOUCH (ON|OFF)",
		"    Will not touch LRU/LFU stats when this mode is on.",
		"MAINT_NOTIFICATIONS (ON|OFF) [<option> <value> [...]]",
		"    Accepted and ignored: a sidecar announces no maintenance.")
}
