package protocol

import (
	"context"

	"github.com/prepkey/prepkey/commands"
)

// inlineDriver drives a store that answers from memory without waiting
// (backend.DriveInline, memory:): its PK commands are answered on the loop
// as they are read (conn.dispatch, Handler.Do), with no run and no copy.
// Only a request of megabytes (conn.serveBig) is a run: even a store in
// memory takes a while over megabytes of arguments (memory: copies 64 MiB
// of values for a PK.MPREPARE of 64 x 1 MiB), so it runs on a goroutine,
// off the loop, and other clients do not wait on it.
type inlineDriver struct{ s *Server }

func (inlineDriver) onLoop() bool     { return true }
func (inlineDriver) admit(*conn) bool { return true }
func (inlineDriver) landed(int)       {}
func (inlineDriver) close()           {}

func (d inlineDriver) submit(c *conn) {
	go func() {
		replies := make([]commands.Reply, len(c.runArgs))
		for i, args := range c.runArgs {
			replies[i], _ = d.s.handler.Do(context.Background(), args)
		}
		writeReplies([]*conn{c}, replies)
		c.resumeLater()
	}()
}
