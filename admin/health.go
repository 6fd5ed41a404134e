// Package admin is the operator's side of the sidecar: the backend's health
// as it is watched, and the HTTP endpoints of --admin-listen (/metrics,
// /healthz, /readyz). It is a package of its own so that the RESP server
// (package protocol) never links net/http's server or Prometheus's
// exposition, and the HTTP port can never reach a reservation: it sees the
// server's counters and the backend's Ping, nothing else.
package admin

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Pinger is the backend as the health watcher sees it.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Health pings the backend once a second, each ping bounded by the backend
// timeout, and remembers the answer. So a change of the backend's state is
// seen within the timeout plus one second: a backend that hangs makes the
// next ping fail at the timeout. A transition is logged once, lost or
// regained, never per ping.
type Health struct {
	backend  Pinger
	timeout  time.Duration
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	checked bool      // a ping has answered
	err     error     // the last ping's failure, or nil
	lastOK  time.Time // when a ping last succeeded
	pings   uint64

	stop chan struct{}
	done chan struct{}
}

// NewHealth returns a watcher of backend; Start starts it.
func NewHealth(backend Pinger, timeout time.Duration, log *slog.Logger) *Health {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Health{backend: backend, timeout: timeout, interval: time.Second, log: log,
		stop: make(chan struct{}), done: make(chan struct{})}
}

// Start pings the backend now, then once per interval, until Stop.
func (h *Health) Start() {
	go func() {
		defer close(h.done)
		for {
			h.check()
			select {
			case <-h.stop:
				return
			case <-time.After(h.interval):
			}
		}
	}()
}

// Stop ends the pings and waits for the one under way.
func (h *Health) Stop() {
	close(h.stop)
	<-h.done
}

func (h *Health) check() {
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	err := h.backend.Ping(ctx)
	cancel()
	h.mu.Lock()
	was, wasErr := h.checked, h.err
	h.checked, h.err, h.pings = true, err, h.pings+1
	if err == nil {
		h.lastOK = time.Now()
	}
	h.mu.Unlock()
	switch {
	case err != nil && !was:
		h.log.Warn("backend unreachable at start", "conn", "health", "err", oneLine(err.Error()))
	case err != nil && wasErr == nil:
		h.log.Warn("backend connection lost", "conn", "health", "err", oneLine(err.Error()))
	case err == nil && was && wasErr != nil:
		h.log.Info("backend connection regained", "conn", "health")
	}
}

// Ready reports whether the backend answered the last ping within the
// timeout, and recently; otherwise why not.
func (h *Health) Ready() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.checked:
		return false, "backend not checked yet"
	case h.err != nil:
		return false, "backend: " + oneLine(h.err.Error())
	case time.Since(h.lastOK) > h.timeout+2*h.interval:
		// The watcher itself is stuck: do not vouch for an old answer.
		return false, "backend: no answer to a ping since " + h.lastOK.UTC().Format(time.RFC3339)
	}
	return true, "ok"
}

// Pings is how many pings have answered, for tests.
func (h *Health) Pings() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pings
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }
