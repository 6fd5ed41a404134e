// Package floodlog is the server's logger for the lines a remote client
// can have the sidecar write at will, one per connection it opens or
// closes: each kind (Kind) is bounded to a burst a window, the rest counted
// and told in one summary line when the window ends.
//
// It owns those windows and their summaries only: it may not know
// connections, sockets or the store, and it counts nothing for INFO or the
// metrics (package stats counts every event; only the log is cut).
package floodlog

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Kind is a kind of log line that a remote client can have the sidecar
// write at will, one per connection it opens or closes: refused at
// max-clients, an HTTP request, a protocol error, not reading its replies,
// flooding. Each went to the log in full: 11.5 MB in 5 s from one client
// opening connections past --max-clients (issue 23, N5). Logger bounds
// them per kind.
type Kind uint8

const (
	MaxClients    Kind = iota // a connection refused at --max-clients
	CrossProtocol             // an HTTP request on the RESP port
	ProtocolError             // a connection closed after a protocol error
	Unread                    // a client closed for not reading its replies
	InputFlood                // a client closed for flooding while its commands wait
	Accept                    // accept failing, out of descriptors
	ClientMemory              // a client closed for --max-clients-memory: it held the most
	numKinds
)

func (k Kind) String() string {
	switch k {
	case MaxClients:
		return "max_clients"
	case CrossProtocol:
		return "cross_protocol"
	case ProtocolError:
		return "protocol_error"
	case Unread:
		return "unread_replies"
	case InputFlood:
		return "input_flood"
	case Accept:
		return "accept"
	case ClientMemory:
		return "client_memory"
	}
	return "unknown"
}

// Per kind, the first Burst lines of each Every are logged; the
// rest of that second are counted, and told in one line when it ends:
// "suppressed K similar lines (kind) in the last 1s". So an attack costs
// at most Burst+1 lines a second per kind (about 2 KB), and the first
// lines of every second still show who (remote, id). The counters (INFO's
// rejected_connections, metrics) count every event; only the log is cut.
const (
	Every = time.Second
	Burst = 10
)

// Logger is the server's logger for the kinds of lines above: a fixed
// window per kind, rather than a token bucket (golang.org/x/time/rate),
// since the summary is of a window ("in the last 1s") and a bucket would
// need the same window kept beside it.
type Logger struct {
	log   *slog.Logger
	every time.Duration
	burst int

	mu    sync.Mutex
	kinds [numKinds]window
}

// window is one kind's current window.
type window struct {
	start      time.Time
	lines      int // events in the window, logged or not
	suppressed int // events not logged and not yet told
	level      slog.Level
	timer      *time.Timer // tells the suppressed lines when the window ends
}

// New returns a Logger that writes to log the first burst lines of each
// kind in every window of every (the server's: Every, Burst).
func New(log *slog.Logger, every time.Duration, burst int) *Logger {
	return &Logger{log: log, every: every, burst: burst}
}

// Log logs a line of kind at level, unless the kind has had its burst in
// this window: then it is counted for the window's summary.
func (f *Logger) Log(kind Kind, level slog.Level, msg string, args ...any) {
	if !f.log.Enabled(context.Background(), level) {
		return
	}
	now := time.Now()
	f.mu.Lock()
	w := &f.kinds[kind]
	late := 0 // the previous window's, when its timer has not told them yet
	var lateLevel slog.Level
	if now.Sub(w.start) >= f.every {
		if w.timer != nil {
			w.timer.Stop()
		}
		late, lateLevel = w.suppressed, w.level
		*w = window{start: now}
	}
	w.lines++
	logIt := w.lines <= f.burst
	if !logIt {
		w.suppressed++
		w.level = level
		if w.timer == nil {
			start := w.start
			w.timer = time.AfterFunc(start.Add(f.every).Sub(now), func() { f.tell(kind, start) })
		}
	}
	f.mu.Unlock()
	if late > 0 {
		f.summary(kind, lateLevel, late)
	}
	if logIt {
		f.log.Log(context.Background(), level, msg, args...)
	}
}

// tell logs the summary of the window that began at start, when it ends.
func (f *Logger) tell(kind Kind, start time.Time) {
	f.mu.Lock()
	w := &f.kinds[kind]
	if !w.start.Equal(start) { // a later window's first line told it
		f.mu.Unlock()
		return
	}
	n, level := w.suppressed, w.level
	w.suppressed, w.timer = 0, nil
	f.mu.Unlock()
	if n > 0 {
		f.summary(kind, level, n)
	}
}

// Flush tells every kind's suppressed lines now (at shutdown).
func (f *Logger) Flush() {
	for k := range numKinds {
		f.mu.Lock()
		w := &f.kinds[k]
		if w.timer != nil {
			w.timer.Stop()
		}
		n, level := w.suppressed, w.level
		w.suppressed, w.timer = 0, nil
		f.mu.Unlock()
		if n > 0 {
			f.summary(k, level, n)
		}
	}
}

func (f *Logger) summary(kind Kind, level slog.Level, n int) {
	f.log.Log(context.Background(), level,
		fmt.Sprintf("suppressed %d similar lines (%s) in the last %s", n, kind, f.every),
		"kind", kind.String(), "suppressed", n)
}
