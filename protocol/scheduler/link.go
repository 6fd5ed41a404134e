//go:build !wasip1

package scheduler

import (
	"fmt"

	"github.com/prepkey/prepkey/protocol/transport"
	"github.com/prepkey/prepkey/protocol/upstream"
)

// newLink makes loop's own connection to a store driven backend.DriveWire.
func newLink(cfg *Config, loop transport.Loop) link {
	return upstream.New(upstream.Config{
		Wire:    cfg.Wire,
		Timeout: cfg.Deadline,
		Loop:    loop.(transport.GnetLoop).EventLoop,
		Name:    fmt.Sprintf("loop-%d", cfg.Stats.UpstreamSeq.Add(1)),
		Logger:  cfg.Logger,
		Up:      &cfg.Stats.UpstreamsUp,
		Closing: cfg.Closing,
	})
}
