// Command boundsload measures what hostile or deep loads cost a running
// sidecar (issue 9), for docs/benchmarks.md; scripts/bounds.sh runs it.
//
//	boundsload -addr host:port -pid N preauth   (a sidecar with --requirepass)
//	boundsload -addr host:port -pid N deep
//
// preauth: 4 connections that send PINGs and never read, and 100 that each
// hold an incomplete request of 16 × 64 KiB, before AUTH.
// deep: one write of -n PK.PREPAREs on one connection, read in full, while
// another client sends one PK.PREPARE every 10 ms and times it.
// Each prints the sidecar's RSS before and at its peak (VmHWM, /proc).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6380", "sidecar address")
	pid := flag.Int("pid", 0, "sidecar process id, for its RSS")
	n := flag.Int("n", 1_000_000, "deep: commands in the one write")
	wait := flag.Duration("wait", 20*time.Second, "preauth: how long to wait for the sidecar to close the connections")
	flag.Parse()
	before := status(*pid, "VmRSS")
	switch flag.Arg(0) {
	case "preauth":
		closed := preauth(*addr, *wait)
		fmt.Printf("preauth: RSS before %d MiB, peak %d MiB; connections closed by the sidecar: %d of 104\n",
			before>>20, status(*pid, "VmHWM")>>20, closed)
	case "deep":
		deep(*addr, *n, *pid, before)
	default:
		fmt.Fprintln(os.Stderr, "usage: boundsload [flags] preauth|deep")
		os.Exit(2)
	}
}

// status reads a field of /proc/pid/status in bytes.
func status(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}

func resp(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// preauth returns how many of its 104 connections the sidecar closed
// within wait.
func preauth(addr string, wait time.Duration) int {
	var mu sync.Mutex
	closed := 0
	var wg sync.WaitGroup
	pings := []byte(strings.Repeat(resp("PING"), 1000))
	bulk := "$65536\r\n" + strings.Repeat("x", 65536) + "\r\n"
	partial := []byte("*16\r\n" + strings.Repeat(bulk, 15) + "$65536\r\nxx")
	for i := range 104 {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer nc.Close()
		wg.Go(func() {
			_ = nc.SetDeadline(time.Now().Add(wait))
			var err error
			if i < 4 { // never reads
				for err == nil {
					_, err = nc.Write(pings)
				}
			} else {
				_, _ = nc.Write(partial)
				_, err = io.Copy(io.Discard, nc)
				if err == nil {
					err = io.EOF
				}
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return // still open
			}
			mu.Lock()
			closed++
			mu.Unlock()
		})
	}
	wg.Wait()
	return closed
}

func deep(addr string, n, pid int, before int64) {
	ns := fmt.Sprintf("bl%d", time.Now().UnixNano())
	var req strings.Builder
	for i := range n {
		req.WriteString(resp("PK.PREPARE", ns, strconv.Itoa(i/2), "v"))
	}
	type sample struct {
		at      time.Time
		latency time.Duration
		unavail bool
	}
	other, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stop := make(chan struct{})
	samples := make(chan []sample, 1)
	go func() {
		var s []sample
		defer func() { samples <- s }()
		rd := bufio.NewReader(other)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			began := time.Now()
			if _, err := other.Write([]byte(resp("PK.PREPARE", ns+"-other", strconv.Itoa(i), "v"))); err != nil {
				return
			}
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			s = append(s, sample{began, time.Since(began), strings.HasPrefix(line, "-UNAVAILABLE")})
		}
	}()
	time.Sleep(time.Second) // the other client alone

	nc, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	began := time.Now()
	go func() { _, _ = nc.Write([]byte(req.String())) }()
	rd := bufio.NewReader(nc)
	unavailable, wrong, answered := 0, 0, 0
	for i := range n {
		line, err := rd.ReadString('\n')
		if err != nil {
			fmt.Printf("deep: connection ended after %d replies: %v\n", i, err)
			break
		}
		answered++
		want := ":1\r\n"
		if i%2 == 1 {
			want = ":0\r\n"
		}
		switch {
		case strings.HasPrefix(line, "-UNAVAILABLE"):
			unavailable++
		case line != want:
			wrong++
		}
	}
	took := time.Since(began)
	ended := time.Now()
	close(stop)
	var alone, during time.Duration
	otherUnavailable, otherReplies := 0, 0
	for _, s := range <-samples {
		if s.unavail {
			otherUnavailable++
		}
		switch {
		case s.at.Before(began):
			alone = max(alone, s.latency)
		case s.at.Before(ended):
			during = max(during, s.latency)
			otherReplies++
		}
	}
	fmt.Printf("deep: %d commands in one write, %d answered in %v (%d -UNAVAILABLE, %d out of order); RSS before %d MiB, peak %d MiB; other client: worst %v alone, %v during (%d replies, %d -UNAVAILABLE)\n",
		n, answered, took.Round(time.Millisecond), unavailable, wrong, before>>20, status(pid, "VmHWM")>>20,
		alone.Round(time.Millisecond), during.Round(time.Millisecond), otherReplies, otherUnavailable)
}
