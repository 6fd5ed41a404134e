package e2e

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestWireBytes holds the replies to the contract byte for byte, in RESP2
// and, on the same connection after HELLO 3, in RESP3.
func TestWireBytes(t *testing.T) {
	s := start(t, "--backend", "memory:")
	r := s.raw(t)
	r.do(":1\r\n", "PK.PREPARE", "ns", "k", "v")
	r.do(":0\r\n", "PK.PREPARE", "ns", "k", "v")
	r.do("$1\r\nv\r\n", "PK.GET", "ns", "k")
	r.do("*2\r\n$1\r\nv\r\n:-1\r\n", "PK.GETVALUE", "ns", "k")
	r.do("$-1\r\n", "PK.GET", "ns", "none")
	r.do("*-1\r\n", "PK.GETVALUE", "ns", "none")
	r.do("-ERR syntax error\r\n", "PK.PREPARE", "ns", "k", "v", "EX")
	r.do("+PONG\r\n", "PING")
	r.do("$2\r\nhi\r\n", "PING", "hi")
	r.do("$3\r\nabc\r\n", "ECHO", "abc")
	r.do("+OK\r\n", "SELECT", "0")
	r.do("-ERR DB index is out of range\r\n", "SELECT", "1")
	r.do("-NOPROTO unsupported protocol version\r\n", "HELLO", "4")
	r.do("-ERR Protocol version is not an integer or out of range\r\n", "HELLO", "x")
	r.do("$-1\r\n", "CLIENT", "GETNAME")
	r.do("+OK\r\n", "CLIENT", "SETNAME", "app1")
	r.do("$4\r\napp1\r\n", "CLIENT", "GETNAME")
	r.do("-ERR Client names cannot contain spaces, newlines or special characters.\r\n", "CLIENT", "SETNAME", "a b")
	r.do("+OK\r\n", "CLIENT", "SETINFO", "LIB-NAME", "go-redis")
	r.do("-ERR LIB-NAME cannot contain spaces, newlines or special characters.\r\n", "CLIENT", "SETINFO", "LIB-NAME", "a b")
	r.do("-ERR Unrecognized option 'LIB-X'\r\n", "CLIENT", "SETINFO", "LIB-X", "a")
	r.do("+OK\r\n", "CLIENT", "NO-TOUCH", "on")
	r.do("+OK\r\n", "CLIENT", "MAINT_NOTIFICATIONS", "on", "moving-endpoint-type", "internal-ip")
	r.do("-ERR unknown command 'FLUSHALL', with args beginning with: \r\n", "FLUSHALL")

	// HELLO 2 answers a flat array and keeps RESP2
	r.send(resp("HELLO", "2"))
	hello2 := "*14\r\n$6\r\nserver\r\n$7\r\nprepkey\r\n$7\r\nversion\r\n$5\r\n7.2.0\r\n$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:"
	r.expect(hello2)
	id, _ := r.rd.ReadString('\n')
	r.expect("$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n")

	// HELLO 3: a map, and from then on nil is _
	r.send(resp("HELLO", "3"))
	r.expect("%7\r\n$6\r\nserver\r\n$7\r\nprepkey\r\n$7\r\nversion\r\n$5\r\n7.2.0\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:" + id)
	r.expect("$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n")
	r.do("_\r\n", "PK.GET", "ns", "none")
	r.do("_\r\n", "PK.GETVALUE", "ns", "none")
	r.do("*2\r\n$1\r\nv\r\n:-1\r\n", "PK.GETVALUE", "ns", "k")
	r.do("%0\r\n", "COMMAND", "DOCS", "nosuch")
	r.do(":1\r\n", "PK.ROLLBACK", "ns", "k")

	// an inline command, as telnet sends it
	r.send("PING\r\n")
	r.expect("+PONG\r\n")

	// QUIT answers, then closes
	r.do("+OK\r\n", "QUIT")
	r.closed()
}

// TestInfo checks the fields clients wait for.
func TestInfo(t *testing.T) {
	s := start(t, "--backend", "memory:")
	c := s.client(t, 2)
	info, err := c.Info(ctx()).Result()
	require.NoError(t, err)
	for _, want := range []string{"# Server\r\n", "redis_version:7.2.0\r\n", "loading:0\r\n", "# Backend\r\nbackend:memory\r\nbackend_ready:1\r\n"} {
		require.Contains(t, info, want)
	}
	server, err := c.Info(ctx(), "server").Result()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(server, "# Server\r\n"))
	require.NotContains(t, server, "# Clients")
	n, err := c.Do(ctx(), "COMMAND", "COUNT").Int64()
	require.NoError(t, err)
	list, err := c.Do(ctx(), "COMMAND").Slice()
	require.NoError(t, err)
	require.Len(t, list, int(n))
	require.Contains(t, fmt.Sprint(list), "pk.reprepare -4 [write fast]")
}

// TestAuth covers NOAUTH, WRONGPASS, AUTH [user] pass and HELLO AUTH.
func TestAuth(t *testing.T) {
	s := start(t, "--backend", "memory:", "--requirepass", "s3cret")
	r := s.raw(t)
	r.do("-NOAUTH Authentication required.\r\n", "PK.GET", "ns", "k")
	r.do("-NOAUTH Authentication required.\r\n", "PING")
	r.do("-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH", "nope")
	r.do("-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH", "admin", "s3cret")
	r.do("-NOAUTH Authentication required.\r\n", "PING")
	r.do("+OK\r\n", "AUTH", "s3cret")
	r.do("$-1\r\n", "PK.GET", "ns", "k")

	r2 := s.raw(t)
	r2.do("+OK\r\n", "AUTH", "default", "s3cret")
	r2.do("+PONG\r\n", "PING")

	r3 := s.raw(t)
	r3.send(resp("HELLO", "3"))
	r3.expect("-NOAUTH HELLO must be called with the client already authenticated")
	r3.rd.ReadString('\n')
	r3.do("-WRONGPASS invalid username-password pair or user is disabled.\r\n", "HELLO", "3", "AUTH", "default", "bad")
	r3.send(resp("HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "me"))
	r3.expect("%7\r\n")
	r3.rd.ReadString('\n')

	// real clients: go-redis authenticates with HELLO 3 AUTH (RESP3) or
	// AUTH (RESP2)
	for _, proto := range []int{2, 3} {
		good := s.client(t, proto, func(o *redis.Options) { o.Password = "s3cret" })
		check(t, good, int64(1), "PK.PREPARE", "ns", fmt.Sprintf("k%d", proto), "v")
		bad := s.client(t, proto, func(o *redis.Options) { o.Password = "wrong" })
		_, err := bad.Do(ctx(), "PING").Result()
		require.ErrorContains(t, err, "WRONGPASS")
	}
	none := s.client(t, 2)
	check(t, none, errReply("NOAUTH Authentication required."), "PK.GET", "ns", "k")

	// without a password, AUTH <pass> is the error Redis gives
	open := start(t, "--backend", "memory:").raw(t)
	open.do("-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n", "AUTH", "x")
	open.do("+OK\r\n", "AUTH", "default", "anything")
}

// TestHostileInput checks that framing limits close the connection with a
// protocol error before the announced bytes are read, while bad commands
// leave the connection open.
func TestHostileInput(t *testing.T) {
	s := start(t, "--backend", "memory:", "--requirepass", "pw")

	tooMany := s.raw(t)
	tooMany.send("*17\r\n")
	tooMany.expect("-ERR Protocol error: unauthenticated multibulk length\r\n")
	tooMany.closed()

	bigBulk := s.raw(t)
	bigBulk.send("*1\r\n$65537\r\n")
	bigBulk.expect("-ERR Protocol error: unauthenticated bulk length\r\n")
	bigBulk.closed()

	// a length header for a huge bulk is refused at once, not buffered
	authed := s.raw(t)
	authed.do("+OK\r\n", "AUTH", "pw")
	authed.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$9000000000\r\n")
	authed.expect("-ERR Protocol error: invalid bulk length\r\n")
	authed.closed()

	// 16 arguments and 64 KiB of arguments are still fine before AUTH
	edge := s.raw(t)
	args := make([]string, 16)
	for i := range args {
		args[i] = "x"
	}
	args[0] = "AUTH"
	edge.do("-ERR syntax error\r\n", args...)
	edge.do("-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH", strings.Repeat("p", 65536-len("AUTH")))
	edge.do("+OK\r\n", "AUTH", "pw")

	// broken framing: a protocol error, then close
	broken := s.raw(t)
	broken.send("*1\r\n+PING\r\n")
	broken.expect("-ERR Protocol error: expected '$', got '+'\r\n")
	broken.closed()
}

// TestPipeline sends 1,000 commands in one write and checks every answer
// comes back in order.
func TestPipeline(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *sidecar) {
		ns := uniqueNS(t)
		r := s.raw(t)
		r.wait = time.Minute // FerretDB takes ~20 ms a write
		var req, want strings.Builder
		for i := range 1000 {
			switch i % 4 {
			case 0:
				req.WriteString(resp("PK.PREPARE", ns, fmt.Sprint(i), fmt.Sprint("v", i)))
				want.WriteString(":1\r\n")
			case 1:
				req.WriteString(resp("PK.GET", ns, fmt.Sprint(i-1)))
				v := fmt.Sprint("v", i-1)
				fmt.Fprintf(&want, "$%d\r\n%s\r\n", len(v), v)
			case 2:
				req.WriteString(resp("PK.PREPARE", ns, fmt.Sprint(i-2), "x"))
				want.WriteString(":0\r\n")
			case 3:
				req.WriteString(resp("PK.ROLLBACK", ns, fmt.Sprint(i-3), "IFEQ", fmt.Sprint("v", i-3)))
				want.WriteString(":1\r\n")
			}
		}
		r.send(req.String())
		r.expect(want.String())

		// and through go-redis's pipeline
		c := s.client(t, 3, func(o *redis.Options) { o.ReadTimeout = time.Minute })
		pipe := c.Pipeline()
		cmds := make([]*redis.Cmd, 1000)
		for i := range cmds {
			cmds[i] = pipe.Do(ctx(), "PK.PREPARE", ns, fmt.Sprint("p", i%500), "v")
		}
		_, err := pipe.Exec(ctx())
		require.NoError(t, err)
		for i, cmd := range cmds {
			want := int64(1)
			if i >= 500 {
				want = 0
			}
			require.Equal(t, want, cmd.Val(), "command %d", i)
		}
	})
}

// TestRace races 64 real connections for one key: exactly one wins, on
// every backend.
func TestRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *sidecar) {
		ns := uniqueNS(t)
		const n = 64
		conns := make([]*redis.Client, n)
		for i := range conns {
			conns[i] = s.client(t, 2, func(o *redis.Options) { o.PoolSize = 1 })
			require.NoError(t, conns[i].Ping(ctx()).Err())
		}
		var wg sync.WaitGroup
		startGate := make(chan struct{})
		results := make([]int64, n)
		errs := make([]error, n)
		for i := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-startGate
				results[i], errs[i] = conns[i].Do(ctx(), "PK.PREPARE", ns, "contested", fmt.Sprint(i)).Int64()
			}()
		}
		close(startGate)
		wg.Wait()
		winners := 0
		winner := -1
		for i := range results {
			require.NoError(t, errs[i])
			if results[i] == 1 {
				winners++
				winner = i
			}
		}
		require.Equal(t, 1, winners)
		check(t, conns[0], fmt.Sprint(winner), "PK.GET", ns, "contested")
	})
}

// TestMaxClients refuses the connection past --max-clients with Redis's
// error.
func TestMaxClients(t *testing.T) {
	s := start(t, "--backend", "memory:", "--max-clients", "2")
	a, b := s.raw(t), s.raw(t)
	a.do("+PONG\r\n", "PING")
	b.do("+PONG\r\n", "PING")
	c := s.raw(t)
	c.expect("-ERR max number of clients reached\r\n")
	c.closed()
	a.nc.Close()
	require.Eventually(t, func() bool {
		nc, err := net.Dial("tcp", s.addr)
		if err != nil {
			return false
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(time.Second))
		nc.Write([]byte(resp("PING")))
		buf := make([]byte, 7)
		n, _ := nc.Read(buf)
		return string(buf[:n]) == "+PONG\r\n"
	}, 5*time.Second, 50*time.Millisecond)
}
