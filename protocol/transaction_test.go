package protocol

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/commands"
)

// exchange writes stream in one write and reads exactly the bytes of want.
func exchange(t *testing.T, nc net.Conn, rd *bufio.Reader, stream, want string) {
	t.Helper()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := io.WriteString(nc, stream)
	require.NoError(t, err)
	got := make([]byte, len(want))
	_, err = io.ReadFull(rd, got)
	require.NoError(t, err, "read so far: %q", got)
	require.Equal(t, want, string(got))
}

func dialRd(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return nc, bufio.NewReader(nc)
}

// TestTransactionQueueing holds MULTI/EXEC/DISCARD/WATCH to Redis's
// replies, on each path a PK command can take outside a transaction.
func TestTransactionQueueing(t *testing.T) {
	cases := []struct {
		name   string
		stream []string
		want   string
	}{
		{"block", []string{req("MULTI"), echoReq(1), req("PING"), echoReq(2), req("ECHO", "e"), req("EXEC")},
			"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*4\r\n:1\r\n+PONG\r\n:2\r\n$1\r\ne\r\n"},
		{"empty block", []string{req("MULTI"), req("EXEC")}, "+OK\r\n*0\r\n"},
		{"nested MULTI keeps the transaction open", []string{req("MULTI"), echoReq(1), req("MULTI"), echoReq(2), req("EXEC")},
			"+OK\r\n+QUEUED\r\n-ERR MULTI calls can not be nested\r\n+QUEUED\r\n*2\r\n:1\r\n:2\r\n"},
		{"without MULTI", []string{req("EXEC"), req("DISCARD")}, "-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n"},
		{"DISCARD drops the queue", []string{req("MULTI"), echoReq(1), req("DISCARD"), req("EXEC"), echoReq(3)},
			"+OK\r\n+QUEUED\r\n+OK\r\n-ERR EXEC without MULTI\r\n:3\r\n"},
		{"a refused PK command aborts", []string{req("MULTI"), echoReq(1), req("PK.ECHO", "x"), echoReq(2), req("EXEC"), echoReq(4)},
			"+OK\r\n+QUEUED\r\n-ERR not a number\r\n+QUEUED\r\n-EXECABORT Transaction discarded because of previous errors.\r\n:4\r\n"},
		{"an unknown command aborts", []string{req("MULTI"), req("FOO", "bar"), req("EXEC")},
			"+OK\r\n-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{"a connection command's arity aborts", []string{req("MULTI"), req("ECHO"), req("EXEC")},
			"+OK\r\n-ERR wrong number of arguments for 'echo' command\r\n-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{"an unknown subcommand aborts", []string{req("MULTI"), req("CLIENT", "FOO"), req("EXEC")},
			"+OK\r\n-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{"a connection command's own error is its entry", []string{req("MULTI"), req("SELECT", "x"), req("HELLO", "4"), echoReq(1), req("EXEC")},
			"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n-ERR value is not an integer or out of range\r\n-NOPROTO unsupported protocol version\r\n:1\r\n"},
		{"EXEC's own arity aborts", []string{req("MULTI"), req("EXEC", "x"), req("EXEC")},
			"+OK\r\n-ERR wrong number of arguments for 'exec' command\r\n-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{"MULTI's arity", []string{req("MULTI", "x"), req("EXEC")},
			"-ERR wrong number of arguments for 'multi' command\r\n-ERR EXEC without MULTI\r\n"},
		{"WATCH and UNWATCH", []string{req("WATCH", "k"), req("UNWATCH"), req("watch", "a", "b")},
			"-ERR WATCH is not supported: use IFEQ conditions\r\n-ERR UNWATCH is not supported: use IFEQ conditions\r\n" +
				"-ERR WATCH is not supported: use IFEQ conditions\r\n"},
		{"WATCH inside MULTI is answered, not queued", []string{req("MULTI"), req("WATCH", "k"), echoReq(1), req("UNWATCH"), req("EXEC")},
			"+OK\r\n-ERR WATCH is not supported: use IFEQ conditions\r\n+QUEUED\r\n-ERR UNWATCH is not supported: use IFEQ conditions\r\n*1\r\n:1\r\n"},
		{"a failure of the store is the whole block's", []string{req("MULTI"), echoReq(1), req("PK.ECHO", "fail"), req("EXEC"), echoReq(5)},
			"+OK\r\n+QUEUED\r\n+QUEUED\r\n-UNAVAILABLE fake: failed\r\n:5\r\n"},
		{"connection commands run in EXEC, in order", []string{req("MULTI"), req("CLIENT", "SETNAME", "a"), req("CLIENT", "GETNAME"),
			req("SELECT", "1"), req("EXEC"), req("CLIENT", "GETNAME")},
			"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n+OK\r\n$1\r\na\r\n-ERR DB index is out of range\r\n$1\r\na\r\n"},
		{"lower case", []string{req("multi"), echoReq(1), req("exec")}, "+OK\r\n+QUEUED\r\n*1\r\n:1\r\n"},
	}
	paths := map[string]struct {
		inline bool
		h      *echoHandler
	}{
		"inline":    {true, &echoHandler{inline: true}},
		"goroutine": {false, &echoHandler{}},
		"batched":   {false, &echoHandler{batches: true}},
		"onloop":    {false, &echoHandler{onLoop: true}},
	}
	for pname, p := range paths {
		addr := serve(t, Config{}, p.h)
		for _, tc := range cases {
			t.Run(pname+"/"+tc.name, func(t *testing.T) {
				nc, rd := dialRd(t, addr)
				// one write: the block inside a pipeline
				exchange(t, nc, rd, strings.Join(tc.stream, ""), tc.want)
				// and one command at a time
				nc, rd = dialRd(t, addr)
				var got strings.Builder
				for _, r := range tc.stream {
					_, err := io.WriteString(nc, r)
					require.NoError(t, err)
					_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
					reply, err := readReply(rd)
					require.NoError(t, err)
					got.WriteString(reply)
				}
				require.Equal(t, tc.want, got.String())
			})
		}
	}
}

// readReply reads one RESP reply, whole.
func readReply(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	switch line[0] {
	case '$':
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		if n < 0 {
			return line, nil
		}
		buf := make([]byte, n+2)
		_, err := io.ReadFull(rd, buf)
		return line + string(buf), err
	case '*', '%':
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		if line[0] == '%' {
			n *= 2
		}
		out := line
		for range max(n, 0) {
			item, err := readReply(rd)
			if err != nil {
				return "", err
			}
			out += item
		}
		return out, nil
	}
	return line, nil
}

// TestTransactionAuth: MULTI needs AUTH like any command; QUIT inside
// MULTI is run at once, as in Redis.
func TestTransactionAuth(t *testing.T) {
	addr := serve(t, Config{Password: "pw"}, &echoHandler{batches: true})
	nc, rd := dialRd(t, addr)
	exchange(t, nc, rd, req("MULTI")+req("EXEC"), "-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n")
	exchange(t, nc, rd, req("AUTH", "pw")+req("MULTI")+echoReq(1)+req("QUIT")+echoReq(2), "+OK\r\n+OK\r\n+QUEUED\r\n+OK\r\n")
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	rest, err := io.ReadAll(rd)
	require.NoError(t, err)
	require.Empty(t, string(rest), "after QUIT the connection is closed")
}

// TestTransactionBounds: a queue past its bounds is refused and EXEC
// aborts; the connection serves on.
func TestTransactionBounds(t *testing.T) {
	addr := serve(t, Config{MaxBulk: 9 << 20}, &echoHandler{batches: true})
	full := "-" + commands.ErrQueueFull.Linef(maxQueuedCommands, maxQueuedBytes) + "\r\n"

	t.Run("commands", func(t *testing.T) {
		nc, rd := dialRd(t, addr)
		var stream, want strings.Builder
		stream.WriteString(req("MULTI"))
		want.WriteString("+OK\r\n")
		for i := range maxQueuedCommands + 2 {
			stream.WriteString(echoReq(i))
			switch {
			case i < maxQueuedCommands:
				want.WriteString("+QUEUED\r\n")
			case i == maxQueuedCommands:
				want.WriteString(full)
			default: // still checked, answered, not kept
				want.WriteString("+QUEUED\r\n")
			}
		}
		stream.WriteString(req("EXEC") + echoReq(7))
		want.WriteString("-EXECABORT Transaction discarded because of previous errors.\r\n:7\r\n")
		exchange(t, nc, rd, stream.String(), want.String())
	})
	t.Run("bytes", func(t *testing.T) {
		nc, rd := dialRd(t, addr)
		big := strings.Repeat("x", 1<<20)
		var stream, want strings.Builder
		stream.WriteString(req("MULTI"))
		want.WriteString("+OK\r\n")
		n := maxQueuedBytes/(len(big)+4) + 1 // the last one is over
		for i := range n {
			stream.WriteString(req("ECHO", big))
			if i < n-1 {
				want.WriteString("+QUEUED\r\n")
			} else {
				want.WriteString(full)
			}
		}
		stream.WriteString(req("EXEC"))
		want.WriteString("-EXECABORT Transaction discarded because of previous errors.\r\n")
		exchange(t, nc, rd, stream.String(), want.String())
		// exactly at the bound is accepted
		stream.Reset()
		want.Reset()
		stream.WriteString(req("MULTI") + req("ECHO", strings.Repeat("y", maxQueuedBytes-4)) + req("EXEC"))
		want.WriteString("+OK\r\n+QUEUED\r\n*1\r\n$" + strconv.Itoa(maxQueuedBytes-4) + "\r\n" + strings.Repeat("y", maxQueuedBytes-4) + "\r\n")
		exchange(t, nc, rd, stream.String(), want.String())
	})
}

// TestTransactionPipelineOrder sends long pipelines in which blocks are
// mixed with PK commands (runs) and connection commands, from several
// clients, on every path: every reply comes in order.
func TestTransactionPipelineOrder(t *testing.T) {
	paths := map[string]struct {
		inline bool
		h      *echoHandler
	}{
		"inline":    {true, &echoHandler{inline: true}},
		"goroutine": {false, &echoHandler{delay: 50 * time.Microsecond}},
		"batched":   {false, &echoHandler{batches: true, delay: 200 * time.Microsecond}},
		"onloop":    {false, &echoHandler{onLoop: true, delay: 200 * time.Microsecond}},
	}
	for name, p := range paths {
		t.Run(name, func(t *testing.T) {
			addr := serve(t, Config{EventLoops: 2}, p.h)
			const clients, each = 6, 600
			eachClient(t, addr, clients, func(cl int, nc net.Conn) {
				var stream, want strings.Builder
				for i := range each {
					n := cl*each + i
					switch i % 7 {
					case 3:
						stream.WriteString(req("MULTI") + echoReq(n) + req("PING") + echoReq(-n) + req("EXEC"))
						want.WriteString("+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n:" + strconv.Itoa(n) + "\r\n+PONG\r\n:" + strconv.Itoa(-n) + "\r\n")
					case 5:
						stream.WriteString(req("MULTI") + req("EXEC"))
						want.WriteString("+OK\r\n*0\r\n")
					default:
						stream.WriteString(echoReq(n))
						want.WriteString(":" + strconv.Itoa(n) + "\r\n")
					}
				}
				go func() { _, _ = io.WriteString(nc, stream.String()) }()
				_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
				got := make([]byte, want.Len())
				_, err := io.ReadFull(bufio.NewReader(nc), got)
				if assertNoError(t, err) && string(got) != want.String() {
					t.Errorf("client %d: replies out of order", cl)
				}
			})
		})
	}
}

// TestTransactionRESP3 runs a block with the PK commands' replies that
// differ in RESP3 (nil), and HELLO inside the block switching the protocol
// in the middle of EXEC's array, as Redis does.
func TestTransactionRESP3(t *testing.T) {
	h := commands.New(memory.New(backend.Options{}), commands.DefaultLimits, nil)
	addr := serve(t, Config{}, h)
	nc, rd := dialRd(t, addr)
	exchange(t, nc, rd, req("HELLO", "3")+req("MULTI")+req("PK.PREPARE", "ns", "k", "v")+req("PK.GET", "ns", "nope")+
		req("PK.GETVALUE", "ns", "nope")+req("PK.GETVALUE", "ns", "k")+req("EXEC"), "")
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got []string
	for range 7 {
		r, err := readReply(rd)
		require.NoError(t, err)
		got = append(got, r)
	}
	require.Equal(t, "+OK\r\n", got[1])
	require.Equal(t, "*4\r\n:1\r\n_\r\n_\r\n*2\r\n$1\r\nv\r\n:-1\r\n", got[6])

	nc, rd = dialRd(t, addr)
	exchange(t, nc, rd, req("MULTI")+req("PK.GET", "ns", "nope")+req("HELLO", "3", "SETNAME", "x")+req("PK.GET", "ns", "nope")+req("EXEC"),
		"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n$-1\r\n%7\r\n")
	for range 7 {
		_, err := readReply(rd)
		require.NoError(t, err)
		_, err = readReply(rd)
		require.NoError(t, err)
	}
	last, err := readReply(rd)
	require.NoError(t, err)
	require.Equal(t, "_\r\n", last)
}

// TestTransactionKillsItself: CLIENT KILL of the connection itself inside
// MULTI runs in EXEC, off the loop while the connection is at the store;
// as in Redis, EXEC's reply is written and the connection is then closed,
// nothing after it answered.
func TestTransactionKillsItself(t *testing.T) {
	for _, inline := range []bool{true, false} {
		addr := serve(t, Config{}, &echoHandler{inline: inline})
		nc, rd := dialRd(t, addr)
		_, err := io.WriteString(nc, req("CLIENT", "ID"))
		require.NoError(t, err)
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		idReply, err := readReply(rd)
		require.NoError(t, err)
		id := strings.TrimSuffix(strings.TrimPrefix(idReply, ":"), "\r\n")
		exchange(t, nc, rd, req("MULTI")+req("CLIENT", "KILL", "ID", id, "SKIPME", "no")+req("EXEC")+req("PING"),
			"+OK\r\n+QUEUED\r\n*1\r\n:1\r\n")
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		rest, err := io.ReadAll(rd)
		require.NoError(t, err, "the connection is closed after EXEC's reply")
		require.Empty(t, string(rest), "nothing after EXEC is answered")
	}
}
