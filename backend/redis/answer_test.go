package redis

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/redcon"

	"github.com/prepkey/prepkey/backend"
)

// TestBlockResultShapes pins each shape of an answer in block.lua's array,
// read by both clients through the one decoder: the Wire's redcon.RESP
// (RESP2 bytes) and rueidis's message (RESP3, from a script that returns
// the same shape). Both must give the same result, or both fail; an answer
// of no shape the op's script gives is a failure, never a false.
func TestBlockResultShapes(t *testing.T) {
	f := startFake(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{f.Addr()}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	live := backend.Result{Found: true, Record: backend.Record{Value: []byte("v"), TTLAt: 1750000000123, Live: true}}
	rows := []struct {
		name string
		kind backend.OpKind
		resp string // the answer as the Wire reads it
		lua  string // a script's element of the same shape, as rueidis reads it
		want backend.Result
		err  string // "" none; else the failure (exact for an error answer)
	}{
		{"won", backend.OpPrepare, ":1\r\n", "1", backend.Result{OK: true}, ""},
		{"lost", backend.OpRollback, ":0\r\n", "0", backend.Result{}, ""},
		{"absent", backend.OpGet, "$-1\r\n", "false", backend.Result{}, ""},
		{"live", backend.OpGet, "*3\r\n$1\r\nv\r\n$13\r\n1750000000123\r\n:1\r\n", "{'v', '1750000000123', 1}", live, ""},
		{"expired", backend.OpGet, "*3\r\n$0\r\n\r\n$1\r\n5\r\n:0\r\n", "{'', '5', 0}",
			backend.Result{Found: true, Record: backend.Record{Value: []byte{}, TTLAt: 5}}, ""},
		{"moved", backend.OpMove, ":1\r\n", "1", backend.Result{Move: backend.Moved}, ""},
		{"new key taken", backend.OpMove, ":0\r\n", "0", backend.Result{Move: backend.NewKeyTaken}, ""},
		{"old key mismatch", backend.OpMove, ":2\r\n", "2", backend.Result{Move: backend.OldKeyMismatch}, ""},
		{"the op's own error", backend.OpPrepare, "-WRONGTYPE wrong kind\r\n", "{err='WRONGTYPE wrong kind'}", backend.Result{}, "WRONGTYPE wrong kind"},
		{"code out of range", backend.OpPrepare, ":2\r\n", "2", backend.Result{}, "unexpected reply"},
		{"move code out of range", backend.OpMove, ":3\r\n", "3", backend.Result{}, "unexpected reply"},
		{"negative code", backend.OpReprepare, ":-1\r\n", "-1", backend.Result{}, "unexpected reply"},
		{"string for a flag", backend.OpPrepare, "$1\r\n1\r\n", "'1'", backend.Result{}, "unexpected reply"},
		{"status for a flag", backend.OpPrepare, "+OK\r\n", "{ok='OK'}", backend.Result{}, "unexpected reply"},
		{"nil for a flag", backend.OpPrepare, "$-1\r\n", "false", backend.Result{}, "unexpected reply"},
		{"integer for a get", backend.OpGet, ":1\r\n", "1", backend.Result{}, "unexpected reply"},
		{"short record", backend.OpGet, "*2\r\n$1\r\nv\r\n$1\r\n0\r\n", "{'v', '0'}", backend.Result{}, "unexpected reply"},
		{"long record", backend.OpGet, "*4\r\n$1\r\nv\r\n$1\r\n0\r\n:1\r\n:1\r\n", "{'v', '0', 1, 1}", backend.Result{}, "unexpected reply"},
		{"ttlAt not a number", backend.OpGet, "*3\r\n$1\r\nv\r\n$1\r\nx\r\n:1\r\n", "{'v', 'x', 1}", backend.Result{}, "unexpected reply"},
		{"live not an integer", backend.OpGet, "*3\r\n$1\r\nv\r\n$1\r\n5\r\n$1\r\n1\r\n", "{'v', '5', '1'}", backend.Result{}, "unexpected reply"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			n, e := redcon.ReadNextRESP([]byte(r.resp))
			require.Equal(t, len(r.resp), n)
			var wire answer
			wire.readResp(&e)
			reply := c.Do(context.Background(), c.B().Eval().Script("return {"+r.lua+"}").Numkeys(0).Build())
			arr, err := reply.ToArray()
			require.NoError(t, err)
			require.Len(t, arr, 1)
			var msg answer
			msg.readMsg(&arr[0])
			for _, a := range []struct {
				client string
				a      *answer
			}{{"redcon", &wire}, {"rueidis", &msg}} {
				got, err := blockResult(r.kind, a.a)
				switch {
				case r.err == "":
					require.NoError(t, err, a.client)
					require.Equal(t, r.want, got, a.client)
				case r.err == "unexpected reply":
					require.ErrorContains(t, err, r.err, a.client)
				default:
					require.EqualError(t, err, r.err, a.client)
				}
			}
		})
	}
	// rueidis's own error type is kept: the scan looks into it.
	reply := c.Do(context.Background(), c.B().Eval().Script("return {{err='WRONGTYPE x'}}").Numkeys(0).Build())
	arr, err := reply.ToArray()
	require.NoError(t, err)
	var a answer
	a.readMsg(&arr[0])
	_, err = blockResult(backend.OpGet, &a)
	_, ok := rueidis.IsRedisErr(err)
	require.True(t, ok, "%T", err)
}
