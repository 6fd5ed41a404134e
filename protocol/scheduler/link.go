//go:build !wasip1

package scheduler

import (
	"fmt"

	"github.com/prepkey/prepkey/backend/redis/loopconn"
	"github.com/prepkey/prepkey/protocol/transport"
)

// newLink makes loop's own connection to a store driven backend.DriveWire.
func newLink(cfg *Config, loop transport.Loop) link {
	return loopconn.New(loopconn.Config{
		Wire:    cfg.Wire,
		Timeout: cfg.Deadline,
		Loop:    loop.(transport.GnetLoop).EventLoop,
		Name:    fmt.Sprintf("loop-%d", cfg.Stats.UpstreamSeq.Add(1)),
		Logger:  cfg.Logger,
		Up:      &cfg.Stats.UpstreamsUp,
		Closing: cfg.Closing,
	})
}
