//go:build wasip1

package scheduler

import "github.com/prepkey/prepkey/protocol/transport"

// newLink: a loop's own connection to a store (package loopconn) needs
// gnet. On wasip1 no store is reached so (WASI preview 1 cannot connect),
// and the portable transport has no loop driver to hold one.
func newLink(*Config, transport.Loop) link { return nil }
