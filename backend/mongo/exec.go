package mongo

import (
	"context"

	"github.com/prepkey/prepkey/backend"
)

// Exec implements commands.Execer by refusing every block: EXEC of a block
// with PK commands answers -EXECABORT and nothing runs.
//
// Each PK command is one atomic operation on one document, but a block
// spans several documents (often in several collections, one per
// namespace), and MongoDB isolates several documents only inside a
// multi-document transaction, which needs a replica set or a sharded
// cluster (not a standalone server, and not FerretDB). Running the commands
// one by one would let other clients see and change the keys between them:
// the race a client asks MULTI to rule out (two sign-ups each taking one
// of two keys). Refusing is the answer that leaves nothing half done; an
// application that needs several keys at once uses PK.MPREPARE, composed
// and compensated on this backend.
func (s *Store) Exec(context.Context, []backend.Op, []backend.Result) error {
	return &backend.NotIsolated{Reason: "the mongodb backend cannot run PK commands in a transaction " +
		"(no isolation across documents without a replica-set transaction; see docs/mongo.md)"}
}
