package transport

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// quietServed is a connection that reads nothing and holds its input.
type quietServed struct{ closed chan struct{} }

func (quietServed) Open(IO, Loop, Handle, int) {}
func (quietServed) Traffic() bool              { return false }
func (q quietServed) Closed()                  { close(q.closed) }
func (quietServed) Holding(int) bool           { return false }

// goroutineID is the calling goroutine's number, from its stack's header
// ("goroutine 42 [running]:").
func goroutineID() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	id, _ := strconv.Atoi(string(buf[:bytes.IndexByte(buf, ' ')]))
	return id
}

// TestPortableLaterOneGoroutine: the Later calls of many connections made
// together run in order on one goroutine, each under its connection's
// lock, not each on a goroutine of its own (issue 34: on wasip1 a
// goroutine per call was a trip through the scheduler per request).
func TestPortableLaterOneGoroutine(t *testing.T) {
	l := StartPortable(func() bool { return false })
	var conns []*portableConn
	for range 8 {
		a, b := net.Pipe()
		defer b.Close()
		q := quietServed{make(chan struct{})}
		h, err := l.Enroll(a, q)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, h.(*portableConn))
		defer func() { <-q.closed }()
	}
	defer l.Stop()

	var mu sync.Mutex
	var order, ids []int
	ran := func(i int, p *portableConn) func() {
		return func() {
			if p.mu.TryLock() {
				t.Errorf("call %d ran without its connection's lock", i)
				p.mu.Unlock()
			}
			mu.Lock()
			order, ids = append(order, i), append(ids, goroutineID())
			mu.Unlock()
		}
	}
	// The first call waits until all are queued, so that they run in one
	// pass whatever the threads do meanwhile.
	queued := make(chan struct{})
	done := make(chan struct{})
	_ = conns[0].Later(func() { <-queued })
	const n = 64
	for i := range n {
		p := conns[i%len(conns)]
		f := ran(i, p)
		if i == n-1 {
			f = func() { ran(i, p)(); close(done) }
		}
		_ = p.Later(f)
	}
	close(queued)
	<-done
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		if order[i] != i {
			t.Fatalf("calls ran in the order %v", order)
		}
		if ids[i] != ids[0] {
			t.Fatalf("call %d ran on goroutine %d, call 0 on %d", i, ids[i], ids[0])
		}
	}
}

// TestPortableTurnWritesWithoutAllocating: a turn that writes a reply and
// ends, writing it to the socket itself (unlock), allocates nothing: it
// runs once per request (issue 34).
func TestPortableTurnWritesWithoutAllocating(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	l := StartPortable(func() bool { return false })
	q := quietServed{make(chan struct{})}
	h, err := l.Enroll(server, q)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { <-q.closed }()
	defer l.Stop()
	p := h.(*portableConn)
	reply := []byte("+OK\r\n")
	const runs = 100
	allocs := testing.AllocsPerRun(runs, func() {
		p.lock()
		_, _ = p.Write(reply)
		p.unlock()
	})
	if allocs != 0 {
		t.Errorf("a turn that writes a reply allocates %.1f times", allocs)
	}
	// The replies reached the client, in full (AllocsPerRun runs once
	// more to warm up).
	want := bytes.Repeat(reply, runs+1)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(client, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the client read %q, %v", got, err)
	}
}
