package protocol

// callsDriver drives a store that does not batch (backend.DriveCalls,
// MongoDB: no batch of atomic document operations): each run is a batch
// of its own, on a goroutine of its own, one store call per command
// (perCall 1), bounded by the backend timeout as every batch is. The
// portable transport, with no loop to wait on a batch, drives a store that
// batches so too, maxCallCmds commands per call.
type callsDriver struct {
	s       *Server
	perCall int
}

func (*callsDriver) onLoop() bool     { return false }
func (*callsDriver) admit(*conn) bool { return true }
func (*callsDriver) landed(int)       {}
func (*callsDriver) close()           {}

func (d *callsDriver) submit(c *conn) {
	b := &storeBatch{batch: newBatch([]*conn{c})}
	b.start(d.s, c.loop, nil, d.perCall, false)
}
