package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// nilReply and errReply are expected replies that go-redis gives as errors.
type errReply string

var nilReply = errReply("<nil>")

// check runs one command and compares its reply exactly.
func check(t *testing.T, c *redis.Client, want any, args ...any) {
	t.Helper()
	got, err := c.Do(ctx(), args...).Result()
	switch w := want.(type) {
	case errReply:
		if w == nilReply {
			require.ErrorIs(t, err, redis.Nil, "%v", args)
			return
		}
		require.Error(t, err, "%v: got %#v", args, got)
		require.Equal(t, string(w), err.Error(), "%v", args)
	default:
		require.NoError(t, err, "%v", args)
		require.Equal(t, want, got, "%v", args)
	}
}

// TestCommands walks every PK command and form through real clients, in
// RESP2 and RESP3, on every backend.
func TestCommands(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *sidecar) {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
				c := s.client(t, proto)
				ns := uniqueNS(t)
				steps := []struct {
					want any
					args []any
				}{
					{int64(1), []any{"PK.PREPARE", ns, "alice", `{"userId":"42"}`}},
					{int64(0), []any{"pk.prepare", ns, "alice", `{"userId":"43"}`}},
					{int64(0), []any{"PK.PREPARE", ns, "alice", `{"userId":"42"}`}},
					{`{"userId":"42"}`, []any{"PK.GET", ns, "alice"}},
					{[]any{`{"userId":"42"}`, int64(-1)}, []any{"PK.GETVALUE", ns, "alice"}},
					{nilReply, []any{"PK.GET", ns, "bob"}},
					{nilReply, []any{"PK.GETVALUE", ns, "bob"}},
					{nilReply, []any{"PK.GET", strings.ToUpper(ns), "alice"}},
					// conditional release
					{int64(0), []any{"PK.ROLLBACK", ns, "alice", "IFEQ", "other"}},
					{`{"userId":"42"}`, []any{"PK.GET", ns, "alice"}},
					{int64(1), []any{"PK.ROLLBACK", ns, "alice", "ifeq", `{"userId":"42"}`}},
					{int64(0), []any{"PK.ROLLBACK", ns, "alice"}},
					{int64(1), []any{"PK.PREPARE", ns, "alice", "v1"}},
					{int64(1), []any{"PK.ROLLBACK", ns, "alice"}},
					// replace
					{int64(0), []any{"PK.REPREPARE", ns, "carol", "v"}},
					{int64(1), []any{"PK.PREPARE", ns, "carol", "v1", "EX", "1000"}},
					{int64(0), []any{"PK.REPREPARE", ns, "carol", "v2", "IFEQ", "nope"}},
					{int64(1), []any{"PK.REPREPARE", ns, "carol", "v2", "IFEQ", "v1", "KEEPTTL"}},
					{"v2", []any{"PK.GET", ns, "carol"}},
					{int64(1), []any{"PK.REPREPARE", ns, "carol", "v3"}},
					{[]any{"v3", int64(-1)}, []any{"PK.GETVALUE", ns, "carol"}},
					{int64(1), []any{"PK.REPREPARE", ns, "carol", "v4", "PXAT", "253402300799999"}},
					{[]any{"v4", int64(253402300799999)}, []any{"PK.GETVALUE", ns, "carol"}},
					// key change
					{int64(1), []any{"PK.PREPARE", ns, "dave", "u1"}},
					{int64(1), []any{"PK.PREPARE", ns, "erin", "u2"}},
					{int64(0), []any{"PK.REPREPARE", ns, "erin", "u1", "FROM", "dave", "IFEQ", "u1"}},
					{"u1", []any{"PK.GET", ns, "dave"}},
					{errReply("MISMATCH old key has no record with that value"), []any{"PK.REPREPARE", ns, "frank", "u1", "FROM", "dave", "IFEQ", "wrong"}},
					{errReply("MISMATCH old key has no record with that value"), []any{"PK.REPREPARE", ns, "frank", "u1", "FROM", "ghost", "IFEQ", "u1"}},
					{nilReply, []any{"PK.GET", ns, "frank"}},
					{int64(1), []any{"PK.REPREPARE", ns, "frank", "u1", "FROM", "dave", "IFEQ", "u1"}},
					{nilReply, []any{"PK.GETVALUE", ns, "dave"}},
					{"u1", []any{"PK.GET", ns, "frank"}},
					// errors, exactly as the contract words them
					{errReply("ERR wrong number of arguments for 'pk.get' command"), []any{"PK.GET", ns, "k", "extra"}},
					{errReply("ERR wrong number of arguments for 'pk.prepare' command"), []any{"PK.PREPARE", ns, "k"}},
					{errReply("ERR wrong number of arguments for 'pk.getvalue' command"), []any{"PK.GETVALUE", ns}},
					{errReply("ERR wrong number of arguments for 'pk.rollback' command"), []any{"PK.ROLLBACK", ns}},
					{errReply("ERR wrong number of arguments for 'pk.reprepare' command"), []any{"PK.REPREPARE", ns, "k"}},
					{errReply("ERR syntax error"), []any{"PK.PREPARE", ns, "k", "v", "EX"}},
					{errReply("ERR syntax error"), []any{"PK.PREPARE", ns, "k", "v", "EX", "1", "PX", "1"}},
					{errReply("ERR syntax error"), []any{"PK.PREPARE", ns, "k", "v", "NX"}},
					{errReply("ERR syntax error"), []any{"PK.ROLLBACK", ns, "k", "IFEQ"}},
					{errReply("ERR syntax error"), []any{"PK.ROLLBACK", ns, "k", "IFEQ", "a", "IFEQ", "a"}},
					{errReply("ERR syntax error"), []any{"PK.REPREPARE", ns, "k", "v", "KEEPTTL", "EX", "5"}},
					{errReply("ERR invalid expire time in 'pk.prepare' command"), []any{"PK.PREPARE", ns, "k", "v", "EX", "0"}},
					{errReply("ERR invalid expire time in 'pk.prepare' command"), []any{"PK.PREPARE", ns, "k", "v", "PX", "-1"}},
					{errReply("ERR invalid expire time in 'pk.prepare' command"), []any{"PK.PREPARE", ns, "k", "v", "EX", "1.5"}},
					{errReply("ERR invalid expire time in 'pk.prepare' command"), []any{"PK.PREPARE", ns, "k", "v", "EXAT", "1000"}},
					{errReply("ERR invalid expire time in 'pk.reprepare' command"), []any{"PK.REPREPARE", ns, "k", "v", "PXAT", "1"}},
					{errReply("ERR invalid namespace name"), []any{"PK.PREPARE", "user name", "k", "v"}},
					{errReply("ERR invalid namespace name"), []any{"PK.GET", strings.Repeat("n", 65), "k"}},
					{errReply("ERR key is empty (keys are 1 to max-key-bytes (1024) bytes)"), []any{"PK.PREPARE", ns, "", "v"}},
					{errReply("ERR key is larger than max-key-bytes (1024)"), []any{"PK.PREPARE", ns, strings.Repeat("k", 1025), "v"}},
					{errReply("ERR key is larger than max-key-bytes (1024)"), []any{"PK.REPREPARE", ns, "k", "v", "FROM", strings.Repeat("k", 1025), "IFEQ", "v"}},
					{errReply("ERR FROM needs IFEQ oldValue"), []any{"PK.REPREPARE", ns, "new", "v", "FROM", "old"}},
					{errReply("ERR FROM key must differ from the new key"), []any{"PK.REPREPARE", ns, "same", "v", "FROM", "same", "IFEQ", "v"}},
					{errReply("ERR unknown command 'PK.NOPE', with args beginning with: 'a' "), []any{"PK.NOPE", "a"}},
					{errReply("ERR unknown command 'EVAL', with args beginning with: 'return 1' '0' "), []any{"EVAL", "return 1", "0"}},
					{errReply("ERR unknown command 'KEYS', with args beginning with: '*' "), []any{"KEYS", "*"}},
					// the connection survives every bad request above
					{"PONG", []any{"PING"}},
				}
				for _, st := range steps {
					check(t, c, st.want, st.args...)
				}
			})
		}
	})
}

// TestTTL checks the ttlAt the backends record for relative and absolute
// TTLs, within the clock difference of the sidecar and the backend.
func TestTTL(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *sidecar) {
		c := s.client(t, 3)
		ns := uniqueNS(t)
		before := time.Now().UnixMilli()
		check(t, c, int64(1), "PK.PREPARE", ns, "ex", "v", "EX", "100")
		check(t, c, int64(1), "PK.PREPARE", ns, "px", "v", "PX", "100000")
		after := time.Now().UnixMilli()
		for _, k := range []string{"ex", "px"} {
			v, err := c.Do(ctx(), "PK.GETVALUE", ns, k).Slice()
			require.NoError(t, err)
			ttlAt := v[1].(int64)
			require.GreaterOrEqual(t, ttlAt, before+100000-1000, k)
			require.LessOrEqual(t, ttlAt, after+100000+1000, k)
		}
		at := time.Now().Add(time.Hour).Unix()
		check(t, c, int64(1), "PK.PREPARE", ns, "exat", "v", "EXAT", fmt.Sprint(at))
		check(t, c, []any{"v", at * 1000}, "PK.GETVALUE", ns, "exat")
		// a record that expires is kept as evidence (default retention 24h)
		check(t, c, int64(1), "PK.PREPARE", ns, "short", "v1", "PX", "300")
		require.Eventually(t, func() bool {
			_, err := c.Do(ctx(), "PK.GET", ns, "short").Result()
			return errors.Is(err, redis.Nil)
		}, 5*time.Second, 50*time.Millisecond)
		v, err := c.Do(ctx(), "PK.GETVALUE", ns, "short").Slice()
		require.NoError(t, err)
		require.Equal(t, "v1", v[0])
		check(t, c, int64(0), "PK.REPREPARE", ns, "short", "v2")
		check(t, c, int64(1), "PK.PREPARE", ns, "short", "v2")
		check(t, c, []any{"v2", int64(-1)}, "PK.GETVALUE", ns, "short")
	})
}

// TestBinarySafe sends keys and values that break naive protocols.
func TestBinarySafe(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *sidecar) {
		c := s.client(t, 2)
		ns := uniqueNS(t)
		values := []string{"\x00", "a\r\nb", "\xff\xfe\xfd", "", "$3\r\nfoo\r\n", strings.Repeat("\x00\xff", 100)}
		for i, v := range values {
			key := fmt.Sprintf("k\x00%d\r\n\xff", i)
			check(t, c, int64(1), "PK.PREPARE", ns, key, v)
			check(t, c, v, "PK.GET", ns, key)
			check(t, c, []any{v, int64(-1)}, "PK.GETVALUE", ns, key)
		}
		check(t, c, nilReply, "PK.GET", ns, "k")
		check(t, c, nilReply, "PK.GET", ns, "k\x00")
		check(t, c, int64(0), "PK.ROLLBACK", ns, "k\x000\r\n\xff", "IFEQ", "\x00\x00")
		check(t, c, int64(1), "PK.ROLLBACK", ns, "k\x000\r\n\xff", "IFEQ", "\x00")
	})
}

// TestLimits checks the edges of the key and value limits, configured
// small so the test is quick.
func TestLimits(t *testing.T) {
	s := start(t, "--backend", "memory:", "--max-key-bytes", "10", "--max-value-bytes", "100")
	c := s.client(t, 3)
	check(t, c, int64(1), "PK.PREPARE", "ns", strings.Repeat("k", 10), strings.Repeat("v", 100))
	check(t, c, errReply("ERR key is larger than max-key-bytes (10)"), "PK.PREPARE", "ns", strings.Repeat("k", 11), "v")
	check(t, c, errReply("ERR value is larger than max-value-bytes (100)"), "PK.PREPARE", "ns", "k", strings.Repeat("v", 101))
	check(t, c, errReply("ERR value is larger than max-value-bytes (100)"), "PK.REPREPARE", "ns", "k", "v", "IFEQ", strings.Repeat("v", 101))
	check(t, c, strings.Repeat("v", 100), "PK.GET", "ns", strings.Repeat("k", 10))

	// the defaults: 65536 bytes is fine, one more is refused, the
	// connection stays usable
	d := start(t, "--backend", "memory:").client(t, 2)
	check(t, d, int64(1), "PK.PREPARE", "ns", "k", strings.Repeat("v", 65536))
	check(t, d, errReply("ERR value is larger than max-value-bytes (65536)"), "PK.PREPARE", "ns", "k2", strings.Repeat("v", 65537))
	check(t, d, nilReply, "PK.GET", "ns", "k2")
	check(t, d, "PONG", "PING")
}
