package disk

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

func forever() backend.Expiry { return backend.Expiry{} }

func after(d time.Duration) backend.Expiry {
	return backend.Expiry{Kind: backend.ExpireAfter, Millis: d.Milliseconds()}
}

func at(ms int64) backend.Expiry { return backend.Expiry{Kind: backend.ExpireAt, Millis: ms} }

// TestReopen writes records of every kind, closes the store and checks that
// a new Open finds each one with its value and ttlAt, and none of those
// deleted or moved away.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := newFakeClock()
	t0 := clock.Now().UnixMilli()
	type rec struct {
		ns    string
		key   string
		value string
		ttlAt int64
	}
	want := []rec{
		{"user", "alice", `{"userId":"42"}`, backend.Forever},
		{"user", "bob", "b", t0 + 10_000},
		{"user", "\x00", "nul key", backend.Forever},
		{"user", "\r\n", "\x00\r\n\xff", t0 + 3_600_000},
		{"user", "\xff\xfe", "", backend.Forever},
		{"a", "bc", "a/bc", backend.Forever},
		{"ab", "c", "ab/c", t0 + 99_000},
		{"user", "moved-to", "m2", t0 + 5_000},
		{"user", "reprepared", "r2", t0 + 20_000},
	}
	absent := []rec{{ns: "user", key: "moved-from"}, {ns: "user", key: "rolled-back"}, {ns: "User", key: "alice"}}

	s, err := open(dir, backend.Options{Retention: time.Hour, Now: clock.Now}, config{})
	require.NoError(t, err)
	for _, r := range want[:7] {
		exp := forever()
		if r.ttlAt != backend.Forever {
			exp = at(r.ttlAt)
		}
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, r.ns, []byte(r.key), []byte(r.value), exp)
		require.NoError(t, err)
		require.True(t, ok, "prepare %q/%q", r.ns, r.key)
	}
	for _, k := range []string{"moved-from", "rolled-back", "reprepared"} {
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "user", []byte(k), []byte("v1"), after(time.Minute))
		require.NoError(t, err)
		require.True(t, ok)
	}
	mr, err := (backend.Calls{Runner: s}).Move(ctx, "user", []byte("moved-to"), []byte("m2"), []byte("moved-from"), []byte("v1"), after(5*time.Second))
	require.NoError(t, err)
	require.Equal(t, backend.Moved, mr)
	ok, err := (backend.Calls{Runner: s}).Rollback(ctx, "user", []byte("rolled-back"), backend.IfEq([]byte("v1")))
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = (backend.Calls{Runner: s}).Reprepare(ctx, "user", []byte("reprepared"), []byte("r2"), backend.IfEq([]byte("v1")), after(20*time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, s.Close())

	s = openTest(t, dir, clock, time.Hour)
	for _, r := range want {
		got, ok, err := (backend.Calls{Runner: s}).Get(ctx, r.ns, []byte(r.key))
		require.NoError(t, err)
		require.True(t, ok, "record %q/%q lost", r.ns, r.key)
		require.Equal(t, backend.Record{Value: []byte(r.value), TTLAt: r.ttlAt, Live: true}, got, "record %q/%q", r.ns, r.key)
	}
	for _, r := range absent {
		_, ok, err := (backend.Calls{Runner: s}).Get(ctx, r.ns, []byte(r.key))
		require.NoError(t, err)
		require.False(t, ok, "record %q/%q is back", r.ns, r.key)
	}
	requireIndexMatches(t, s)
	require.Len(t, keyspace(t, s, prefixRecord), len(want))
}

// TestOpenInUse checks that a directory held by another store, in this
// process or another one, is refused with an error that says so, and that
// Close releases it.
func TestOpenInUse(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()

	t.Run("same process", func(t *testing.T) {
		s, err := open(dir, backend.Options{Now: clock.Now}, config{})
		require.NoError(t, err)
		_, err = Open(dir, backend.Options{})
		require.ErrorContains(t, err, "is in use by another process or store")
		require.NoError(t, s.Close())
		s, err = Open(dir, backend.Options{})
		require.NoError(t, err, "Close did not release the directory")
		require.NoError(t, s.Close())
	})

	t.Run("other process", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldDir$")
		cmd.Env = append(os.Environ(), "DISK_HOLD_DIR="+dir)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "holding\n", line)

		_, err = Open(dir, backend.Options{})
		require.ErrorContains(t, err, "is in use by another process or store")

		require.NoError(t, stdin.Close()) // lets the helper close its store and exit
		require.NoError(t, cmd.Wait())
		s, err := Open(dir, backend.Options{})
		require.NoError(t, err)
		require.NoError(t, s.Close())
	})
}

// TestHelperHoldDir is the other process of TestOpenInUse: it holds the
// store in $DISK_HOLD_DIR until its stdin closes.
func TestHelperHoldDir(t *testing.T) {
	dir := os.Getenv("DISK_HOLD_DIR")
	if dir == "" {
		t.Skip("helper process of TestOpenInUse")
	}
	s, err := Open(dir, backend.Options{})
	require.NoError(t, err)
	_, err = os.Stdout.WriteString("holding\n")
	require.NoError(t, err)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	require.NoError(t, s.Close())
}

func TestOpenErrors(t *testing.T) {
	t.Run("unknown format", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, backend.Options{})
		require.NoError(t, err)
		require.NoError(t, s.db.Set(metaFormatKey, []byte{formatVersion + 1}, nil))
		require.NoError(t, s.Close())
		_, err = Open(dir, backend.Options{})
		require.ErrorContains(t, err, "unknown store format 02")
		_, err = Open(dir, backend.Options{}) // not "in use": the failed Open let go of the directory
		require.ErrorContains(t, err, "unknown store format 02")
	})
	t.Run("not a directory", func(t *testing.T) {
		file := t.TempDir() + "/file"
		require.NoError(t, os.WriteFile(file, nil, 0o600))
		_, err := Open(file, backend.Options{})
		require.ErrorContains(t, err, "disk: create "+file)
	})
}

// TestCorruptRecord checks that a record this package did not write is a
// failure of every command, never an answer.
func TestCorruptRecord(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir(), newFakeClock(), time.Hour)
	require.NoError(t, s.db.Set(recordKey("ns", []byte("k")), []byte{1, 2, 3}, nil))
	k, v := []byte("k"), []byte("v")
	calls := map[string]func() error{
		"prepare": func() error { _, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", k, v, forever()); return err },
		"get":     func() error { _, _, err := (backend.Calls{Runner: s}).Get(ctx, "ns", k); return err },
		"rollback": func() error {
			_, err := (backend.Calls{Runner: s}).Rollback(ctx, "ns", k, backend.Cond{})
			return err
		},
		"reprepare": func() error {
			_, err := (backend.Calls{Runner: s}).Reprepare(ctx, "ns", k, v, backend.Cond{}, forever())
			return err
		},
		"move new": func() error {
			_, err := (backend.Calls{Runner: s}).Move(ctx, "ns", k, v, []byte("other"), v, forever())
			return err
		},
		"move old": func() error {
			_, err := (backend.Calls{Runner: s}).Move(ctx, "ns", []byte("other"), v, k, v, forever())
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, call(), errCorrupt)
		})
	}
}

// TestClose checks that Close waits for commands in flight, that commands
// racing it either finish or fail with ErrClosed (pebble panics on a closed
// db), and that a second Close is harmless.
func TestClose(t *testing.T) {
	ctx := context.Background()
	s, err := open(t.TempDir(), backend.Options{Now: newFakeClock().Now}, config{sweepInterval: time.Millisecond})
	require.NoError(t, err)

	var wg, started sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		started.Add(1)
		wg.Go(func() {
			for i := 0; ; i++ {
				key := []byte{byte(g), byte(i), byte(i >> 8)}
				if _, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", key, key, after(time.Minute)); err != nil {
					errs <- err
					return
				}
				if i == 10 {
					started.Done()
				}
			}
		})
	}
	started.Wait() // every writer is in its loop
	require.NoError(t, s.Close())
	wg.Wait()
	close(errs)
	for err := range errs {
		require.ErrorIs(t, err, ErrClosed)
	}
	require.NoError(t, s.Close())
	_, _, err = (backend.Calls{Runner: s}).Get(ctx, "ns", []byte("k"))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Ping(ctx), ErrClosed)
	_, err = (backend.Calls{Runner: s}).Move(ctx, "ns", []byte("a"), nil, []byte("b"), nil, forever())
	require.ErrorIs(t, err, ErrClosed)
}

// TestCanceledContext checks that a command whose context is done does not
// run.
func TestCanceledContext(t *testing.T) {
	s := openTest(t, t.TempDir(), newFakeClock(), time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("k"), nil, forever())
	require.True(t, errors.Is(err, context.Canceled))
	_, ok, err := (backend.Calls{Runner: s}).Get(context.Background(), "ns", []byte("k"))
	require.NoError(t, err)
	require.False(t, ok)
}

// TestPebbleLogsQuiet checks that pebble's routine lines (WAL replay,
// flushes) reach the sidecar's log only at Debug.
func TestPebbleLogsQuiet(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		quiet bool
	}{{slog.LevelInfo, true}, {slog.LevelDebug, false}} {
		t.Run(tc.level.String(), func(t *testing.T) {
			var buf bytes.Buffer
			cfg := config{logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level}))}
			dir := t.TempDir()
			for range 2 { // the second Open replays the first one's WAL
				s, err := open(dir, backend.Options{}, cfg)
				require.NoError(t, err)
				_, err = (backend.Calls{Runner: s}).Prepare(context.Background(), "ns", []byte("k"), []byte("v"), forever())
				require.NoError(t, err)
				require.NoError(t, s.Close())
			}
			require.Equal(t, tc.quiet, buf.Len() == 0, "log: %s", &buf)
			if !tc.quiet {
				require.Contains(t, buf.String(), "component=pebble")
			}
		})
	}
}
