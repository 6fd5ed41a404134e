package backend

// Drive is how the server is to take PK commands to a store: on the event
// loop, in batches, over the loop's own connection to the store, or one
// store call at a time. It is not asked of the store (a store runs lists
// of ops, Store.Run, whoever calls it): the store's opener says it, once
// per backend (cmd/sidecar's openers), and package protocol decides every
// command's path from that one value (protocol.Config.Drive).
type Drive uint8

const (
	// DriveCalls: each command is one store call, a run of a connection's
	// commands on a goroutine of its own (MongoDB: it does not batch).
	DriveCalls Drive = iota
	// DriveBatch: the commands that many clients sent meanwhile go to the
	// store together, as one Run: one fsync of the embedded store, one
	// pipeline of the Redis client (file:, Redis through rueidis).
	DriveBatch
	// DriveInline: the store answers from memory without waiting, so its
	// commands are answered on the event loop as they are read (memory:).
	DriveInline
	// DriveWire: batches as DriveBatch, written by each event loop to a
	// connection of its own to the store and read back on the loop (a
	// standalone Redis, through the store's Wire); DriveBatch's path while
	// that connection is down.
	DriveWire
)

var driveNames = [...]string{DriveCalls: "calls", DriveBatch: "batch", DriveInline: "inline", DriveWire: "wire"}

func (d Drive) String() string {
	if int(d) < len(driveNames) {
		return driveNames[d]
	}
	return "drive(?)"
}
