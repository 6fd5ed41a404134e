package disk

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The pebble keyspace is split by a leading prefix byte:
//
//	meta:   0x00 name                                  -> value
//	record: 0x01 uvarint(len(ns)) ns key               -> ttlAt(8, big-endian) value
//	expiry: 0x02 ttlAt(8, big-endian) <record key>     -> (empty)
//
// The record key length-prefixes the namespace so that (ns, key) maps to a
// single pebble key for any binary key: ("a", "bc") and ("ab", "c") differ.
//
// The record value starts with a fixed 8-byte ttlAt (0 = forever) so that a
// record is decoded without parsing, and the value follows verbatim (values
// may be empty).
//
// Every record that can expire has exactly one expiry index entry, written
// and removed in the same batch as the record. The index is ordered by ttlAt
// so the sweep reads only the entries that are due, never the whole store.
// It is keyed by ttlAt rather than by ttlAt+retention so that restarting with
// another --expired-retention neither orphans entries nor needs a rewrite:
// the sweep moves its upper bound instead (see sweep.go).
const (
	prefixMeta   byte = 0x00
	prefixRecord byte = 0x01
	prefixExpiry byte = 0x02
)

// formatVersion is stored under metaFormatKey; Open refuses a directory
// written in a format it does not know.
const formatVersion = 1

var metaFormatKey = []byte{prefixMeta, 'f', 'o', 'r', 'm', 'a', 't'}

// errCorrupt is wrapped by decoding errors: a value that this package did not
// write, which a store must report as a failure, never as "no record".
var errCorrupt = errors.New("disk: corrupt record")

// recordKey encodes the pebble key of (ns, key).
func recordKey(ns string, key []byte) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(ns)+len(key))
	b = append(b, prefixRecord)
	b = binary.AppendUvarint(b, uint64(len(ns)))
	b = append(b, ns...)
	return append(b, key...)
}

// recordValue encodes the stored value of a record.
func recordValue(ttlAt int64, value []byte) []byte {
	b := make([]byte, 8, 8+len(value))
	binary.BigEndian.PutUint64(b, uint64(ttlAt))
	return append(b, value...)
}

// decodeRecord splits a stored record value. The returned value aliases raw.
func decodeRecord(raw []byte) (ttlAt int64, value []byte, err error) {
	if len(raw) < 8 {
		return 0, nil, fmt.Errorf("%w: value of %d bytes", errCorrupt, len(raw))
	}
	return int64(binary.BigEndian.Uint64(raw)), raw[8:], nil
}

// expiryKey encodes the index entry of a record key expiring at ttlAt.
func expiryKey(ttlAt int64, recKey []byte) []byte {
	b := make([]byte, 9, 9+len(recKey))
	b[0] = prefixExpiry
	binary.BigEndian.PutUint64(b[1:], uint64(ttlAt))
	return append(b, recKey...)
}

// expiryBound is the exclusive upper bound of the index entries whose ttlAt
// is below ttlAt.
func expiryBound(ttlAt int64) []byte { return expiryKey(ttlAt, nil) }

// decodeExpiryKey splits an index entry. The record key aliases k.
func decodeExpiryKey(k []byte) (ttlAt int64, recKey []byte, err error) {
	if len(k) < 10 || k[0] != prefixExpiry || k[9] != prefixRecord {
		return 0, nil, fmt.Errorf("%w: expiry index key %x", errCorrupt, k)
	}
	return int64(binary.BigEndian.Uint64(k[1:9])), k[9:], nil
}
