// Package conncmd answers the connection commands a Redis client expects
// of a server beside the PK commands: PING, ECHO, QUIT, SELECT, AUTH,
// HELLO, CLIENT, COMMAND and INFO. One table (Table) maps each name, and a
// container's subcommands (CLIENT LIST), to a small function from the
// parsed arguments to a reply; the server's own commands that belong in it
// (MULTI, EXEC, DISCARD, WATCH, UNWATCH: package protocol's transactions)
// are given to New, so that they are looked up, listed and counted alike.
//
// It owns those commands' replies and their pure parts: a CLIENT LIST line
// (Line), CLIENT LIST's and CLIENT KILL's filters, INFO's sections, what
// COMMAND lists (what COMMAND DOCS says of each command is package
// cmddocs'). It sees its connection and the server only through the
// interfaces it owns, Conn and Server, which package protocol implements.
// It may not touch sockets or event loops (another connection is closed
// through its Peer), reach the store but by the backend ping it is given
// (Server.PingBackend: INFO's, which is why protocol runs INFO off the
// loop: Cmd.OffLoop), or spell an error reply (the catalogue,
// commands.ErrCode).
package conncmd

import (
	"context"
	"net"

	"github.com/prepkey/prepkey/protocol/resp"
	"github.com/prepkey/prepkey/protocol/stats"
)

// Conn is the connection a command runs on, as a connection command may
// read and change it.
type Conn interface {
	// Out is where the reply is written; its RESP3 is the protocol the
	// connection speaks, which HELLO sets.
	Out() *resp.Writer
	// Authed reports whether the connection may run every command: it
	// has authenticated, or no password is set.
	Authed() bool
	// Authenticate lets the connection run every command (AUTH, HELLO).
	Authenticate()
	// Client is what CLIENT LIST shows of the connection.
	Client() Client
	// SetMeta changes what the client says of itself. f runs under the
	// connection's lock: CLIENT LIST on another loop reads it.
	SetMeta(f func(*Meta))
	// Quit has the connection closed once the replies so far are
	// written (QUIT, CLIENT KILL of itself), as Redis does.
	Quit()
}

// Server is what a connection command may read of the server it runs on,
// and do to the other connections.
type Server interface {
	// Clients lists the open connections by id (CLIENT LIST, CLIENT
	// KILL): they may be served on other loops.
	Clients() []Peer
	// Info is what INFO shows of the server.
	Info() ServerInfo
	// PingBackend reports whether the backend can serve now (INFO's
	// backend_ready). It may wait on the backend.
	PingBackend(ctx context.Context) error
}

// ServerInfo is what INFO shows of the server, beside the process's own
// facts (its memory, its CPU time).
type ServerInfo struct {
	// Stats are its counters and settings: clients, commands, errors,
	// uptime, its version and its backend's kind.
	Stats stats.Snapshot
	// Listen is the address it accepts on (tcp_port); nil before it does.
	Listen net.Addr
}

// Meta is what a client says of itself, which CLIENT LIST shows: changed
// by its own commands (CLIENT SETNAME, CLIENT SETINFO, HELLO) through
// Conn.SetMeta.
type Meta struct {
	Name  string
	Lib   [2]string // CLIENT SETINFO lib-name, lib-ver
	Proto int       // 2, or 3 after HELLO 3 (0: never said, 2)
}

// Client is what CLIENT LIST shows of a connection: the socket's, set
// when it opens, what the client said of itself, and when it last sent
// something.
type Client struct {
	ID int64
	// Addr and LAddr are the socket's remote and local addresses, as the
	// socket gives them (a unix socket's path is LAddr).
	Addr, LAddr string
	FD          int
	Unix        bool  // a unix socket
	Created     int64 // Unix seconds
	LastInput   int64 // Unix seconds of the last input
	Meta
}

// Peer is an open connection as CLIENT LIST and CLIENT KILL see it from
// another: what it shows, and its Close, which any goroutine may call.
type Peer struct {
	Client
	Closer
}

// Closer closes a connection (CLIENT KILL).
type Closer interface{ Close() }
