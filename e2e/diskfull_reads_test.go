//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDiskFullReadsGoOn fills the disk under the embedded store with no
// reserve (--min-free-disk 0), so that pebble itself meets ENOSPC and a
// write waits in it for space. Reads of records written before go on,
// pipelined with writes and from another connection, and answer the
// records (they got -UNAVAILABLE no answer within the backend timeout,
// queued behind the writes that waited on the disk); every write is
// refused at once with -UNAVAILABLE disk full, deletions too (a deletion
// needs room in the WAL as well); none is acknowledged that is not there
// after a restart; writes resume once space is freed.
func TestDiskFullReadsGoOn(t *testing.T) {
	// 4 MiB: once the filler is removed, the 1 MiB a write that met
	// ENOSPC waits for (disk.minResume) is free beside pebble's files.
	mnt := smallDisk(t, "4m")
	data := filepath.Join(mnt, "data")
	s := start(t, "--backend", "file:"+data, "--min-free-disk", "0", "--backend-timeout", "500ms")
	r := s.raw(t)

	// The records read later, written while there is space. Few keys: a
	// read of a key sharing its lock stripe (1 in 4096) with the write
	// that waits for space is refused (disk.Store.waitsForSpace).
	for _, k := range []string{"a", "b", "c"} {
		r.do(":1\r\n", "PK.PREPARE", "rd", k, "v"+k)
	}
	scanPage := "*2\r\n$1\r\n0\r\n*3\r\n" +
		"*3\r\n$1\r\na\r\n$2\r\nva\r\n:-1\r\n" +
		"*3\r\n$1\r\nb\r\n$2\r\nvb\r\n:-1\r\n" +
		"*3\r\n$1\r\nc\r\n$2\r\nvc\r\n:-1\r\n"
	r.do(scanPage, "PK.SCAN", "rd", "0") // also makes the store's secret

	fill(t, filepath.Join(mnt, "other"), -1) // to the last byte
	value := strings.Repeat("v", 1000)
	acked, refused := prepareUntilRefused(r, value)
	full := "-UNAVAILABLE disk full: a write found no space on " + data + "; writes resume once space is freed\r\n"
	// The write that met ENOSPC waits in pebble for space: it is neither
	// acknowledged nor undone, and its command gets the timeout.
	require.Contains(t, []string{"-UNAVAILABLE no answer within 500ms\r\n", full}, refused,
		"after %d writes: %s", len(acked), s.logs())

	// Rounds of a write and a read on one connection and a read on
	// another, all in flight together: the replies and the time the reads
	// took are logged before they are checked (docs/benchmarks.md, N6).
	o := s.raw(t)
	const rounds = 20
	var got []string
	var took []time.Duration
	for i := range rounds {
		began := time.Now()
		r.send(resp("PK.PREPARE", "ns", fmt.Sprintf("round%d", i), value) + resp("PK.GET", "rd", "a"))
		o.send(resp("PK.GET", "rd", "b"))
		got = append(got, r.reply(), r.reply(), o.reply())
		took = append(took, time.Since(began))
	}
	slices.Sort(took)
	read := 0
	for i := 0; i < len(got); i += 3 {
		read += count(got[i+1] == "$2\r\nva\r\n") + count(got[i+2] == "$2\r\nvb\r\n")
	}
	t.Logf("%d rounds of a write and two reads on a full disk: per round p50 %s, max %s; %d of %d reads answered the record; replies of the last round: %q",
		rounds, took[rounds/2], took[rounds-1], read, 2*rounds, got[len(got)-3:])
	for i := 0; i < len(got); i += 3 {
		require.Equal(t, []string{full, "$2\r\nva\r\n", "$2\r\nvb\r\n"}, got[i:i+3], "round %d", i/3)
	}

	// Writes and reads pipelined on one connection, reads pipelined on
	// another, all in flight together.
	r.send(resp("PK.GET", "rd", "a") +
		resp("PK.PREPARE", "ns", "w1", value) +
		resp("PK.GETVALUE", "rd", "b") +
		resp("PK.PREPARE", "ns", "w2", value) +
		resp("PK.SCAN", "rd", "0") +
		resp("PK.ROLLBACK", "rd", "c") +
		resp("PK.REPREPARE", "rd", "b", "vb2") +
		resp("PK.MPREPARE", "2", "ns", "m1", "x", "ns", "m2", "y") +
		resp("PK.PREPARE", "rd", "a", "other") + // writes nothing: answered as ever
		resp("PK.GET", "rd", "c"))
	o.send(resp("PK.GET", "rd", "c") + resp("PK.GETVALUE", "rd", "a") + resp("PK.SCAN", "rd", "0"))
	r.expect("$2\r\nva\r\n")
	r.expect(full)
	r.expect("*2\r\n$2\r\nvb\r\n:-1\r\n")
	r.expect(full)
	r.expect(scanPage)
	r.expect(full)
	r.expect(full)
	r.expect(full)
	r.expect(":0\r\n")
	r.expect("$2\r\nvc\r\n")
	o.expect("$2\r\nvc\r\n")
	o.expect("*2\r\n$2\r\nva\r\n:-1\r\n")
	o.expect(scanPage)
	// One at a time, too (a command alone takes another path).
	o.do("$2\r\nva\r\n", "PK.GET", "rd", "a")
	o.do(full, "PK.PREPARE", "ns", "w3", value)
	o.do("*2\r\n$2\r\nvb\r\n:-1\r\n", "PK.GETVALUE", "rd", "b")
	o.do(scanPage, "PK.SCAN", "rd", "0")
	// A transaction that reads is answered too.
	o.send(resp("MULTI") + resp("PK.GET", "rd", "a") + resp("PK.GETVALUE", "rd", "b") + resp("EXEC"))
	o.expect("+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n$2\r\nva\r\n*2\r\n$2\r\nvb\r\n:-1\r\n")
	// A retry of the write that met ENOSPC is refused at once (it waited
	// on the key's lock, and so did the commands batched with it).
	o.send(resp("PK.PREPARE", "ns", fmt.Sprintf("k%d", len(acked)), value))
	retried := o.line()
	t.Logf("first refusal %q, its retry %q", refused, retried)
	require.Contains(t, []string{full,
		"-UNAVAILABLE disk full: a write waiting for space on " + data + " may change this record; ask again once space is freed\r\n",
	}, retried)

	// Space freed: writes resume by themselves.
	require.NoError(t, os.Remove(filepath.Join(mnt, "other")))
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		key := fmt.Sprintf("after%d", i)
		r.send(resp("PK.PREPARE", "ns", key, value))
		got := r.line()
		if got == ":1\r\n" {
			acked = append(acked, key)
			break
		}
		// The write that waited for space is let through first, and may
		// take a while: a write then may still get the timeout.
		require.Contains(t, []string{full, "-UNAVAILABLE no answer within 500ms\r\n"}, got)
		t.Logf("after freeing space: %q", got)
		require.True(t, time.Now().Before(deadline), "writes did not resume within 10s of freeing space: %s", s.logs())
		time.Sleep(20 * time.Millisecond)
	}
	// The refused writes took no effect; the records read are unchanged.
	r.do("$-1\r\n", "PK.GET", "ns", "w1")
	r.do("*-1\r\n", "PK.GETVALUE", "ns", "m1")
	r.do(scanPage, "PK.SCAN", "rd", "0")
	s.stop(t)

	s = start(t, "--backend", "file:"+data, "--min-free-disk", "0")
	r = s.raw(t)
	for _, key := range acked {
		r.do("$1000\r\n"+value+"\r\n", "PK.GET", "ns", key)
	}
	r.do(scanPage, "PK.SCAN", "rd", "0")
	s.stop(t)
}

// reply reads one reply that is a line or a bulk string.
func (r *raw) reply() string {
	r.t.Helper()
	s := r.line()
	if strings.HasPrefix(s, "$") && s != "$-1\r\n" {
		s += r.line()
	}
	return s
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}
