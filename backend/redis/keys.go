package redis

import (
	"bytes"
	"strconv"
	"strings"
	"unsafe"
)

// DefaultKeyPrefix starts every Redis key the store writes, so that several
// applications can share one Redis (--redis-key-prefix).
const DefaultKeyPrefix = "pk:"

// keyspace maps (namespace, key) to Redis keys.
//
// The layout is prefix + "{" + namespace + ":" + escape(key) + "}". The
// whole (namespace, key) is the hash tag, so each reservation has its own
// slot and a Cluster spreads the load, while the prefix never moves a key to
// another slot. It is injective: namespaces cannot contain ':' (the contract
// allows only A-Z a-z 0-9 _ . -) and escape is injective and never emits
// '}', which would end the hash tag early.
type keyspace struct{ prefix string }

// recordKey returns the Redis key of (ns, key). It builds a new string, so
// the caller's buffer is not retained.
func (k keyspace) recordKey(ns string, key []byte) string {
	extra := escapeExtra(key)
	b := k.appendKey(make([]byte, 0, k.recordKeyLen(ns, key, extra)), ns, key, extra)
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again
}

// recordKeyLen is the length of the Redis key of (ns, key); extra is
// escapeExtra(key).
func (k keyspace) recordKeyLen(ns string, key []byte, extra int) int {
	return len(k.prefix) + len(ns) + len(key) + 3 + extra
}

// appendBulkRecordKey appends the Redis key of (ns, key) as a RESP bulk
// string, for the Wire: one keyCodec call per key, the key scanned once
// for bytes to escape and copied whole when it holds none. As two codec
// calls (the length, then the key) each walking the key byte by byte, a
// key of 14 bytes cost 549 instructions, 5 % of a PK.PREPARE's 10,700 at
// pipeline 16 on redis://; this way 263 (callgrind; docs/benchmarks.md,
// "Instruction counts").
func (k keyspace) appendBulkRecordKey(dst []byte, ns string, key []byte) []byte {
	extra := escapeExtra(key)
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(k.recordKeyLen(ns, key, extra)), 10)
	dst = k.appendKey(append(dst, '\r', '\n'), ns, key, extra)
	return append(dst, '\r', '\n')
}

// appendKey appends the Redis key of (ns, key), with '%' in key written
// "%25" and '}' "%7D": percent-encoding of just the two bytes that matter
// keeps keys readable in redis-cli. extra is escapeExtra(key).
func (k keyspace) appendKey(dst []byte, ns string, key []byte, extra int) []byte {
	dst = append(dst, k.prefix...)
	dst = append(dst, '{')
	dst = append(dst, ns...)
	dst = append(dst, ':')
	if extra == 0 {
		dst = append(dst, key...)
		return append(dst, '}')
	}
	for _, c := range key {
		switch c {
		case '%':
			dst = append(dst, "%25"...)
		case '}':
			dst = append(dst, "%7D"...)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '}')
}

// escapeExtra is how many bytes escaping adds to key. Most keys hold
// neither byte: two vectorised scans tell so in fewer instructions than
// one loop over the key's bytes.
func escapeExtra(key []byte) int {
	if bytes.IndexByte(key, '%') < 0 && bytes.IndexByte(key, '}') < 0 {
		return 0
	}
	n := 0
	for _, c := range key {
		if c == '%' || c == '}' {
			n += 2
		}
	}
	return n
}

// slot is the Redis Cluster hash slot of a Redis key: CRC16 (XMODEM) of its
// hash tag, modulo 16384. The store only needs it to tell whether the two
// keys of a key change can run in one script on a Cluster.
func slot(key string) uint16 {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc & 16383
}

// parse is recordKey's inverse for namespace ns: the key of a Redis key
// of ns, or false for a Redis key that recordKey does not make.
func (k keyspace) parse(ns, rkey string) ([]byte, bool) {
	head := k.prefix + "{" + ns + ":"
	if !strings.HasPrefix(rkey, head) || !strings.HasSuffix(rkey, "}") || len(rkey) < len(head)+2 {
		return nil, false
	}
	esc := rkey[len(head) : len(rkey)-1]
	key := make([]byte, 0, len(esc))
	for i := 0; i < len(esc); i++ {
		c := esc[i]
		switch {
		case c == '}':
			return nil, false
		case c != '%':
			key = append(key, c)
		case strings.HasPrefix(esc[i:], "%25"):
			key, i = append(key, '%'), i+2
		case strings.HasPrefix(esc[i:], "%7D"):
			key, i = append(key, '}'), i+2
		default:
			return nil, false
		}
	}
	return key, true
}
