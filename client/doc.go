// Package client is a typed helper for prepkey's PK commands over go-redis
// v9: one method per command, the replies read into Go values, the error
// replies into errors that errors.Is can tell apart, and UsingPrepare, the
// prepare / run / roll back on failure flow a reservation exists for.
//
//	pk := client.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6380"}))
//	err := pk.UsingPrepare(ctx, "username", "alice", []byte(`{"userId":"42"}`),
//		func(ctx context.Context, prepared bool) error {
//			if !prepared {
//				return ErrTaken // a live record holds "alice"
//			}
//			return emitSignedUp(ctx) // an error here releases "alice"
//		}, client.TTL(10*time.Minute))
//
// # Clients
//
// New takes any go-redis redis.UniversalClient: a *redis.Client (RESP2 or
// RESP3) on one sidecar, the same behind Sentinel (NewFailoverClient, whose
// Sentinels name a sidecar as the master), or a *redis.ClusterClient or
// *redis.Ring over several sidecars of one backend. PK commands declare no
// Redis keys, so a cluster client sends each to any of its nodes, which is
// right because the sidecars share the records (a Scan's cursor is good on
// any of them). A sidecar is not a Redis Cluster node: a ClusterClient needs
// its ClusterSlots option to list the sidecars. The tests run a Client over
// each of them.
//
// # Keys and values
//
// Namespaces and keys are strings (a Go string holds any bytes, so binary
// keys work); values are []byte, as json.Marshal returns them, and come back
// as []byte (empty, not nil, for an empty value; a nil value is sent as the
// empty value). Arguments that every sidecar refuses (a namespace that is not
// 1 to 64 bytes of A-Z a-z 0-9 _ . -, an empty key, a TTL below 1 ms, two
// expiries, MPrepare's duplicate keys, ChangeKey's old key equal to the new)
// are refused before anything is sent, with an error matching
// ErrInvalidArgument. Limits that depend on the sidecar's flags
// (--max-key-bytes, --max-value-bytes) and its clock (an ExpireAt already
// past) are the sidecar's to answer: a *ReplyError with its -ERR text.
//
// # Errors
//
// A failure is never false: false always means the command's own condition
// did not hold (a live record holds the key, IfEq differs, no record). Every
// error reply is a *ReplyError; errors.Is matches ErrUnavailable for
// -UNAVAILABLE (the backend failed: the outcome is unknown, look with
// GetValue before retrying) and ErrMismatch for ChangeKey's -MISMATCH.
// Connection errors and a context's errors come back wrapped as go-redis
// returned them (errors.Is(err, context.Canceled) holds). OutcomeUnknown is
// the one question to ask of an error: did the command maybe take effect?
// True for -UNAVAILABLE, connection errors, timeouts and ctx's errors once
// the command was on its way; false for what was never sent and for the
// other error replies.
//
// go-redis sends a command again after some connection errors (MaxRetries,
// 3 by default). A PK.PREPARE whose reply was lost and which go-redis sends
// again answers false, for the reservation its first attempt made.
// UsingPrepare resolves that, and an outcome-unknown error, itself: it reads
// the record, and a live record holding exactly its value is its own (see
// UsingPrepare for the rule and its limit). A plain Prepare, MPrepare or
// ChangeKey cannot tell: where their false (or ChangeKey's ErrMismatch) must
// be exact, set MaxRetries: -1 and look with GetValue after an error
// OutcomeUnknown reports.
//
// # Context
//
// Every method checks ctx before sending and returns its error without
// sending anything when it is done (OutcomeUnknown false). When ctx is done
// while a command is on its way, the method returns ctx's error at once
// (go-redis alone would wait for the reply, or honour only a deadline with
// ContextTimeoutEnabled); the command may still reach the sidecar and take
// effect, so the outcome is unknown (OutcomeUnknown true). go-redis reads
// the late reply in the background and puts the connection back in its
// pool; a GetValue sent meanwhile goes on another connection and may
// overtake the command. UsingPrepare is the exception: it waits for its
// prepare's reply, to know what to roll back, and releases what it holds
// before it returns.
//
// # Typed keys
//
// Key[T] (NewKey) binds a namespace to a value type and a Codec; the
// default, JSON, writes the bytes Jackson writes for the Kotlin data class
// the Go struct mirrors, so that IFEQ matches records Wow writes.
//
// # Module
//
// The package is the module github.com/prepkey/prepkey/client, apart from
// the sidecar's: it requires go-redis only (its tests also testify and
// redcon), at go 1.23. Its releases are tagged client/vX.Y.Z in the
// repository (go get github.com/prepkey/prepkey/client@vX.Y.Z), apart from
// the sidecar's vX.Y.Z.
package client
