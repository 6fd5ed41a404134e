package e2e

import (
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// scanAll iterates PK.SCAN to its end and returns key -> [value, ttlAt].
func scanAll(t *testing.T, c *redis.Client, ns string, opts ...any) map[string][]any {
	t.Helper()
	got := map[string][]any{}
	cursor := "0"
	for i := 0; ; i++ {
		require.Less(t, i, 100000)
		res, err := c.Do(ctx(), append([]any{"PK.SCAN", ns, cursor}, opts...)...).Slice()
		require.NoError(t, err)
		require.Len(t, res, 2)
		for _, r := range res[1].([]any) {
			rec := r.([]any)
			require.Len(t, rec, 3)
			got[rec[0].(string)] = rec[1:]
		}
		cursor = res[0].(string)
		if cursor == "0" {
			return got
		}
	}
}

// TestMPrepareScan: PK.MPREPARE and PK.SCAN through the binary with real
// clients, RESP2 and RESP3, pipelined with other commands, on every
// backend.
func TestMPrepareScan(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *sidecar) {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
				c := s.client(t, proto)
				users, emails := uniqueNS(t), uniqueNS(t)+"e"
				check(t, c, int64(1), "PK.MPREPARE", "2", users, "alice", "u42", emails, "a@x.org", "u42", "EX", "600")
				check(t, c, int64(0), "pk.mprepare", "2", users, "bob", "u43", emails, "a@x.org", "u43")
				check(t, c, nilReply, "PK.GET", users, "bob")
				check(t, c, errReply("ERR duplicate key in 'pk.mprepare'"), "PK.MPREPARE", "2", users, "x", "1", users, "x", "2")
				check(t, c, errReply("ERR syntax error"), "PK.MPREPARE", "3", users, "x", "1")
				check(t, c, errReply("ERR wrong number of arguments for 'pk.mprepare' command"), "PK.MPREPARE", "1", users, "x")
				check(t, c, errReply("ERR invalid expire time in 'pk.mprepare' command"), "PK.MPREPARE", "1", users, "x", "1", "EX", "0")
				check(t, c, int64(1), "PK.MPREPARE", "3", users, "b\x00*[", "u1", users, "carol", "u2", users, "dave", "u3")

				got := scanAll(t, c, users, "COUNT", "1")
				require.Len(t, got, 4)
				require.Equal(t, "u1", got["b\x00*["][0])
				require.Equal(t, int64(-1), got["carol"][1])
				require.Equal(t, "u42", got["alice"][0])
				require.Greater(t, got["alice"][1], int64(0))
				require.Equal(t, map[string][]any{"b\x00*[": {"u1", int64(-1)}}, scanAll(t, c, users, "MATCH", "b\x00\\*\\[", "COUNT", "1000"))
				require.Empty(t, scanAll(t, c, users, "EXPIRED"))
				require.Len(t, scanAll(t, c, emails, "LIVE"), 1)

				check(t, c, errReply("ERR invalid cursor"), "PK.SCAN", users, "12")
				check(t, c, errReply("ERR syntax error"), "PK.SCAN", users, "0", "COUNT", "0")
				check(t, c, errReply("ERR value is not an integer or out of range"), "PK.SCAN", users, "0", "COUNT", "x")

				// Pipelined with other PK commands: answered in order.
				cmds, err := c.Pipelined(ctx(), func(p redis.Pipeliner) error {
					p.Do(ctx(), "PK.PREPARE", users, "erin", "u5")
					p.Do(ctx(), "PK.SCAN", users, "0", "COUNT", "1000", "MATCH", "erin")
					p.Do(ctx(), "PK.MPREPARE", "1", users, "frank", "u6")
					p.Do(ctx(), "PK.SCAN", users, "0", "COUNT", "1000", "MATCH", "frank")
					p.Do(ctx(), "PK.GET", users, "frank")
					return nil
				})
				require.NoError(t, err)
				require.Equal(t, int64(1), cmds[0].(*redis.Cmd).Val())
				// A page may be empty before the end (a Cluster's first
				// master may hold none of them): each SCAN is checked to
				// be a page, and to hold no other key than its MATCH.
				for i, key := range map[int]string{1: "erin", 3: "frank"} {
					page := cmds[i].(*redis.Cmd).Val().([]any)
					require.Len(t, page, 2)
					for _, rec := range page[1].([]any) {
						require.Equal(t, key, rec.([]any)[0])
					}
				}
				require.Equal(t, int64(1), cmds[2].(*redis.Cmd).Val())
				require.Equal(t, "u6", cmds[4].(*redis.Cmd).Val())
				require.Equal(t, map[string][]any{"frank": {"u6", int64(-1)}}, scanAll(t, c, users, "MATCH", "f*"))
			})
		}
	})
}

// TestScanBytes: PK.SCAN's reply, byte for byte (the encoding is the
// server's, the same on every backend; RESP3 writes the same frames).
func TestScanBytes(t *testing.T) {
	s := start(t, "--backend", "memory:")
	r := s.raw(t)
	r.do(":1\r\n", "PK.MPREPARE", "2", "ns", "k", "v", "ns", "j\x00", "", "PXAT", "253402300799999")
	page := "*2\r\n$1\r\n0\r\n*2\r\n*3\r\n$2\r\nj\x00\r\n$0\r\n\r\n:253402300799999\r\n*3\r\n$1\r\nk\r\n$1\r\nv\r\n:253402300799999\r\n"
	r.do(page, "PK.SCAN", "ns", "0", "COUNT", "1000")
	r.do("*2\r\n$1\r\n0\r\n*0\r\n", "PK.SCAN", "other", "0")
	r.do("-ERR invalid cursor\r\n", "PK.SCAN", "ns", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
}

// TestMPrepareRace: two clients on their own connections send PK.MPREPAREs
// that share one key, round after round: exactly one :1, and the loser
// holds nothing.
func TestMPrepareRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *sidecar) {
		clients := [2]*redis.Client{s.client(t, 2), s.client(t, 3)}
		ns := uniqueNS(t)
		for r := range 40 {
			shared := fmt.Sprintf("shared-%d", r)
			own := [2]string{fmt.Sprintf("a-%d", r), fmt.Sprintf("z-%d", r)}
			var wg sync.WaitGroup
			start := make(chan struct{})
			res := [2]int64{}
			errs := [2]error{}
			for i := range 2 {
				wg.Go(func() {
					<-start
					res[i], errs[i] = clients[i].Do(ctx(), "PK.MPREPARE", "2", ns, own[i], fmt.Sprint(i), ns, shared, fmt.Sprint(i)).Int64()
				})
			}
			close(start)
			wg.Wait()
			require.NoError(t, errs[0])
			require.NoError(t, errs[1])
			sorted := []int{int(res[0]), int(res[1])}
			sort.Ints(sorted)
			require.Equal(t, []int{0, 1}, sorted, "round %d", r)
			w := 0
			if res[1] == 1 {
				w = 1
			}
			check(t, clients[0], fmt.Sprint(w), "PK.GET", ns, shared)
			check(t, clients[0], fmt.Sprint(w), "PK.GET", ns, own[w])
			check(t, clients[0], nilReply, "PK.GETVALUE", ns, own[1-w])
		}
	})
}

// TestScanCursorAcrossRestart: a cursor handed out before a kill -9 is
// taken by the next sidecar on the same store, and the iteration goes on.
func TestScanCursorAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "--backend", "file:"+dir)
	c := s.client(t, 2)
	for i := range 20 {
		check(t, c, int64(1), "PK.PREPARE", "ns", fmt.Sprintf("k%02d", i), "v")
	}
	res, err := c.Do(ctx(), "PK.SCAN", "ns", "0", "COUNT", "5").Slice()
	require.NoError(t, err)
	cursor := res[0].(string)
	require.NotEqual(t, "0", cursor)
	s.kill()

	s = start(t, "--backend", "file:"+dir)
	c = s.client(t, 2)
	res, err = c.Do(ctx(), "PK.SCAN", "ns", cursor, "COUNT", "1000").Slice()
	require.NoError(t, err)
	require.Equal(t, "0", res[0])
	require.Len(t, res[1], 15)
	require.Equal(t, "k05", res[1].([]any)[0].([]any)[0])
}

// TestMPrepareInTransaction: PK.MPREPARE is queued and run by EXEC with
// the block; PK.SCAN in a block aborts EXEC, saying why.
func TestMPrepareInTransaction(t *testing.T) {
	for _, backend := range []string{"memory:", "file:" + t.TempDir()} {
		s := start(t, "--backend", backend)
		r := s.raw(t)
		r.do("+OK\r\n", "MULTI")
		r.do("+QUEUED\r\n", "PK.MPREPARE", "2", "ns", "a", "1", "ns2", "b", "1")
		r.do("-ERR duplicate key in 'pk.mprepare'\r\n", "PK.MPREPARE", "2", "ns", "a", "1", "ns", "a", "2")
		r.do("-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")
		r.do("+OK\r\n", "MULTI")
		r.do("+QUEUED\r\n", "PK.MPREPARE", "2", "ns", "a", "1", "ns2", "b", "1")
		r.do("+QUEUED\r\n", "PK.MPREPARE", "2", "ns", "c", "2", "ns2", "b", "2")
		r.do("+QUEUED\r\n", "PK.GET", "ns2", "b")
		r.do("*3\r\n:1\r\n:0\r\n$1\r\n1\r\n", "EXEC")
		r.do("$-1\r\n", "PK.GET", "ns", "c")
		r.do("+OK\r\n", "MULTI")
		r.do("+QUEUED\r\n", "PK.SCAN", "ns", "0")
		r.do("-EXECABORT Transaction discarded: pk.scan does not run in a transaction (a scan is many reads, not one isolated step)\r\n", "EXEC")
	}
}
