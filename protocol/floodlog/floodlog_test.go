package floodlog

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// records is a slog handler that keeps the messages it is given.
type records struct {
	mu   sync.Mutex
	msgs []string
	n    map[string]int // "suppressed" attr per kind, summed
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Message)
	var kind string
	var n int64
	rec.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "kind":
			kind = a.Value.String()
		case "suppressed":
			n = a.Value.Int64()
		}
		return true
	})
	if kind != "" {
		if r.n == nil {
			r.n = map[string]int{}
		}
		r.n[kind] += int(n)
	}
	return nil
}

func (r *records) snapshot() ([]string, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[string]int{}
	for k, v := range r.n {
		n[k] = v
	}
	return append([]string(nil), r.msgs...), n
}

func TestBurstThenSummary(t *testing.T) {
	rec := &records{}
	f := New(slog.New(rec), time.Hour, 3) // one window for the whole test
	for range 10 {
		f.Log(MaxClients, slog.LevelWarn, "refused")
	}
	f.Log(CrossProtocol, slog.LevelWarn, "http") // another kind has its own burst
	msgs, _ := rec.snapshot()
	require.Equal(t, []string{"refused", "refused", "refused", "http"}, msgs)

	f.Flush()
	msgs, n := rec.snapshot()
	require.Equal(t, "suppressed 7 similar lines (max_clients) in the last 1h0m0s", msgs[len(msgs)-1])
	require.Equal(t, map[string]int{"max_clients": 7}, n)
	require.Len(t, msgs, 5)

	f.Flush() // nothing more to tell
	msgs, _ = rec.snapshot()
	require.Len(t, msgs, 5)
}

// When a window ends, its summary is logged by the timer without any further
// event; every event is either a line or counted in a summary.
func TestWindowsAccountForEveryEvent(t *testing.T) {
	rec := &records{}
	f := New(slog.New(rec), 20*time.Millisecond, 2)
	const events = 500
	for i := range events {
		f.Log(ProtocolError, slog.LevelInfo, "protocol error")
		if i%50 == 0 {
			time.Sleep(5 * time.Millisecond) // spread over a few windows
		}
	}
	count := func() (lines, suppressed int) {
		msgs, n := rec.snapshot()
		for _, m := range msgs {
			if m == "protocol error" {
				lines++
			}
		}
		return lines, n["protocol_error"]
	}
	require.Eventually(t, func() bool {
		lines, suppressed := count()
		return lines+suppressed == events
	}, 10*time.Second, 5*time.Millisecond)
	lines, suppressed := count()
	t.Logf("%d events: %d lines and %d suppressed", events, lines, suppressed)
	require.Positive(t, suppressed)
}
