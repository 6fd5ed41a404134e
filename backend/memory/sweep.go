package memory

import (
	"time"
)

// sweepBatch bounds how many records one shard lock hold deletes, so that a
// mass expiry does not stall the calls waiting on that shard.
const sweepBatch = 256

func (s *Store) sweepEvery(interval time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.sweep()
		}
	}
}

// sweep deletes every record past its retention. It looks only at the
// records it deletes plus one per shard: each shard's heap yields them in
// order of ttlAt, and the first one still retained ends that shard's turn.
// It returns how many records it looked at, for tests.
func (s *Store) sweep() (visited int) {
	for i := range s.shards {
		sh := &s.shards[i]
		for more := true; more; {
			sh.mu.Lock()
			nowMs := s.nowMs()
			more = false
			for n := 0; len(sh.exp) > 0; n++ {
				if n == sweepBatch {
					more = true
					break
				}
				visited++
				if !s.opts.Gone(sh.exp[0].ttlAt, nowMs) {
					break
				}
				en := sh.exp.remove(0)
				sh.remove(en) // (no longer in the heap: remove leaves it)
				s.swept.Add(1)
			}
			sh.mu.Unlock()
		}
	}
	return visited
}
