// Package loopconn is an event loop's own connection to a store it
// reaches over the wire (a standalone Redis, through redis.Wire): a store
// whose opener says backend.DriveWire. The loop writes a batch's requests to
// it and goes on serving clients; the replies come back as input on that
// connection, on the same loop, and are read in order. So no goroutine
// waits on the store, and several batches are on their way at once: Redis
// works on one while the loop reads the next requests. Waiting for each
// batch held the loop for the round trip, and the sidecar reached only
// 0.75 of direct EVALSHA's throughput at pipeline 1.
//
// The store makes them now (Loops, loops.go: one Conn per event loop, on
// the loop's first submission; redis.Store.UseLoopConns): a submission
// from a gnet loop is written on that loop's Conn and finished on the
// loop (issue 33). Until the server submits, package protocol still drives
// it as before: its wire driver makes one Conn per event loop
// (New), sends batches on it while it is up (Ready, Send), and hands it
// the gnet events of its connection (OnOpen, OnTraffic, OnClose), as it
// does a client's. A Conn answers each Batch once, on the loop. It sees
// ops and results, never commands or replies (package commands): the wire
// driver parses a batch and writes its replies.
//
// It lives under backend/redis (it was protocol/upstream) because it is
// that store's way of completing a batch: it needs only package backend,
// the watchdog and gnet, nothing of the server. It is a package of its own,
// not part of package redis, so that the store's other users (the
// WebAssembly build, storetest, tools) do not link gnet.
//
// This file builds everywhere (package protocol names Wire in its Config);
// the connection itself (conn.go) needs gnet, which the WebAssembly build
// does not have.
package loopconn

import (
	"context"
	"net"
	"time"

	"github.com/prepkey/prepkey/backend"
)

// Wire is a store's requests and replies on the wire (redis.Wire).
type Wire interface {
	// Dial opens a connection ready for requests.
	Dial(ctx context.Context) (net.Conn, error)
	// Append appends the requests of a batch's ops: one or a few script
	// calls, each running several ops (redis.Wire: block.lua, bounded so
	// that one call holds Redis for at most about a millisecond). A scan
	// (backend.OpScan: many round trips, never one request) has none: the
	// Batch runs it through the store's client in its place (Batch.Answer).
	Append(dst []byte, ops []backend.Op) []byte
	// Read decodes, at the start of b, the reply to the first request that
	// Append wrote for ops, into res[:k]: it answers ops[:k]; ops[0] is
	// never a scan. n is 0 until b holds a complete reply. again asks for
	// ops[:k] to be run again through the store's own client (the backend
	// lost its scripts: none of them ran; Batch.Answer). Where one request
	// ends must follow from the ops alone, from the
	// first: the Conn calls Read with the ops from the first unanswered.
	Read(b []byte, ops []backend.Op, res []backend.Result) (n, k int, again bool)
	// Lost is op's failure when the connection went before its reply.
	Lost(op backend.Op, cause error) error
	// Late is the cause given to Lost when no reply came within the
	// deadline (Config.Timeout).
	Late() error

	// MaxReply bounds one reply (redis.Wire: what one script call answers
	// within --max-value-bytes): a connection holding more than MaxReply
	// bytes of a reply not yet complete is closed, and its batches fail
	// as lost, instead of buffering whatever the backend sends (a reply
	// the backend should never send: the scripts refuse a larger record
	// themselves).
	MaxReply() int

	// The writes' confirmation by replicas (redis.Wire with ?wait=N):
	// after a batch's requests the Conn sends one more (WAIT), on the
	// same connection, whose reply decides the writes' outcome. Every
	// Wire has it, declared here rather than found by assertion; a Wire
	// without replicas to wait for answers false from AppendSync.
	//
	// AppendSync appends the request that follows ops' requests; ok is
	// false when none is needed (no write among ops, or no wait set).
	AppendSync(dst []byte, ops []backend.Op) (out []byte, ok bool)
	// ReadSync decodes its reply at the start of b (n is 0 until it is
	// complete) and fails the writes in res that it does not confirm.
	ReadSync(b []byte, ops []backend.Op, res []backend.Result) (n int)
	// FailSync fails the writes in res when the connection went before
	// the reply.
	FailSync(ops []backend.Op, res []backend.Result, cause error)
}

// Batch is a batch of PK commands sent on a Conn (package protocol's
// runs of one loop's connections), as ops: the Conn sees no command and
// writes no reply, it takes ops to the store and hands back their results.
type Batch interface {
	// Ops are the batch's ops, in order (its commands, parsed and checked
	// by whoever made the batch).
	Ops() []backend.Op
	// Stored reports, on the loop, that the store answered the batch's n
	// ops in took (metrics); not called when the connection dropped.
	Stored(n int, took time.Duration)
	// Answer has the results, res[k] for Ops()[k]: once, on the loop.
	// again lists, in order, the ops that have no result here and are to
	// go through the store's own client: a scan (it has no request on the
	// wire) and an op answered NOSCRIPT (the store lost its scripts).
	Answer(res []backend.Result, again []int)
}
