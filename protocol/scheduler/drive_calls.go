package scheduler

import "github.com/prepkey/prepkey/protocol/stats"

// callsDriver drives a store that does not batch (backend.DriveCalls,
// MongoDB: no batch of atomic document operations): each run is a batch
// of its own, on a goroutine of its own, one store call per command
// (perCall 1), bounded by the backend timeout as every batch is.
type callsDriver struct {
	cfg     *Config
	stats   *stats.Loop // the loop's counters
	perCall int
}

func (*callsDriver) OnLoop() bool    { return false }
func (*callsDriver) Admit(Conn) bool { return true }
func (*callsDriver) Landed(int)      {}
func (*callsDriver) Close()          {}

func (d *callsDriver) Submit(r Conn) {
	b := &storeBatch{batch: newBatch([]Conn{r}, d.stats)}
	b.start(d.cfg, nil, nil, d.perCall, false)
}
