package backend

// NotIsolated is a store's refusal to run a transaction block (EXEC) that
// it cannot run as one isolated unit: nothing of the block ran. Reason says
// why, for the client (it follows "EXECABORT Transaction discarded: ").
type NotIsolated struct{ Reason string }

func (e *NotIsolated) Error() string { return "transaction not isolated: " + e.Reason }
