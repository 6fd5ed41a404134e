// Package cmddocs is what COMMAND INFO and COMMAND DOCS say of each command
// (its flags, ACL categories, tips, summary, arguments), in Redis 7's format,
// and how COMMAND DOCS writes it.
//
// It owns that table only: it may not know connections, the store, or which
// commands the server answers (package conncmd lists those and asks here
// for their docs).
package cmddocs

import (
	"strings"

	"github.com/prepkey/prepkey/protocol/resp"
)

// Redis 7's format. redis-cli builds its hints and `help` from COMMAND DOCS, so a
// command without docs is a command without help there: a test holds every
// command COMMAND lists to an entry here.
//
// The connection commands carry Redis 7.0's own texts, flags, ACL categories
// and tips (redis-server 7.0 is what the compat test compares with); the
// subcommands that came later (CLIENT SETINFO, NO-TOUCH: 7.2) carry the
// texts of the release that added them. The PK commands are documented as
// Redis documents a module's commands: group "module", with a "module"
// field naming prepkey, so `help @module` in redis-cli lists them.

// cmdMeta describes one command or subcommand ("client|list").
type cmdMeta struct {
	// COMMAND INFO. flags nil means the defaults of allCommands.
	flags, acl, tips []string

	// COMMAND DOCS.
	summary, since, group, complexity string
	module                            string // for a module-style command
	history                           [][2]string
	args                              []argDoc
}

// argDoc is one argument in COMMAND DOCS. typ is one of Redis's argument
// types: string, integer, double, key, pattern, unix-time, pure-token,
// oneof, block.
type argDoc struct {
	name, typ, token, since string
	deprecatedSince         string
	optional, multiple      bool
	args                    []argDoc // of a oneof or a block
}

// opt marks an argument optional.
func opt(a argDoc) argDoc { a.optional = true; return a }

func str(name string) argDoc     { return argDoc{name: name, typ: "string"} }
func integer(name string) argDoc { return argDoc{name: name, typ: "integer"} }
func token(tok, name, typ string) argDoc {
	return argDoc{name: name, typ: typ, token: tok}
}

// pure is a keyword alone; Redis shows pure tokens in upper case.
func pure(tok string) argDoc {
	return argDoc{name: lowerASCII(tok), typ: "pure-token", token: strings.ToUpper(tok)}
}
func oneof(name string, args ...argDoc) argDoc {
	return argDoc{name: name, typ: "oneof", args: args}
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// expiration is the TTL option of the PK commands, named as in SET's docs.
func expiration(keepTTL bool) argDoc {
	a := oneof("expiration",
		token("EX", "seconds", "integer"),
		token("PX", "milliseconds", "integer"),
		token("EXAT", "unix-time-seconds", "unix-time"),
		token("PXAT", "unix-time-milliseconds", "unix-time"))
	if keepTTL {
		a.args = append(a.args, pure("KEEPTTL"))
	}
	return opt(a)
}

// pkSince is the prepkey release that has the PK commands.
const pkSince = "0.1.0"

func pkDoc(summary, complexity string, args ...argDoc) cmdMeta {
	return cmdMeta{summary: summary, since: pkSince, group: "module", module: "prepkey",
		complexity: complexity, args: args}
}

var (
	connFlags    = []string{"loading", "stale", "fast"}
	noAuthFlags  = []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}
	fastConn     = []string{"@fast", "@connection"}
	slowConn     = []string{"@slow", "@connection"}
	adminConn    = []string{"@admin", "@slow", "@dangerous", "@connection"}
	clientFlags  = []string{"noscript", "loading", "stale"}
	adminFlags   = []string{"admin", "noscript", "loading", "stale"}
	commandFlags = []string{"loading", "stale"}
	txFlags      = []string{"noscript", "loading", "stale", "fast", "allow_busy"}
	onOff        = oneof("enabled", pure("ON"), pure("OFF"))
	nondet       = []string{"nondeterministic_output"}
	nondetOrder  = []string{"nondeterministic_output_order"}
)

// commandMeta is the table, by lower-case full name.
var commandMeta = map[string]cmdMeta{
	"pk.prepare": pkDoc("Reserves a key for a value unless a live record holds it", "O(1)",
		str("name"), str("key"), str("value"), expiration(false)),
	"pk.get": pkDoc("Returns the value of a key's live record", "O(1)",
		str("name"), str("key")),
	"pk.getvalue": pkDoc("Returns the value and expiry (ttlAt, Unix ms, -1 forever) of a key's record, live or expired", "O(1)",
		str("name"), str("key")),
	"pk.rollback": pkDoc("Deletes a key's record, optionally only if it holds a value", "O(1)",
		str("name"), str("key"), opt(token("IFEQ", "value", "string"))),
	"pk.reprepare": pkDoc("Replaces the value of a live record; with FROM, moves a reservation from old-key to key (FROM needs IFEQ)", "O(1)",
		str("name"), str("key"), str("value"), opt(token("FROM", "old-key", "string")),
		opt(token("IFEQ", "current-value", "string")), expiration(true)),
	"pk.mprepare": pkDoc("Reserves several keys, all or none", "O(N) where N is the number of keys",
		integer("numkeys"),
		argDoc{name: "reservation", typ: "block", multiple: true, args: []argDoc{str("name"), str("key"), str("value")}},
		expiration(false)),
	"pk.scan": pkDoc("Iterates over the records of a namespace", "O(1) for every call. O(N) for a complete iteration, where N is the number of records in the namespace",
		str("name"), str("cursor"), opt(token("MATCH", "pattern", "pattern")),
		opt(token("COUNT", "count", "integer")), opt(oneof("state", pure("LIVE"), pure("EXPIRED")))),

	"ping": {flags: []string{"fast"}, acl: fastConn, tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"},
		summary: "Ping the server", since: "1.0.0", group: "connection", complexity: "O(1)",
		args: []argDoc{opt(str("message"))}},
	"echo": {flags: connFlags, acl: fastConn,
		summary: "Echo the given string", since: "1.0.0", group: "connection", complexity: "O(1)",
		args: []argDoc{str("message")}},
	"quit": {flags: noAuthFlags, acl: fastConn,
		summary: "Close the connection", since: "1.0.0", group: "connection", complexity: "O(1)"},
	"auth": {flags: noAuthFlags, acl: fastConn,
		summary: "Authenticate to the server", since: "1.0.0", group: "connection",
		complexity: "O(N) where N is the number of passwords defined for the user",
		history:    [][2]string{{"6.0.0", "Added ACL style (username and password)."}},
		args:       []argDoc{opt(argDoc{name: "username", typ: "string", since: "6.0.0"}), str("password")}},
	"hello": {flags: noAuthFlags, acl: fastConn,
		summary: "Handshake with Redis", since: "6.0.0", group: "connection", complexity: "O(1)",
		history: [][2]string{{"6.2.0", "`protover` made optional; when called without arguments the command reports the current connection's context."}},
		args: []argDoc{opt(argDoc{name: "arguments", typ: "block", args: []argDoc{
			integer("protover"),
			opt(argDoc{name: "username_password", typ: "block", token: "AUTH", args: []argDoc{str("username"), str("password")}}),
			opt(token("SETNAME", "clientname", "string")),
		}})}},
	"select": {flags: connFlags, acl: fastConn,
		summary: "Change the selected database for the current connection", since: "1.0.0", group: "connection", complexity: "O(1)",
		args: []argDoc{integer("index")}},
	"info": {flags: commandFlags, acl: []string{"@slow", "@dangerous"}, tips: []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
		summary: "Get information and statistics about the server", since: "1.0.0", group: "server", complexity: "O(1)",
		history: [][2]string{{"7.0.0", "Added support for taking multiple section arguments."}},
		args:    []argDoc{opt(argDoc{name: "section", typ: "string", multiple: true})}},

	"client": {flags: []string{}, acl: []string{"@slow"},
		summary: "A container for client connection commands", since: "2.4.0", group: "connection",
		complexity: "Depends on subcommand."},
	"client|id": {flags: clientFlags, acl: slowConn,
		summary: "Returns the client ID for the current connection", since: "5.0.0", group: "connection", complexity: "O(1)"},
	"client|getname": {flags: clientFlags, acl: slowConn,
		summary: "Get the current connection name", since: "2.6.9", group: "connection", complexity: "O(1)"},
	"client|setname": {flags: clientFlags, acl: slowConn,
		summary: "Set the current connection name", since: "2.6.9", group: "connection", complexity: "O(1)",
		args: []argDoc{str("connection-name")}},
	"client|setinfo": {flags: append(clientFlags[:3:3], "sentinel"), acl: []string{"@slow", "@connection"},
		tips:    []string{"request_policy:all_nodes", "response_policy:all_succeeded"},
		summary: "Sets information specific to the client or connection.", since: "7.2.0", group: "connection", complexity: "O(1)",
		args: []argDoc{oneof("attr", token("lib-name", "libname", "string"), token("lib-ver", "libver", "string"))}},
	"client|info": {flags: clientFlags, acl: slowConn, tips: nondet,
		summary: "Returns information about the current client connection.", since: "6.2.0", group: "connection", complexity: "O(1)"},
	"client|list": {flags: adminFlags, acl: adminConn, tips: nondet,
		summary: "Get the list of client connections", since: "2.4.0", group: "connection",
		complexity: "O(N) where N is the number of client connections",
		history: [][2]string{{"2.8.12", "Added unique client `id` field."}, {"5.0.0", "Added optional `TYPE` filter."},
			{"6.0.0", "Added `user` field."},
			{"6.2.0", "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter."},
			{"7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."}, {"7.0.3", "Added `ssub` field."}},
		args: []argDoc{
			opt(argDoc{name: "normal_master_replica_pubsub", typ: "oneof", token: "TYPE", since: "5.0.0",
				args: []argDoc{pure("normal"), pure("master"), pure("replica"), pure("pubsub")}}),
			opt(argDoc{name: "id", typ: "block", token: "ID", since: "6.2.0",
				args: []argDoc{{name: "client-id", typ: "integer", multiple: true}}}),
		}},
	"client|kill": {flags: adminFlags, acl: adminConn,
		summary: "Kill the connection of a client", since: "2.4.0", group: "connection",
		complexity: "O(N) where N is the number of client connections",
		history: [][2]string{{"2.8.12", "Added new filter format."}, {"2.8.12", "`ID` option."},
			{"3.2.0", "Added `master` type in for `TYPE` option."},
			{"5.0.0", "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility."},
			{"6.2.0", "`LADDR` option."}},
		args: []argDoc{oneof("filter",
			argDoc{name: "ip:port", typ: "string", deprecatedSince: "2.8.12"},
			argDoc{name: "new-format", typ: "oneof", multiple: true, args: []argDoc{
				opt(argDoc{name: "client-id", typ: "integer", token: "ID", since: "2.8.12"}),
				opt(argDoc{name: "normal_master_slave_pubsub", typ: "oneof", token: "TYPE", since: "2.8.12",
					args: []argDoc{pure("normal"), {name: "master", typ: "pure-token", token: "MASTER", since: "3.2.0"},
						pure("slave"), {name: "replica", typ: "pure-token", token: "REPLICA", since: "5.0.0"}, pure("pubsub")}}),
				opt(token("USER", "username", "string")),
				opt(token("ADDR", "ip:port", "string")),
				opt(argDoc{name: "ip:port", typ: "string", token: "LADDR", since: "6.2.0"}),
				opt(token("SKIPME", "yes/no", "string")),
			}})}},
	"client|help": {flags: commandFlags, acl: slowConn,
		summary: "Show helpful text about the different subcommands", since: "5.0.0", group: "connection", complexity: "O(1)"},
	"client|no-evict": {flags: adminFlags, acl: adminConn,
		summary: "Set client eviction mode for the current connection", since: "7.0.0", group: "connection", complexity: "O(1)",
		args: []argDoc{onOff}},
	"client|no-touch": {flags: clientFlags, acl: slowConn,
		summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", since: "7.2.0", group: "connection", complexity: "O(1)",
		args: []argDoc{onOff}},
	"client|maint_notifications": {flags: clientFlags, acl: slowConn,
		summary: "Enables or disables maintenance notifications (accepted and ignored: a sidecar has no maintenance to announce)", since: "8.2.0", group: "connection", complexity: "O(1)",
		args: []argDoc{onOff, opt(argDoc{name: "option", typ: "string", multiple: true})}},

	"command": {flags: commandFlags, acl: slowConn, tips: nondetOrder,
		summary: "Get array of Redis command details", since: "2.8.13", group: "server",
		complexity: "O(N) where N is the total number of Redis commands"},
	"command|count": {flags: commandFlags, acl: slowConn,
		summary: "Get total number of Redis commands", since: "2.8.13", group: "server", complexity: "O(1)"},
	"command|docs": {flags: commandFlags, acl: slowConn, tips: nondetOrder,
		summary: "Get array of specific Redis command documentation", since: "7.0.0", group: "server",
		complexity: "O(N) where N is the number of commands to look up",
		args:       []argDoc{opt(argDoc{name: "command-name", typ: "string", multiple: true})}},
	"command|info": {flags: commandFlags, acl: slowConn, tips: nondetOrder,
		summary: "Get array of specific Redis command details, or all when no argument is given.", since: "2.8.13", group: "server",
		complexity: "O(N) where N is the number of commands to look up",
		history:    [][2]string{{"7.0.0", "Allowed to be called with no argument to get info on all commands."}},
		args:       []argDoc{opt(argDoc{name: "command-name", typ: "string", multiple: true})}},
	"command|list": {flags: commandFlags, acl: slowConn, tips: nondetOrder,
		summary: "Get an array of Redis command names", since: "7.0.0", group: "server",
		complexity: "O(N) where N is the total number of Redis commands"},
	"command|help": {flags: commandFlags, acl: slowConn,
		summary: "Show helpful text about the different subcommands", since: "5.0.0", group: "server", complexity: "O(1)"},

	"multi": {flags: txFlags, acl: []string{"@fast", "@transaction"},
		summary: "Mark the start of a transaction block", since: "1.2.0", group: "transactions", complexity: "O(1)"},
	"exec": {flags: []string{"noscript", "loading", "stale", "skip_slowlog"}, acl: []string{"@slow", "@transaction"},
		summary: "Execute all commands issued after MULTI", since: "1.2.0", group: "transactions",
		complexity: "Depends on commands in the transaction"},
	"discard": {flags: txFlags, acl: []string{"@fast", "@transaction"},
		summary: "Discard all commands issued after MULTI", since: "2.0.0", group: "transactions",
		complexity: "O(N), when N is the number of queued commands"},
	"watch": {flags: txFlags, acl: []string{"@fast", "@transaction"},
		summary: "Not supported by prepkey: use IFEQ conditions", since: "2.2.0", group: "transactions", complexity: "O(1)",
		args: []argDoc{{name: "key", typ: "string", multiple: true}}},
	"unwatch": {flags: txFlags, acl: []string{"@fast", "@transaction"},
		summary: "Not supported by prepkey: use IFEQ conditions", since: "2.2.0", group: "transactions", complexity: "O(1)"},
}

// Flags are name's COMMAND INFO flags (nil for the server's defaults),
// ACL categories and tips.
func Flags(name string) (flags, acl, tips []string) {
	m := commandMeta[name]
	return m.flags, m.acl, m.tips
}

// Complete reports whether name has docs with a summary, a since, a group
// and a complexity: redis-cli's hint and help need them.
func Complete(name string) bool {
	m, ok := commandMeta[name]
	return ok && m.summary != "" && m.since != "" && m.group != "" && m.complexity != ""
}

// Write writes name's COMMAND DOCS map; subs are its subcommands' full
// names. A command without docs (a test holds that there is none) still
// gets the fields redis-cli needs.
func Write(w *resp.Writer, name string, subs []string) {
	m, ok := commandMeta[name]
	if !ok {
		m = cmdMeta{summary: "(no documentation)", group: "server"}
	}
	writeDocs(w, m, subs)
}

// writeDocs writes one command's COMMAND DOCS map; subs are its
// subcommands' full names.
func writeDocs(w *resp.Writer, m cmdMeta, subs []string) {
	n := 1 // group
	for _, s := range []string{m.summary, m.since, m.complexity, m.module} {
		if s != "" {
			n++
		}
	}
	if m.history != nil {
		n++
	}
	if m.args != nil {
		n++
	}
	if subs != nil {
		n++
	}
	w.MapHeader(n)
	pair := func(k, v string) {
		if v != "" {
			w.BulkString(k)
			w.BulkString(v)
		}
	}
	pair("summary", m.summary)
	pair("since", m.since)
	pair("group", m.group)
	pair("complexity", m.complexity)
	pair("module", m.module)
	if m.history != nil {
		w.BulkString("history")
		w.SetHeader(len(m.history))
		for _, h := range m.history {
			w.Array(2)
			w.BulkString(h[0])
			w.BulkString(h[1])
		}
	}
	if m.args != nil {
		w.BulkString("arguments")
		writeArgDocs(w, m.args)
	}
	if subs != nil {
		w.BulkString("subcommands")
		w.MapHeader(len(subs))
		for _, s := range subs {
			w.BulkString(s)
			writeDocs(w, commandMeta[s], nil)
		}
	}
}

// writeArgDocs writes an argument list as Redis 7.0 does (7.2 adds a
// display_text field, which clients read only when present).
func writeArgDocs(w *resp.Writer, args []argDoc) {
	w.Array(len(args))
	for _, a := range args {
		n := 2
		var flags []string
		if a.optional {
			flags = append(flags, "optional")
		}
		if a.multiple {
			flags = append(flags, "multiple")
		}
		for _, s := range []string{a.token, a.since, a.deprecatedSince} {
			if s != "" {
				n++
			}
		}
		if flags != nil {
			n++
		}
		if a.typ == "oneof" || a.typ == "block" {
			n++
		}
		w.MapHeader(n)
		w.BulkString("name")
		w.BulkString(a.name)
		w.BulkString("type")
		w.BulkString(a.typ)
		if a.token != "" {
			w.BulkString("token")
			w.BulkString(a.token)
		}
		if a.since != "" {
			w.BulkString("since")
			w.BulkString(a.since)
		}
		if a.deprecatedSince != "" {
			w.BulkString("deprecated_since")
			w.BulkString(a.deprecatedSince)
		}
		if flags != nil {
			w.BulkString("flags")
			w.StatusSet(flags)
		}
		if a.typ == "oneof" || a.typ == "block" {
			w.BulkString("arguments")
			writeArgDocs(w, a.args)
		}
	}
}
