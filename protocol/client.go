package protocol

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/transport"
)

// clientSubs are CLIENT's subcommands. Those a client sends on connect to
// tune what a sidecar does not have (eviction, LRU, maintenance push
// messages) answer +OK and change nothing.
func clientSubs() map[string]connCmd {
	return map[string]connCmd{
		"id":                  {arity: 2, run: (*conn).clientID},
		"getname":             {arity: 2, run: (*conn).clientGetName},
		"setname":             {arity: 3, run: (*conn).clientSetName},
		"setinfo":             {arity: 4, run: (*conn).clientSetInfo},
		"info":                {arity: 2, run: (*conn).clientInfo},
		"list":                {arity: -2, run: (*conn).clientList},
		"kill":                {arity: -3, run: (*conn).clientKill},
		"help":                {arity: 2, run: (*conn).clientHelp},
		"no-evict":            {arity: 3, run: (*conn).clientOnOff},
		"no-touch":            {arity: 3, run: (*conn).clientOnOff},
		"maint_notifications": {arity: -3, run: func(c *conn, _ [][]byte) { c.out.Simple("OK") }},
	}
}

func (c *conn) clientID([][]byte) { c.out.Int(c.id) }

func (c *conn) clientGetName([][]byte) {
	if c.name == "" {
		c.out.Null()
		return
	}
	c.out.BulkString(c.name)
}

func (c *conn) clientSetName(args [][]byte) {
	if !validClientName(args[2]) {
		c.out.Fail(commands.ErrClientName)
		return
	}
	c.setMeta(func() { c.name = string(args[2]) })
	c.out.Simple("OK")
}

// CLIENT SETINFO LIB-NAME | LIB-VER value, with Redis 7.2's errors: the
// option it does not know, or the option whose value has a space.
func (c *conn) clientSetInfo(args [][]byte) {
	attr := string(args[2])
	var i int
	switch strings.ToLower(attr) {
	case "lib-name":
		i = 0
	case "lib-ver":
		i = 1
	default:
		c.out.Failf(commands.ErrUnrecognizedOption, attr)
		return
	}
	if !validClientName(args[3]) {
		c.out.Failf(commands.ErrClientAttr, attr)
		return
	}
	c.setMeta(func() { c.lib[i] = string(args[3]) })
	c.out.Simple("OK")
}

// setMeta changes what CLIENT LIST shows of c, under c.metaMu: CLIENT LIST
// on another loop reads it. The loop itself reads its own fields freely.
func (c *conn) setMeta(f func()) {
	c.metaMu.Lock()
	f()
	c.metaMu.Unlock()
}

func (c *conn) clientInfo([][]byte) {
	c.out.Verbatim(c.clientLine() + "\n")
}

// CLIENT NO-EVICT | NO-TOUCH ON | OFF
func (c *conn) clientOnOff(args [][]byte) {
	switch strings.ToLower(string(args[2])) {
	case "on", "off":
		c.out.Simple("OK")
	default:
		c.out.Fail(commands.ErrSyntax)
	}
}

// clientLine is the connection's line in CLIENT LIST, in Redis 7.2's
// fields and order. What a sidecar does not have (databases, pub/sub,
// transactions, client-side caching, query buffers it does not measure)
// reads as Redis shows it for an idle connection that never used it; cmd,
// the last command, is not tracked (a cost on every command) and reads
// NULL, as for a connection that has run none.
func (c *conn) clientLine() string {
	c.metaMu.Lock()
	name, lib, proto := c.name, c.lib, c.proto
	c.metaMu.Unlock()
	if proto == 0 {
		proto = 2
	}
	addr, laddr, flags := c.addr, c.laddr, "N"
	if c.unix {
		// Redis shows a unix socket's path with port 0.
		addr, laddr, flags = laddr+":0", laddr+":0", "U"
	}
	now := time.Now().Unix()
	user := "default"
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=NULL user=%s redir=-1 resp=%d lib-name=%s lib-ver=%s",
		c.id, addr, laddr, c.fd, name, now-c.created, now-c.lastInput.Load(), flags, user, proto, lib[0], lib[1])
}

// client is an open connection with its handle, which other goroutines
// may use.
type client struct {
	*conn
	h transport.Handle
}

// clientsByID lists the open connections by id.
func (s *Server) clientsByID() []client {
	s.mu.Lock()
	list := make([]client, 0, len(s.conns))
	for c := range s.conns {
		if c.handle != nil {
			list = append(list, client{c, c.handle})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(list, func(a, b client) int { return int(a.id - b.id) })
	return list
}

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...]
func (c *conn) clientList(args [][]byte) {
	keep := func(client) bool { return true }
	switch {
	case len(args) == 2:
	case len(args) == 4 && strings.EqualFold(string(args[2]), "type"):
		switch strings.ToLower(string(args[3])) {
		case "normal":
		case "master", "replica", "slave", "pubsub":
			keep = func(client) bool { return false }
		default:
			c.out.Failf(commands.ErrUnknownClientType, args[3])
			return
		}
	case len(args) > 3 && strings.EqualFold(string(args[2]), "id"):
		ids := map[int64]bool{}
		for _, a := range args[3:] {
			id, err := strconv.ParseInt(string(a), 10, 64)
			if err != nil {
				c.out.Fail(commands.ErrInvalidClientID)
				return
			}
			ids[id] = true
		}
		keep = func(o client) bool { return ids[o.id] }
	default:
		c.out.Fail(commands.ErrSyntax)
		return
	}
	var b strings.Builder
	for _, o := range c.srv.clientsByID() {
		if keep(o) {
			b.WriteString(o.clientLine())
			b.WriteByte('\n')
		}
	}
	c.out.Verbatim(b.String())
}

// CLIENT KILL addr | CLIENT KILL [ID id] [ADDR addr] [LADDR addr]
// [TYPE type] [USER user] [SKIPME yes|no], as Redis: the old form answers
// +OK or an error, the new one the number of connections closed.
func (c *conn) clientKill(args [][]byte) {
	var id int64
	var addr, laddr string
	skipMe, none := true, false
	if len(args) == 3 {
		addr, skipMe = string(args[2]), false
	} else {
		for i := 2; i < len(args); i += 2 {
			if i+1 >= len(args) {
				c.out.Fail(commands.ErrSyntax)
				return
			}
			v := string(args[i+1])
			switch strings.ToLower(string(args[i])) {
			case "id":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 1 {
					c.out.Fail(commands.ErrClientIDRange)
					return
				}
				id = n
			case "addr":
				addr = v
			case "laddr":
				laddr = v
			case "type":
				switch strings.ToLower(v) {
				case "normal":
				case "master", "replica", "slave", "pubsub":
					none = true
				default:
					c.out.Failf(commands.ErrUnknownClientType, v)
					return
				}
			case "user":
				if v != "default" {
					c.out.Failf(commands.ErrNoSuchUser, v)
					return
				}
			case "skipme":
				switch strings.ToLower(v) {
				case "yes":
					skipMe = true
				case "no":
					skipMe = false
				default:
					c.out.Fail(commands.ErrSyntax)
					return
				}
			default:
				c.out.Fail(commands.ErrSyntax)
				return
			}
		}
	}
	killed := 0
	for _, o := range c.srv.clientsByID() {
		switch {
		case none,
			id != 0 && o.id != id,
			addr != "" && o.addr != addr,
			laddr != "" && o.laddr != laddr,
			o.conn == c && skipMe:
			continue
		}
		killed++
		if o.conn == c {
			c.st.quitNow() // after this reply, as Redis
			continue
		}
		o.h.Close()
	}
	if len(args) == 3 {
		if killed == 0 {
			c.out.Fail(commands.ErrNoSuchClient)
		} else {
			c.out.Simple("OK")
		}
		return
	}
	c.out.Int(int64(killed))
}

// CLIENT HELP: Redis's text for the subcommands prepkey has.
func (c *conn) clientHelp([][]byte) {
	help(&c.out, "CLIENT",
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
