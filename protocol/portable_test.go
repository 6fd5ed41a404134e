package protocol

import "testing"

// testPortable has serveServer start the portable transport; set only by
// TestPortable, while the tests it runs run (none is parallel).
var testPortable bool

// TestPortable runs the transport's tests on the portable transport (a
// goroutine per connection, as on wasip1): pipelines in order on every
// path a PK command takes, requests across many reads, mangled input
// (the framing guard), shutdown with a run at the store, the runs of many
// connections joined in one batch.
func TestPortable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the transport's tests again on the portable transport")
	}
	testPortable = true
	defer func() { testPortable = false }()
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"PipelineOrder", TestPipelineOrder},
		{"BatchesJoinClients", TestBatchesJoinClients},
		{"ShutdownAnswersInFlight", TestShutdownAnswersInFlight},
		{"LargeRequests", TestLargeRequests},
		{"MangledInput", TestMangledInput},
		{"TransactionQueueing", TestTransactionQueueing},
		{"TransactionAuth", TestTransactionAuth},
		{"TransactionBounds", TestTransactionBounds},
		{"TransactionPipelineOrder", TestTransactionPipelineOrder},
		{"TransactionRESP3", TestTransactionRESP3},
		{"ClientListRace", TestClientListRace},
	} {
		t.Run(tc.name, tc.test)
	}
}
