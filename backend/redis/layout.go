package redis

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/prepkey/prepkey/backend"
)

// Layout names how the store keeps its records in Redis: the URL's
// ?layout= parameter.
type Layout uint8

const (
	// LayoutPrepkey is the sidecar's own layout (docs/redis.md, Key
	// layout): one string per record under --redis-key-prefix. It is the
	// default (?layout=prepkey or no parameter).
	LayoutPrepkey Layout = iota
	// LayoutWow is the layout of Wow's PrepareKey (8.9 and later), so
	// that Wow services and the sidecar share reservations: one hash
	// {ttlAt, value} per record at v2:prepare:{b64(name).b64(key)}
	// (docs/redis.md, Wow layout).
	LayoutWow
)

func (l Layout) String() string {
	if l == LayoutWow {
		return "wow"
	}
	return "prepkey"
}

// parseLayout reads ?layout=.
func parseLayout(v string) (Layout, error) {
	switch v {
	case "prepkey":
		return LayoutPrepkey, nil
	case "wow":
		return LayoutWow, nil
	}
	return 0, fmt.Errorf("layout=%q: want prepkey or wow", v)
}

// keyCodec maps (namespace, key) to Redis keys and back, for one layout.
// The layout is chosen once, at Open, so that neither layout pays for the
// other on its hot path: the store calls its codec, and runs its layout's
// scripts.
type keyCodec interface {
	// recordKey returns the Redis key of (ns, key), in a new string.
	recordKey(ns string, key []byte) string
	// appendBulkRecordKey appends recordKey(ns, key) to dst as a RESP
	// bulk string: the Wire's one codec call per key.
	appendBulkRecordKey(dst []byte, ns string, key []byte) []byte
	// parse is recordKey's inverse for namespace ns: false for a Redis
	// key that recordKey does not make.
	parse(ns, rkey string) ([]byte, bool)
	// scanMatch is the SCAN MATCH pattern of ns's records; scanType the
	// TYPE filter ("" none).
	scanMatch(ns string) string
	scanType() string
	// secretKey holds the store's scan secret, outside every record key.
	secretKey() string
}

func (k keyspace) scanMatch(ns string) string { return globEscape(k.prefix+"{"+ns+":") + "*" }

// scanType: none. Records were of two types (a string, a hash of the
// layout before) until every hash of before has been rewritten or expired.
func (k keyspace) scanType() string  { return "" }
func (k keyspace) secretKey() string { return k.prefix + "scan-secret" }

// WowKeyHead starts every record key of Wow's layout.
const WowKeyHead = "v2:prepare:{"

// wowKeys is Wow's key layout: head + base64url(namespace) + "." +
// base64url(key) + "}", base64url being the URL-safe alphabet without
// padding. The braces make the whole "name.key" the Cluster hash tag, as
// Wow has it. The encoding never emits '.', '{' or '}', so the first '.'
// ends the namespace and the key cannot end the hash tag early; decoding
// is strict (canonical encodings only), so parse is recordKey's inverse.
type wowKeys struct {
	// head is WowKeyHead. Tests put a prefix of their own before it so
	// that concurrent tests on one server do not see each other's records
	// (the head never holds a '{' of its own before WowKeyHead's).
	head string
}

var b64 = base64.RawURLEncoding

func (k wowKeys) recordKey(ns string, key []byte) string {
	b := k.appendRecordKey(make([]byte, 0, k.recordKeyLen(ns, key)), ns, key)
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again
}

func (k wowKeys) recordKeyLen(ns string, key []byte) int {
	return len(k.head) + b64.EncodedLen(len(ns)) + 1 + b64.EncodedLen(len(key)) + 1
}

func (k wowKeys) appendRecordKey(dst []byte, ns string, key []byte) []byte {
	dst = append(dst, k.head...)
	dst = b64.AppendEncode(dst, unsafe.Slice(unsafe.StringData(ns), len(ns)))
	dst = append(dst, '.')
	dst = b64.AppendEncode(dst, key)
	return append(dst, '}')
}

func (k wowKeys) appendBulkRecordKey(dst []byte, ns string, key []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(k.recordKeyLen(ns, key)), 10)
	dst = k.appendRecordKey(append(dst, '\r', '\n'), ns, key)
	return append(dst, '\r', '\n')
}

func (k wowKeys) nsHead(ns string) string {
	return k.head + b64.EncodeToString([]byte(ns)) + "."
}

func (k wowKeys) parse(ns, rkey string) ([]byte, bool) {
	head := k.nsHead(ns)
	if !strings.HasPrefix(rkey, head) || !strings.HasSuffix(rkey, "}") || len(rkey) < len(head)+2 {
		return nil, false
	}
	key, err := b64.Strict().DecodeString(rkey[len(head) : len(rkey)-1])
	if err != nil || len(key) == 0 {
		return nil, false
	}
	return key, true
}

func (k wowKeys) scanMatch(ns string) string { return globEscape(k.nsHead(ns)) + "*" }

// scanType: Wow's records are hashes; SCAN leaves out keys of other types.
func (k wowKeys) scanType() string { return "hash" }

// secretKey is the default prefix's: Wow's keys are fixed, and the secret
// is the sidecar's, not a record Wow would read.
func (k wowKeys) secretKey() string { return DefaultKeyPrefix + "wow-scan-secret" }

// checkWowOp refuses an op whose namespace or keys are not valid UTF-8, or
// whose values (new values and IFEQ values) are not JSON, with the
// refusals the MongoDB store's layout=wow answers too: Wow's getValue
// parses the stored value as JSON and throws on anything else, and an IFEQ
// value that is not JSON can never equal what Wow wrote.
func checkWowOp(op *backend.Op) error {
	return checkWow(op, true)
}

// checkWowKeys is checkWowOp without the JSON check (?values=any).
func checkWowKeys(op *backend.Op) error {
	return checkWow(op, false)
}

func checkWow(op *backend.Op, jsonValues bool) error {
	check := func(ns string, keys ...[]byte) error {
		if !utf8.ValidString(ns) {
			return backend.ErrNamespaceNotUTF8
		}
		for _, k := range keys {
			if !utf8.Valid(k) {
				return backend.ErrKeyNotUTF8
			}
		}
		return nil
	}
	values := func(vs ...[]byte) error {
		if !jsonValues {
			return nil
		}
		for _, v := range vs {
			// encoding/json lets invalid UTF-8 through inside strings;
			// Jackson does not.
			if !utf8.Valid(v) || !json.Valid(v) {
				return backend.ErrValueNotJSON
			}
		}
		return nil
	}
	cond := func(c backend.Cond) error {
		if !c.Set {
			return nil
		}
		return values(c.Value)
	}
	switch op.Kind {
	case backend.OpMPrepare:
		for _, e := range op.Entries {
			if err := check(e.NS, e.Key); err != nil {
				return err
			}
		}
		for _, e := range op.Entries {
			if err := values(e.Value); err != nil {
				return err
			}
		}
		return nil
	case backend.OpMove:
		if err := check(op.NS, op.Key, op.OldKey); err != nil {
			return err
		}
		return values(op.Value, op.OldValue)
	case backend.OpPrepare:
		if err := check(op.NS, op.Key); err != nil {
			return err
		}
		return values(op.Value)
	case backend.OpReprepare:
		if err := check(op.NS, op.Key); err != nil {
			return err
		}
		if err := values(op.Value); err != nil {
			return err
		}
		return cond(op.Cond)
	case backend.OpRollback:
		if err := check(op.NS, op.Key); err != nil {
			return err
		}
		return cond(op.Cond)
	}
	return check(op.NS, op.Key)
}

// ArgCheck is Info's ArgCheck (backend.Info): layout=wow refuses keys and
// namespaces that are not valid UTF-8 and values that are not JSON (unless
// the URL says ?values=any); the sidecar's own layout takes what the
// contract allows (nil: no check at all).
func (s *Store) ArgCheck() func(op *backend.Op) error {
	switch {
	case s.layout != LayoutWow:
		return nil
	case s.target.anyValues:
		return checkWowKeys
	}
	return checkWowOp
}

// unreadable starts the error that wow_block.lua answers to a read of a
// hash at a record's key that holds no record it can read (no value, or a
// ttlAt that is not a number): a get answers it (-UNAVAILABLE), a scan
// skips the key.
const unreadable = "UNREADABLE"
