package e2e

import (
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The end-to-end tests of issue 23's N3: the queues of open transactions
// are bounded on all connections together (--max-tx-memory), not only on
// each (1024 commands, 8 MiB).

// txOOM is the reply to a command queued past --max-tx-memory of 4 MiB.
const txOOM = "-OOM command not allowed when transactions' queued memory > 'max-tx-memory' (4194304 bytes); the transaction is discarded\r\n"

const txExecAbort = "-EXECABORT Transaction discarded because of previous errors.\r\n"

// txValue is a 512 KiB value: eight of them pass a 4 MiB bound, seven fit.
var txValue = strings.Repeat("v", 512<<10)

// txHeld is what queuing args holds as the bound counts it: the arguments'
// bytes and 32 per argument (protocol.queuedSize).
func txHeld(args ...string) int64 {
	n := int64(0)
	for _, a := range args {
		n += int64(len(a)) + 32
	}
	return n
}

// txQueuedBytes reads INFO's tx_queued_bytes on r.
func txQueuedBytes(t *testing.T, r *raw) int64 {
	t.Helper()
	r.send(resp("INFO", "clients"))
	head := r.line()
	require.True(t, strings.HasPrefix(head, "$"), "INFO answered %q", head)
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	require.NoError(t, err)
	body := make([]byte, n+2)
	_ = r.nc.SetReadDeadline(time.Now().Add(r.wait))
	_, err = io.ReadFull(r.rd, body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, "tx_queued_bytes:"); ok {
			got, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return got
		}
	}
	t.Fatalf("INFO clients has no tx_queued_bytes: %q", body)
	return 0
}

// txWaitQueued waits until INFO's tx_queued_bytes is want: connections
// closed by the client are closed by the sidecar when its loop reads EOF.
func txWaitQueued(t *testing.T, r *raw, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := txQueuedBytes(t, r)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tx_queued_bytes is %d, want %d", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTxMemoryBound: with PK_MAX_TX_MEMORY=4MiB, transactions on several
// connections queue 512 KiB values until together they would pass it. The
// command that would is refused with -OOM, its transaction is discarded
// (EXEC answers -EXECABORT) and holds nothing, not even the commands
// queued after the refusal; once the others end, a transaction of the
// same size runs.
func TestTxMemoryBound(t *testing.T) {
	// The bound is set through the environment, the way a container sets
	// it; TestTxMemoryNoLeak sets it by flag.
	s := launchTx(t, "PK_MAX_TX_MEMORY=4MiB")
	ns := uniqueNS(t)
	info := s.raw(t)
	prep := func(k int) []string { return []string{"PK.PREPARE", ns, fmt.Sprintf("k%d", k), txValue} }

	a := s.raw(t)
	a.do("+OK\r\n", "MULTI")
	for k := range 5 {
		a.do("+QUEUED\r\n", prep(k)...)
	}
	held := 5 * txHeld(prep(0)...)

	b := s.raw(t)
	b.do("+OK\r\n", "MULTI")
	b.do("+QUEUED\r\n", prep(5)...)
	b.do("+QUEUED\r\n", prep(6)...)
	b.send(resp(prep(7)...))
	require.Equal(t, txOOM, b.line())
	// The refused transaction released what it held, and holds nothing
	// of what it is sent after the refusal.
	require.Equal(t, held, txQueuedBytes(t, info))
	b.do("+QUEUED\r\n", "PING")
	b.do("+QUEUED\r\n", prep(8)...)
	require.Equal(t, held, txQueuedBytes(t, info))
	b.do(txExecAbort, "EXEC")
	b.do("*-1\r\n", "PK.GETVALUE", ns, "k5") // nothing of it ran

	// A third connection fits two more, not three.
	c := s.raw(t)
	c.do("+OK\r\n", "MULTI")
	c.do("+QUEUED\r\n", prep(10)...)
	c.do("+QUEUED\r\n", prep(11)...)
	c.do(txOOM, prep(12)...)
	c.do(txExecAbort, "EXEC")
	require.Equal(t, held, txQueuedBytes(t, info))

	// Once the first transaction is discarded, one of seven values runs.
	a.do("+OK\r\n", "DISCARD")
	require.Equal(t, int64(0), txQueuedBytes(t, info))
	c.do("+OK\r\n", "MULTI")
	for k := range 7 {
		c.do("+QUEUED\r\n", prep(20+k)...)
	}
	require.Equal(t, 7*txHeld(prep(20)...), txQueuedBytes(t, info))
	c.do("*7\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n", "EXEC")
	require.Equal(t, int64(0), txQueuedBytes(t, info))
	c.do("$"+strconv.Itoa(len(txValue))+"\r\n"+txValue+"\r\n", "PK.GET", ns, "k26")
	// The first transaction's commands never ran.
	c.do("*-1\r\n", "PK.GETVALUE", ns, "k0")
}

// launchTx starts a memory: sidecar for 512 KiB values with env added.
func launchTx(t *testing.T, env ...string) *sidecar {
	t.Helper()
	cmd := exec.Command(sidecarBin, "--backend", "memory:", "--max-value-bytes", strconv.Itoa(len(txValue)), "--listen", "127.0.0.1:0")
	cmd.Env = env
	return launch(t, cmd, "")
}

// TestTxMemoryNoLeak: many connections queue, and end their transactions
// every way there is (closing the connection with the queue open, DISCARD,
// EXEC, QUIT, a refusal); the count returns to 0, and the whole bound is
// free for one transaction again.
func TestTxMemoryNoLeak(t *testing.T) {
	s := start(t, "--backend", "memory:", "--max-value-bytes", strconv.Itoa(len(txValue)), "--max-tx-memory", "4MiB")
	ns := uniqueNS(t)
	info := s.raw(t)
	prep := func(k int) []string { return []string{"PK.PREPARE", ns, fmt.Sprintf("k%03d", k), txValue} }
	for round := range 3 {
		prep := func(k int) []string { return prep(1000*(round+1) + k) }
		var conns []*raw
		queued, refused := 0, 0
		for i := range 40 {
			r := s.raw(t)
			conns = append(conns, r)
			r.do("+OK\r\n", "MULTI")
			r.send(resp(prep(i)...))
			switch got := r.line(); got {
			case "+QUEUED\r\n":
				queued++
			case txOOM:
				refused++
			default:
				t.Fatalf("round %d: queuing answered %q", round, got)
			}
		}
		require.Equal(t, 7, queued, "round %d: seven 512 KiB commands fit in 4 MiB", round)
		require.Equal(t, 33, refused)
		for i, r := range conns {
			switch i % 5 {
			case 0, 1:
				r.nc.Close() // the sidecar sees EOF with the queue open
			case 2:
				r.send(resp("DISCARD"))
				require.Equal(t, "+OK\r\n", r.line())
			case 3:
				r.send(resp("EXEC"))
				got := r.line()
				require.Contains(t, []string{"*1\r\n", txExecAbort}, got)
				if got == "*1\r\n" {
					require.Equal(t, ":1\r\n", r.line())
				}
			case 4:
				r.do("+OK\r\n", "QUIT")
			}
		}
		txWaitQueued(t, info, 0)
	}
	r := s.raw(t)
	r.do("+OK\r\n", "MULTI")
	for k := range 7 {
		r.do("+QUEUED\r\n", prep(100+k)...)
	}
	r.do("*7\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n", "EXEC")
	require.Equal(t, int64(0), txQueuedBytes(t, info))
}
