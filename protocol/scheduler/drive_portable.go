package scheduler

// portableDriver drives a store that batches (DriveBatch, DriveWire) for
// the portable transport (the WebAssembly build, Config.Portable), whose
// connections have no event loop that could wait on a batch. The runs of
// all its connections queue together and one goroutine sends them as
// batches, one at a time, as a loop's batch driver does with the batches
// that left its loop (batchDriver.run): 50 clients at pipeline 1 make one
// Redis pipeline per round trip, not 50 store calls, each on a goroutine
// of its own, with its stack grown again through the Redis client (the
// module, on one thread, spent 180 µs of CPU per PK.PREPARE so; issue 34).
// Like callsDriver it parks no connection: each has at most one run under
// way, and Admit, Landed run on the connections' own locks, not one loop.
type portableDriver struct{ d *batchDriver }

func newPortableDriver(cfg *Config) portableDriver { return portableDriver{newBatchDriver(cfg, nil)} }

func (portableDriver) OnLoop() bool    { return false }
func (portableDriver) Admit(Conn) bool { return true }
func (portableDriver) Landed(int)      {}
func (p portableDriver) Submit(r Conn) { p.d.queueOffLoop(r) }
func (p portableDriver) Close()        { p.d.Close() }
