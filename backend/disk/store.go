// Package disk is the embedded durable store (--backend file:DIR): the
// reservations live in a pebble database in DIR, so the sidecar needs no
// other server and keeps every acknowledged reservation across a crash.
//
// Durability: every write is committed with pebble.Sync and its result is
// returned only after the WAL fsync. Concurrent writers share fsyncs through
// pebble's group commit, which is what keeps the store fast with many
// clients.
//
// Atomicity: a command on one key holds that key's stripe lock (a fixed array
// of mutexes chosen by key hash) from its read to the end of its synced
// commit. Holding it across the fsync means nobody can observe a record
// before it is durable: pebble makes a batch visible before its WAL sync, so
// a reader without the lock could answer from a write that a crash would
// undo. Other stripes proceed meanwhile and share the fsync. A key change
// (Move) locks both stripes in index order and commits one batch, so it is
// atomic. The commands of a pipeline (Run with several ops, batch.go) lock
// all their stripes the same way and share one commit and one fsync.
//
// The keyspace layout is described in encoding.go; expired records are
// deleted after the retention by the sweep in sweep.go.
package disk

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/prepkey/prepkey/backend"
)

// ErrClosed is returned by every method called after Close.
var ErrClosed = errors.New("disk: store is closed")

const (
	// stripes is the number of key locks. Random keys from 50-1000 clients
	// rarely share one, and the array costs 32 KiB.
	stripes = 4096
	// defaultSweepInterval is how often expired records are looked for.
	defaultSweepInterval = time.Second
	// DefaultCacheBytes is pebble's block cache unless Tuning says
	// otherwise: sized for a sidecar next to every pod. Records are small,
	// recent writes are read from the memtable, and the cache fills only
	// as sstables are read, so it is what a store grows to, not what an
	// idle one holds. Larger stores read mostly from sstables and want
	// more (--file-cache-mb).
	DefaultCacheBytes = 8 << 20
	// memTableSize is 1 MiB, a quarter of pebble's default: every command
	// reads its key first, and with the 8 MiB block cache (sized for a
	// sidecar) 4 MiB memtables made sstables whose index and filter blocks
	// no longer stayed in the cache: reads went to the disk and
	// decompressed them again (block.Reader.doRead and pread took 37% of
	// the sidecar's CPU at 300k reservations), and the deeper skiplist
	// costs more cache misses per read. 1 MiB measured better than 512 KiB,
	// 2 MiB and 4 MiB at every size tried (docs/history/benchmarks-log.md,
	// "The embedded store's speed"): BenchmarkPrepareParallel over 1M
	// reservations 41.5k/s and 16.4 s of CPU against 34.0k/s and 25.7 s with
	// 4 MiB; the sidecar at pipeline 1 over 300k reservations 23.5 against
	// 32.5 µs of CPU per request. (4 MiB was chosen when the cache was 64 MiB, where it
	// measured best.)
	memTableSize = 1 << 20
)

// Store is a backend.Store on a pebble database in one directory.
type Store struct {
	db      *pebble.DB
	dirLock *pebble.Lock
	space   *space
	opts    backend.Options
	now     func() time.Time
	seed    maphash.Seed
	locks   [stripes]sync.Mutex
	// pending counts, per stripe, the commits applied to pebble and not yet
	// synced (commit): a record a reader sees in a snapshot taken before
	// its stripe's count read zero is durable. Reads go by it instead of
	// by the stripe only while a write waits for space (waitingForSpace).
	pending [stripes]atomic.Int32
	// secretMu makes the first Secret calls agree on one secret.
	secretMu sync.Mutex
	// iters is held (read) by scans and Secret, which hold no stripe, and
	// taken by Close before the db closes.
	iters sync.RWMutex

	// closed is set by Close before it drains the stripes; every method
	// checks it with its stripe held, so none touches the closed db (pebble
	// panics on use after Close).
	closed atomic.Bool
	// group is the group commit of submissions (Submit).
	group     group
	closeOnce sync.Once
	closeErr  error

	stopSweep chan struct{}
	sweepDone chan struct{}
	swept     atomic.Int64 // records deleted by the sweep, for metrics
}

// config holds what tests tune that callers of Open need not.
type config struct {
	// sweepInterval is the period of the background sweep; zero disables it
	// (tests call sweep directly with a moved clock).
	sweepInterval time.Duration
	// fs is the file system pebble uses; nil means the OS's. Tests wrap it
	// to hold or fail fsyncs.
	fs vfs.FS
	// logger receives pebble's logs; nil means slog.Default().
	logger *slog.Logger
	// readOnly opens an existing database for reading only: every commit
	// fails, without the process exit of a failed WAL write.
	readOnly bool
	// cacheBytes is pebble's block cache; zero means DefaultCacheBytes.
	cacheBytes int64
	// minFree is the free-space reserve (see space).
	minFree int64
}

// Tuning sizes what the store holds in memory and keeps free on disk;
// zero fields take the defaults.
type Tuning struct {
	// CacheBytes is pebble's block cache (--file-cache-mb).
	CacheBytes int64
	// MinFreeBytes is the free space of the store's file system below which
	// writes that add records are refused with ErrDiskFull
	// (--min-free-disk); 0 refuses none. See space.
	MinFreeBytes int64
	// FS is the file system pebble uses; nil means the OS's. Tests wrap it
	// with pebble's vfs and errorfs to hold or fail writes and fsyncs.
	FS vfs.FS
	// SweepInterval is how often the background sweep deletes the records
	// past their retention; zero means one second, negative disables it
	// (as mongo.Config.SweepInterval), leaving such records on disk, where
	// commands treat them as absent. The sidecar has no flag for it: it is
	// here so that tests outside this package (e2e/conformance) can run
	// the sweep every millisecond, racing the commands they send.
	SweepInterval time.Duration
}

// Open opens (creating if needed) the store in dir. A directory in use by
// another process, or by another Store of this process, is an error.
func Open(dir string, opts backend.Options) (*Store, error) {
	return OpenTuned(dir, opts, Tuning{})
}

// OpenTuned is Open with the memory the store may use, its free-space
// reserve, its file system and its sweep's period set by t.
func OpenTuned(dir string, opts backend.Options, t Tuning) (*Store, error) {
	sweep := t.SweepInterval
	if sweep == 0 {
		sweep = defaultSweepInterval
	}
	return open(dir, opts, config{sweepInterval: sweep, cacheBytes: t.CacheBytes,
		minFree: t.MinFreeBytes, fs: t.FS})
}

func open(dir string, opts backend.Options, cfg config) (*Store, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("disk: create %s: %w", dir, err)
	}
	// Take pebble's directory lock ourselves so that "in use" is told apart
	// from every other reason Open can fail.
	fs := cfg.fs
	if fs == nil {
		fs = vfs.Default
	}
	lock, err := pebble.LockDirectory(dir, fs)
	if err != nil {
		var pathErr *os.PathError
		if errors.As(err, &pathErr) {
			return nil, fmt.Errorf("disk: lock %s: %w", dir, err)
		}
		return nil, fmt.Errorf("disk: %s is in use by another process or store: %w", dir, err)
	}
	logger := slogLogger{l: cmp.Or(cfg.logger, slog.Default()), limits: &logLimits{}}
	sp := newSpace(fs, dir, cfg.minFree, logger.l)
	sp.opening.Store(true)
	avail, err := sp.read()
	if err != nil {
		return nil, errors.Join(err, lock.Close())
	}
	if avail < cfg.minFree {
		return nil, errors.Join(fmt.Errorf("disk: %s: %w: %s free, below the reserve of %s (--min-free-disk); free space and start again",
			dir, ErrDiskFull, bytesText(avail), bytesText(cfg.minFree)), lock.Close())
	}
	cache := pebble.NewCache(cmp.Or(cfg.cacheBytes, DefaultCacheBytes))
	defer cache.Unref() // the db holds its own reference
	po := &pebble.Options{
		FS:                 vfs.OnDiskFull(countingFS{FS: fs, space: sp}, sp.onDiskFull),
		Cache:              cache,
		Lock:               lock,
		MemTableSize:       memTableSize,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             logger,
		EventListener:      eventListener(logger),
		ReadOnly:           cfg.readOnly,
	}
	// Most PREPAREs look up a key that is not there: bloom filters let
	// those reads skip the sstables instead of seeking in each level.
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := openPebble(dir, po, sp)
	if errors.Is(err, ErrDiskFull) {
		// pebble still holds the directory, waiting for space; the caller
		// is expected to exit.
		return nil, err
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("disk: open %s: %w", dir, err), lock.Close())
	}
	sp.opening.Store(false)
	if err := checkFormat(db); err != nil {
		return nil, errors.Join(fmt.Errorf("disk: %s: %w", dir, err), db.Close(), lock.Close())
	}
	go sp.watch()
	s := &Store{
		db:        db,
		dirLock:   lock,
		space:     sp,
		opts:      opts,
		now:       opts.Clock(),
		seed:      maphash.MakeSeed(),
		stopSweep: make(chan struct{}),
		sweepDone: make(chan struct{}),
	}
	if cfg.sweepInterval > 0 {
		go s.sweepLoop(cfg.sweepInterval)
	} else {
		close(s.sweepDone)
	}
	return s, nil
}

// openPebble opens the database, unless a write of the open meets a full
// disk: pebble would then wait for space (see space.onDiskFull), so the
// open fails at once with ErrDiskFull instead, as an operator needs.
func openPebble(dir string, po *pebble.Options, sp *space) (*pebble.DB, error) {
	type opened struct {
		db  *pebble.DB
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		db, err := pebble.Open(dir, po)
		ch <- opened{db, err}
	}()
	select {
	case o := <-ch:
		return o.db, o.err
	case <-sp.openFull:
		return nil, fmt.Errorf("disk: open %s: %w: no space left to open the database; free space and start again", dir, ErrDiskFull)
	}
}

// checkFormat records formatVersion in a new database and refuses one
// written in another format.
func checkFormat(db *pebble.DB) error {
	v, closer, err := db.Get(metaFormatKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return db.Set(metaFormatKey, []byte{formatVersion}, pebble.Sync)
	}
	if err != nil {
		return fmt.Errorf("read format: %w", err)
	}
	defer closer.Close()
	if !bytes.Equal(v, []byte{formatVersion}) {
		return fmt.Errorf("unknown store format %x (this sidecar writes %d)", v, formatVersion)
	}
	return nil
}

// Close stops the sweep, waits for commands in flight and closes the
// database. Later calls return the first call's result; methods called after
// it return ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stopSweep)
		<-s.sweepDone
		s.closed.Store(true)
		for i := range s.locks {
			s.locks[i].Lock()
			s.locks[i].Unlock() //nolint:staticcheck // draining the holders is the point
		}
		s.iters.Lock()
		defer s.iters.Unlock()
		// The lock is released only after the db is closed, as pebble requires.
		s.closeErr = errors.Join(s.db.Close(), s.dirLock.Close())
		s.space.close()
	})
	return s.closeErr
}

// Ping reports whether the store serves commands: it is open and a read
// goes through.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	mu := &s.locks[0]
	mu.Lock()
	defer mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	v, closer, err := s.db.Get(metaFormatKey)
	if err != nil {
		return fmt.Errorf("disk: ping: %w", err)
	}
	defer closer.Close()
	if len(v) != 1 {
		return fmt.Errorf("disk: ping: %w: format key", errCorrupt)
	}
	return nil
}

// slogLogger routes pebble's log lines to slog: its chatter (WAL recovery,
// compactions) at Debug so the sidecar's log stays quiet, its background
// errors at Error.
type slogLogger struct {
	l      *slog.Logger
	limits *logLimits // pebble repeats a failing background job's error
}

func (l slogLogger) Infof(format string, args ...any) {
	if !l.l.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	l.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l slogLogger) Errorf(format string, args ...any) {
	if ok, left := l.limits.allowN("errorf"); ok {
		l.l.Error(fmt.Sprintf(format, args...), "component", "pebble", "not_logged_since", left)
	}
}

// eventListener logs pebble's events at Debug, except those an operator
// must see: background errors, corruption, slow disks, write stalls and low
// disk space.
func eventListener(l slogLogger) *pebble.EventListener {
	el := pebble.MakeLoggingEventListener(l)
	el.BackgroundError = func(err error) {
		// One line, without the stack trace pebble's errors carry, and
		// at most one per logEvery: a flush that fails is retried at once.
		if ok, left := l.limits.allowN("background"); ok {
			l.l.Error("pebble background error", "component", "pebble", "err", err.Error(), "not_logged_since", left)
		}
	}
	el.DataCorruption = func(info pebble.DataCorruptionInfo) {
		l.l.Error("pebble data corruption", "component", "pebble", "info", info.String())
	}
	el.DiskSlow = func(info pebble.DiskSlowInfo) {
		l.l.Warn("disk slow", "component", "pebble", "info", info.String())
	}
	el.WriteStallBegin = func(info pebble.WriteStallBeginInfo) {
		l.l.Warn("write stall", "component", "pebble", "reason", info.Reason)
	}
	el.WriteStallEnd = func() { l.l.Warn("write stall ended", "component", "pebble") }
	el.LowDiskSpace = func(info pebble.LowDiskSpaceInfo) {
		l.l.Warn("low disk space", "component", "pebble", "info", info.String())
	}
	return &el
}

// Fatalf must not return (pebble's contract). Pebble calls it when it
// cannot go on safely, above all when a WAL write or fsync fails: the commit
// pipeline is then wedged and an fsync cannot be retried honestly, so the
// process exits, as pebble's default logger does. Nothing unsynced was
// acknowledged, and the next start recovers every acknowledged write from
// the WAL; clients see the connection drop and check with PK.GETVALUE.
func (l slogLogger) Fatalf(format string, args ...any) {
	l.l.Error(fmt.Sprintf(format, args...), "component", "pebble", "fatal", true)
	os.Exit(1)
}
