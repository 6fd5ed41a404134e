package scheduler

import (
	"context"
	"time"

	"github.com/prepkey/prepkey/commands"
)

// inlineDriver drives a store that answers from memory without waiting
// (backend.DriveInline, memory:): its PK commands are answered on the loop
// as they are read (package protocol's conn.dispatch, Store.Do), with no
// run and no copy. Only a request of megabytes (conn.serveBig) is a run:
// even a store in memory takes a while over megabytes of arguments
// (memory: copies 64 MiB of values for a PK.MPREPARE of 64 x 1 MiB), so it
// runs on a goroutine, off the loop, and other clients do not wait on it.
type inlineDriver struct{ store Store }

func (inlineDriver) OnLoop() bool    { return true }
func (inlineDriver) Admit(Conn) bool { return true }
func (inlineDriver) Landed(int)      {}
func (inlineDriver) Close()          {}

func (d inlineDriver) Submit(r Conn) {
	go func() {
		cmds := r.Commands()
		replies := make([]commands.Reply, len(cmds))
		for i, args := range cmds {
			replies[i], _ = d.store.Do(context.Background(), args)
		}
		r.Answer(replies, time.Now(), false)
		r.ResumeLater()
	}()
}
