package protocol

import (
	"fmt"
	"time"

	"testing"

	"github.com/prepkey/prepkey/commands"
)

// BenchmarkCount is what counting costs per command on the loop: the
// reply's classification, the counter lookup and the atomic adds, with the
// clock read once per read of 1 or 16 pipelined commands (scripts/bench.sh
// runs pipeline 1 and 16). Compare with the CPU per request of the whole
// sidecar in docs/benchmarks.md.
func BenchmarkCount(b *testing.B) {
	for _, tc := range []struct {
		pipeline int
		count    bool
	}{{1, false}, {1, true}, {16, false}, {16, true}} {
		pipeline := tc.pipeline
		b.Run(fmt.Sprintf("pipeline=%d/counted=%t", pipeline, tc.count), func(b *testing.B) {
			s := New(Config{}, nil, nil)
			c := newConn(s)
			c.stats = s.stats.ForLoop(nil)
			name := []byte("PK.PREPARE")
			b.ReportAllocs()
			one := commands.Reply{Kind: commands.Int, Int: 1}
			for i := 0; b.Loop(); i++ {
				if tc.count && i%pipeline == 0 {
					c.began = time.Now()
				}
				at, errs := len(c.out.B), c.out.Errs
				c.out.Reply(&one)
				if tc.count {
					c.note(name, at, errs)
				}
				if i%pipeline == pipeline-1 {
					if tc.count {
						c.flushNotes()
					}
					c.out.B = c.out.B[:0]
				}
			}
		})
	}
}

// BenchmarkRecordRuns is what counting costs per command that went to the
// store (recordRun, as a batch's answer calls it): 50 connections' runs of 16
// PK.PREPAREs answered :1, redis:// at pipeline 16 in scripts/bench-pair.sh.
func BenchmarkRecordRuns(b *testing.B) {
	s := New(Config{}, nil, nil)
	conns := make([]*conn, 50)
	replies := make([]commands.Reply, 0, 50*16)
	for i := range conns {
		c := newConn(s)
		c.stats = s.stats.ForLoop(nil)
		c.began = time.Now()
		for range 16 {
			c.runArgs = append(c.runArgs, [][]byte{[]byte("PK.PREPARE"), []byte("ns"), []byte("k"), []byte("v")})
			replies = append(replies, commands.Reply{Kind: commands.Int, Int: 1})
		}
		conns[i] = c
	}
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now()
		for i, c := range conns {
			c.recordRun(replies[16*i:16*(i+1)], now)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(replies)), "ns/command")
}
