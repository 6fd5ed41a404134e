package protocol

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/scheduler/schedtest"
)

// secretDown is the memory store whose Secret fails while down is set, as
// a backend that is away when the sidecar's first scan needs the cursors'
// secret.
type secretDown struct {
	*memory.Store
	down atomic.Bool
}

func (s *secretDown) Secret(ctx context.Context) ([]byte, error) {
	if s.down.Load() {
		return nil, errors.New("connection refused")
	}
	return s.Store.Secret(ctx)
}

// readValue reads one RESP value: a string for a simple string, error,
// integer or bulk, a []any for an array.
func readValue(t *testing.T, rd *bufio.Reader) any {
	t.Helper()
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '*':
		n, err := strconv.Atoi(line[1:])
		require.NoError(t, err)
		a := make([]any, n)
		for i := range a {
			a[i] = readValue(t, rd)
		}
		return a
	case '$':
		n, err := strconv.Atoi(line[1:])
		require.NoError(t, err)
		b := make([]byte, n+2)
		_, err = io.ReadFull(rd, b)
		require.NoError(t, err)
		return string(b[:n])
	}
	return line
}

// TestScanThroughSubmission: PK.SCAN goes to the store in a submission on
// every path: its cursor opened with the store's secret before the store
// sees it (a forged one is refused, the store never asked), the next one
// sealed when it is answered. The secret is loaded on the first scan, off
// the loop where the store does not finish at once; while the backend is
// down that scan is -UNAVAILABLE, and the next, once it is back, is
// served.
func TestScanThroughSubmission(t *testing.T) {
	for _, sc := range schedtest.All {
		t.Run(sc.Name, func(t *testing.T) {
			st := &secretDown{Store: memory.New(backend.Options{})}
			st.down.Store(true)
			h := commands.New(schedtest.Declare(st, sc.Schedule), commands.DefaultLimits, nil)
			addr := serve(t, Config{BackendTimeout: 5 * time.Second}, h)
			c := dialLines(t, addr)
			_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			for i := range 5 {
				c.send(req("PK.PREPARE", "ns", fmt.Sprint("k", i), "v"))
				c.expect(":1\r\n")
			}
			c.send(req("PK.SCAN", "ns", "0"))
			c.expect("-UNAVAILABLE connection refused\r\n")
			st.down.Store(false)

			keys := map[string]bool{}
			cursor := "0"
			for range 10 {
				c.send(req("PK.SCAN", "ns", cursor, "COUNT", "2"))
				page, ok := readValue(t, c.rd).([]any)
				require.True(t, ok)
				require.Len(t, page, 2)
				for _, r := range page[1].([]any) {
					keys[r.([]any)[0].(string)] = true
				}
				cursor = page[0].(string)
				if cursor == "0" {
					break
				}
				// A cursor changed by the client fails its tag.
				forged := []byte(cursor)
				forged[len(forged)/2] ^= 1
				c.send(req("PK.SCAN", "ns", string(forged)))
				c.expect("-ERR invalid cursor\r\n")
				// Scans pipelined with writes, in one run.
				c.send(req("PK.SCAN", "other", "0") + req("PK.GET", "ns", "k0"))
				require.Equal(t, []any{"0", []any{}}, readValue(t, c.rd))
				_ = readValue(t, c.rd)
			}
			require.Equal(t, "0", cursor)
			require.Len(t, keys, 5)
		})
	}
}
