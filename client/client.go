package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client sends prepkey's PK commands through a go-redis client. It holds no
// state of its own: it is safe for concurrent use as the go-redis client is,
// and as many Clients as wanted may share one go-redis client.
type Client struct {
	rdb redis.UniversalClient
}

// New returns a Client over rdb, a go-redis client connected to a sidecar:
// a *redis.Client, or a *redis.ClusterClient or *redis.Ring whose nodes are
// sidecars of one backend (PK commands declare no Redis keys, so a cluster
// client sends each to any node). The Client does not own rdb: closing it is
// the caller's.
func New(rdb redis.UniversalClient) *Client { return &Client{rdb: rdb} }

// Record is a reservation as PK.GETVALUE returns it.
type Record struct {
	// Value is the reservation's value (empty, not nil, for an empty value).
	Value []byte
	// ExpiresAt is when the record expires (millisecond precision, in the
	// local time zone); the zero time when Forever.
	ExpiresAt time.Time
	// Forever is true for a record without expiry.
	Forever bool
}

// Live tells whether the record is live at now: forever, or now before
// ExpiresAt. GetValue and Scan return expired records too while the sidecar
// retains them (--expired-retention).
func (r Record) Live(now time.Time) bool { return r.Forever || now.Before(r.ExpiresAt) }

// ScanRecord is one record of a Scan.
type ScanRecord struct {
	Key string
	Record
}

// Entry is one (namespace, key, value) of MPrepare.
type Entry struct {
	Name  string
	Key   string
	Value []byte
}

// Prepare reserves key in namespace name for value unless a live record
// holds it (PK.PREPARE): true reserved; false a live record holds it,
// whatever its value, and nothing changed. Without an Expiry the reservation
// is forever.
func (c *Client) Prepare(ctx context.Context, name, key string, value []byte, exp ...Expiry) (bool, error) {
	return c.prepare(ctx, false, name, key, value, exp)
}

// prepare is Prepare; with waitReply it waits for the reply even when ctx
// is done meanwhile (see exchange).
func (c *Client) prepare(ctx context.Context, waitReply bool, name, key string, value []byte, exp []Expiry) (bool, error) {
	const command = "PK.PREPARE"
	if err := checkNameKey(command, name, key); err != nil {
		return false, err
	}
	ttl, err := oneExpiry(command, exp)
	if err != nil {
		return false, err
	}
	return boolReply(command)(c.exchange(ctx, command, waitReply, append([]any{name, key, value}, ttl...)))
}

// Get returns the value of key's live record (PK.GET); ok is false when
// there is none or it is expired.
func (c *Client) Get(ctx context.Context, name, key string) (value []byte, ok bool, err error) {
	const command = "PK.GET"
	if err := checkNameKey(command, name, key); err != nil {
		return nil, false, err
	}
	reply, err := c.do(ctx, command, name, key)
	if err != nil || reply == nil {
		return nil, false, err
	}
	s, isString := reply.(string)
	if !isString {
		return nil, false, unexpected(command, reply)
	}
	return []byte(s), true, nil
}

// GetValue returns key's record, live or expired while the sidecar retains
// it (PK.GETVALUE); ok is false when there is none. It is how to learn the
// outcome of a command that failed with ErrUnavailable or a connection
// error.
func (c *Client) GetValue(ctx context.Context, name, key string) (rec Record, ok bool, err error) {
	const command = "PK.GETVALUE"
	if err := checkNameKey(command, name, key); err != nil {
		return Record{}, false, err
	}
	reply, err := c.do(ctx, command, name, key)
	if err != nil || reply == nil {
		return Record{}, false, err
	}
	pair, isArray := reply.([]any)
	if !isArray || len(pair) != 2 {
		return Record{}, false, unexpected(command, reply)
	}
	rec, err = record(command, pair[0], pair[1])
	return rec, err == nil, err
}

// Rollback deletes key's record, live or expired (PK.ROLLBACK): true
// deleted; false there was none. To release only your own reservation, use
// RollbackIfEq.
func (c *Client) Rollback(ctx context.Context, name, key string) (bool, error) {
	const command = "PK.ROLLBACK"
	if err := checkNameKey(command, name, key); err != nil {
		return false, err
	}
	return c.doBool(ctx, command, name, key)
}

// RollbackIfEq deletes key's record, live or expired, if its value is value
// (PK.ROLLBACK ... IFEQ): true deleted; false there was none or it holds
// another value, and nothing was deleted.
func (c *Client) RollbackIfEq(ctx context.Context, name, key string, value []byte) (bool, error) {
	const command = "PK.ROLLBACK"
	if err := checkNameKey(command, name, key); err != nil {
		return false, err
	}
	return c.doBool(ctx, command, name, key, "IFEQ", value)
}

// Reprepare replaces the value of key's live record (PK.REPREPARE): true
// replaced; false there is no live record, or with IfEq its value is not the
// one given, and nothing changed. The new record is forever unless an
// Expiry (TTL, ExpireAt) is given; KeepTTL keeps its expiry.
func (c *Client) Reprepare(ctx context.Context, name, key string, value []byte, opts ...ReprepareOption) (bool, error) {
	const command = "PK.REPREPARE"
	if err := checkNameKey(command, name, key); err != nil {
		return false, err
	}
	var r reprepareArgs
	for _, o := range opts {
		o.applyReprepare(&r)
	}
	words, err := r.args(command)
	if err != nil {
		return false, err
	}
	return c.doBool(ctx, command, append([]any{name, key, value}, words...)...)
}

// ChangeKey moves a reservation from oldKey to newKey (a username change:
// PK.REPREPARE name newKey newValue FROM oldKey IFEQ oldValue), never left
// half done: true newKey is reserved for newValue and oldKey released
// (released too when its record is expired but retained); false a live
// record holds newKey and nothing changed; an error matching ErrMismatch
// when oldKey has no record or one with another value than oldValue, and
// nothing changed. Without an Expiry the new reservation is forever.
func (c *Client) ChangeKey(ctx context.Context, name, oldKey string, oldValue []byte, newKey string, newValue []byte, exp ...Expiry) (bool, error) {
	const command = "PK.REPREPARE"
	if err := checkNameKey(command, name, newKey); err != nil {
		return false, err
	}
	if oldKey == "" {
		return false, invalid(command, "the old key is empty")
	}
	if oldKey == newKey {
		return false, invalid(command, "the old key is the new key")
	}
	ttl, err := oneExpiry(command, exp)
	if err != nil {
		return false, err
	}
	args := append([]any{name, newKey, newValue, "FROM", oldKey, "IFEQ", oldValue}, ttl...)
	return c.doBool(ctx, command, args...)
}

// MPrepare reserves every entry's key, all or none (PK.MPREPARE): true every
// key is reserved; false a live record holds at least one of them and
// nothing changed. 1 to 64 entries, no (Name, Key) twice; namespaces may
// differ. The Expiry applies to every key, a TTL resolved once so that all
// get the same expiry. To learn which key was taken, Get them.
func (c *Client) MPrepare(ctx context.Context, entries []Entry, exp ...Expiry) (bool, error) {
	const command = "PK.MPREPARE"
	if len(entries) < 1 || len(entries) > 64 {
		return false, invalid(command, "%d entries, not 1 to 64", len(entries))
	}
	args := make([]any, 0, 1+3*len(entries)+2)
	args = append(args, len(entries))
	seen := make(map[[2]string]bool, len(entries))
	for _, e := range entries {
		if err := checkNameKey(command, e.Name, e.Key); err != nil {
			return false, err
		}
		if seen[[2]string{e.Name, e.Key}] {
			return false, invalid(command, "the key %q of namespace %q is given twice", e.Key, e.Name)
		}
		seen[[2]string{e.Name, e.Key}] = true
		args = append(args, e.Name, e.Key, e.Value)
	}
	ttl, err := oneExpiry(command, exp)
	if err != nil {
		return false, err
	}
	return c.doBool(ctx, command, append(args, ttl...)...)
}

// do sends the command and returns its reply, or ctx's error at once when
// ctx is done first (see exchange).
func (c *Client) do(ctx context.Context, command string, args ...any) (any, error) {
	return c.exchange(ctx, command, false, args)
}

// doBool sends a command that answers :1 or :0.
func (c *Client) doBool(ctx context.Context, command string, args ...any) (bool, error) {
	return boolReply(command)(c.do(ctx, command, args...))
}

// exchange sends the command unless ctx is already done, and returns its
// reply: nil for a nil reply, an error as this package's (see wrap).
//
// go-redis itself waits for a reply whatever ctx says (unless
// Options.ContextTimeoutEnabled, and then only for a deadline). Unless
// waitReply, exchange returns ctx's error as soon as ctx is done: the
// command goes on in a goroutine, which reads the reply when it comes (or
// go-redis's ReadTimeout passes) and so hands the connection back to the
// pool in order; the command may still take effect, so its outcome is
// unknown. With waitReply it waits for the reply, for a caller that must
// know the outcome (UsingPrepare, to roll back what it prepared).
func (c *Client) exchange(ctx context.Context, command string, waitReply bool, args []any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, &knownError{wrap(command, err)}
	}
	reply, err := c.roundTrip(ctx, waitReply, append([]any{command}, args...))
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(command, err)
	}
	return reply, nil
}

// roundTrip is exchange's go-redis call.
func (c *Client) roundTrip(ctx context.Context, waitReply bool, args []any) (any, error) {
	if waitReply || ctx.Done() == nil { // never abandoned: no goroutine needed
		return c.rdb.Do(ctx, args...).Result()
	}
	done := make(chan *redis.Cmd, 1)
	go func() { done <- c.rdb.Do(ctx, args...) }()
	select {
	case cmd := <-done:
		return cmd.Result()
	case <-ctx.Done():
		select {
		case cmd := <-done: // the reply came as well: it is known, so say it
			return cmd.Result()
		default:
			return nil, ctx.Err()
		}
	}
}

// boolReply reads a reply that is :1 or :0.
func boolReply(command string) func(reply any, err error) (bool, error) {
	return func(reply any, err error) (bool, error) {
		if err != nil {
			return false, err
		}
		switch reply {
		case int64(1):
			return true, nil
		case int64(0):
			return false, nil
		}
		return false, unexpected(command, reply)
	}
}

// record reads a [value, ttlAt] pair.
func record(command string, value, ttlAt any) (Record, error) {
	v, isString := value.(string)
	at, isInt := ttlAt.(int64)
	if !isString || !isInt || at < -1 || at == 0 {
		return Record{}, unexpected(command, []any{value, ttlAt})
	}
	if at == -1 {
		return Record{Value: []byte(v), Forever: true}, nil
	}
	return Record{Value: []byte(v), ExpiresAt: time.UnixMilli(at)}, nil
}

// unexpected is the error for a reply no sidecar sends for command: the
// server is not a prepkey sidecar, or not one this package knows.
func unexpected(command string, reply any) error {
	return fmt.Errorf("prepkey: %s: unexpected reply %#v (is the server a prepkey sidecar?)", command, reply)
}

// checkNameKey refuses what every sidecar refuses: a namespace that is not
// 1 to 64 bytes of A-Z a-z 0-9 _ . -, and an empty key.
func checkNameKey(command, name, key string) error {
	if err := checkName(command, name); err != nil {
		return err
	}
	if key == "" {
		return invalid(command, "the key is empty")
	}
	return nil
}

// checkName refuses a namespace that is not 1 to 64 bytes of
// A-Z a-z 0-9 _ . -.
func checkName(command, name string) error {
	if len(name) < 1 || len(name) > 64 {
		return invalid(command, "namespace %q is not 1 to 64 bytes", name)
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '_', b == '.', b == '-':
		default:
			return invalid(command, "namespace %q has a byte outside A-Z a-z 0-9 _ . -", name)
		}
	}
	return nil
}
