package redis

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRecordKey(t *testing.T) {
	ks := keyspace{prefix: "pk:"}
	tests := []struct {
		ns, key, want string
	}{
		{"username", "alice", "pk:{username:alice}"},
		{"u", "a:b", "pk:{u:a:b}"},
		{"u", "}", "pk:{u:%7D}"},
		{"u", "%7D", "pk:{u:%257D}"},
		{"u", "{x}", "pk:{u:{x%7D}"},
		{"u", "\x00\xff", "pk:{u:\x00\xff}"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, ks.recordKey(tt.ns, []byte(tt.key)), "%q %q", tt.ns, tt.key)
	}
}

// TestRecordKeyInjective checks that distinct (namespace, key) pairs never
// share a Redis key, over keys built from the bytes that matter to the
// layout, and that the hash tag always covers the whole pair.
func TestRecordKeyInjective(t *testing.T) {
	ks := keyspace{prefix: "pk:"}
	alphabet := []byte{'a', ':', '%', '}', '{', '7', 'D', '2', '5', 0}
	var keys [][]byte
	var gen func(prefix []byte, n int)
	gen = func(prefix []byte, n int) {
		if len(prefix) > 0 {
			keys = append(keys, append([]byte(nil), prefix...))
		}
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			gen(append(prefix, c), n-1)
		}
	}
	gen(nil, 3)
	// Namespaces are 1-64 bytes of A-Z a-z 0-9 _ . - (checked by package commands).
	seen := map[string]string{}
	for _, ns := range []string{"a", "aa", "a.-_9"} {
		for _, k := range keys {
			rk := ks.recordKey(ns, k)
			pair := ns + "\x00" + string(k)
			prev, dup := seen[rk]
			require.False(t, dup, "%q and %q both map to %q", prev, pair, rk)
			seen[rk] = pair
			require.Equal(t, len(rk)-1, strings.IndexByte(rk, '}'), "hash tag of %q is not the whole pair", rk)
		}
	}
}

func TestSlot(t *testing.T) {
	// Values from CLUSTER KEYSLOT on Redis 7.
	tests := []struct {
		key  string
		want uint16
	}{
		{"123456789", 12739}, // the CRC16/XMODEM check value 0x31C3
		{"foo", 12182},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"foo{}{bar}", 8363},
		{"foo{{bar}}zap", 4015},
		{"foo{bar}{zap}", 5061},
		{"", 0},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, slot(tt.key), tt.key)
	}
}

// TestAppendBulkRecordKey: the Wire's one codec call per key writes the
// record key as a RESP bulk string, for both layouts, over keys with and
// without bytes to escape (the default layout copies those without whole).
func TestAppendBulkRecordKey(t *testing.T) {
	keys := []string{"alice", "k:000000123456", "}", "%", "a}b%c", "%7D}%25", "\x00\xff", strings.Repeat("x", 200) + "}"}
	for _, ks := range []keyCodec{keyspace{prefix: "pk:"}, keyspace{prefix: ""}, wowKeys{head: WowKeyHead}} {
		for _, ns := range []string{"u", "username"} {
			for _, k := range keys {
				rk := ks.recordKey(ns, []byte(k))
				want := "$" + strconv.Itoa(len(rk)) + "\r\n" + rk + "\r\n"
				require.Equal(t, "pre"+want, string(ks.appendBulkRecordKey([]byte("pre"), ns, []byte(k))), "%T %q %q", ks, ns, k)
			}
		}
	}
	require.Equal(t, "$16\r\npk:{u:a%7Db%25c}\r\n", string(keyspace{prefix: "pk:"}.appendBulkRecordKey(nil, "u", []byte("a}b%c"))))
	require.Equal(t, "$12\r\npk:{u:alice}\r\n", string(keyspace{prefix: "pk:"}.appendBulkRecordKey(nil, "u", []byte("alice"))))
}
