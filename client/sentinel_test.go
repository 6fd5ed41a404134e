package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/redcon"

	"github.com/prepkey/prepkey/client"
)

// fakeSentinel serves the Sentinel commands go-redis's FailoverClient sends
// and names master as the address of the master called name: what real
// Sentinels answer when they monitor a sidecar (which a real Sentinel set
// cannot be made to do here without disturbing the other tests' set). It
// counts the lookups, to show the client found the sidecar through it.
func fakeSentinel(t *testing.T, name, master string) (addr string, lookups func() int) {
	host, port, err := net.SplitHostPort(master)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	n := 0
	var ps redcon.PubSub
	srv := redcon.NewServer("", func(conn redcon.Conn, cmd redcon.Command) {
		words := make([]string, len(cmd.Args))
		for i, a := range cmd.Args {
			words[i] = strings.ToLower(string(a))
		}
		switch {
		case words[0] == "ping":
			conn.WriteString("PONG")
		case words[0] == "psubscribe" || words[0] == "subscribe":
			for _, ch := range cmd.Args[1:] {
				ps.Psubscribe(conn, string(ch))
			}
		case len(words) == 3 && words[0] == "sentinel" && words[1] == "get-master-addr-by-name":
			if string(cmd.Args[2]) != name {
				conn.WriteNull()
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			conn.WriteArray(2)
			conn.WriteBulkString(host)
			conn.WriteBulkString(port)
		case len(words) == 3 && words[0] == "sentinel" && (words[1] == "sentinels" || words[1] == "replicas"):
			conn.WriteArray(0)
		case words[0] == "client":
			conn.WriteString("OK")
		default: // HELLO among them: go-redis then speaks RESP2 to it
			conn.WriteError(fmt.Sprintf("ERR unknown command '%s'", words[0]))
		}
	}, nil, nil)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// TestFailoverClient: a go-redis Sentinel client (NewFailoverClient) whose
// Sentinels name a sidecar as the master.
func TestFailoverClient(t *testing.T) {
	s := start(t, "--backend", "memory:")
	sentinel, lookups := fakeSentinel(t, "pk", s.addr)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			fc := redis.NewFailoverClient(&redis.FailoverOptions{
				MasterName: "pk", SentinelAddrs: []string{sentinel},
				Password: password, Protocol: proto, MaxRetries: -1,
			})
			t.Cleanup(func() { fc.Close() })
			before := lookups()
			pk, ctx, ns := client.New(fc), testContext(t), uniqueNS(t)
			direct := client.New(s.client(t, proto, &recorder{}))

			ok, err := pk.Prepare(ctx, ns, "alice", []byte("42"))
			require.NoError(t, err)
			require.True(t, ok)
			require.Greater(t, lookups(), before, "the master was looked up at the Sentinel")
			requireRecord(t, direct, ns, "alice", "42", time.Time{})
			got, found, err := pk.Get(ctx, ns, "alice")
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, "42", string(got))

			errBody := errors.New("body")
			err = pk.UsingPrepare(ctx, ns, "bob", []byte("43"), func(context.Context, bool) error { return errBody })
			require.True(t, err == errBody)
			requireNoRecord(t, direct, ns, "bob")
			ok, err = pk.ChangeKey(ctx, ns, "alice", []byte("42"), "alice2", []byte("42"))
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, []string{"alice2"}, sortedKeys(collect(t, pk.Scan(ctx, ns))))
		})
	}
}
