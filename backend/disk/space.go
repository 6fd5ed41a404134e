package disk

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// ErrDiskFull is the error of a write refused because the file system of
// the store has less free space than the reserve (--min-free-disk).
var ErrDiskFull = errors.New("disk full")

const (
	// spaceCheckInterval is how often free space is read while nothing is
	// written: it is how soon writes resume once space is freed, and how
	// soon space taken by other processes is seen.
	spaceCheckInterval = time.Second
	// minResume is the free space a write that met ENOSPC waits for when
	// there is no reserve.
	minResume = 1 << 20
	// logEvery bounds the lines one kind of repeated error may log.
	logEvery = 10 * time.Second
)

// space refuses the store's writes before the disk is full, as etcd does
// with its space quota. Writes that would add records are refused with
// ErrDiskFull while the free space of the store's file system is below
// the reserve; reads and deletions go on, and writes resume by themselves
// once space is freed. The reserve is what pebble's own work (flushes,
// compactions, a new WAL) writes into meanwhile.
//
// It is checked without a statfs per command: every byte pebble writes is
// subtracted from the free space last read, and the file system is read
// again (about a microsecond) once that estimate comes near the reserve,
// and every spaceCheckInterval.
//
// Should a write meet ENOSPC all the same (another process filled the
// disk), pebble would end the process (a failed WAL write wedges its commit
// pipeline) or retry its flush in a loop. So the file system pebble writes
// through waits instead (vfs.OnDiskFull), until space is freed, and the
// write is then retried: the commits under way wait, their commands get
// -UNAVAILABLE at the backend timeout, and nothing is lost or half
// written. Meanwhile later writes are refused with ErrDiskFull at once, and
// reads go on around the waiting commits (waiting.go).
type space struct {
	fs      vfs.FS // the file system under pebble's wrappers
	dir     string
	reserve int64
	log     *slog.Logger

	avail atomic.Int64 // free bytes: last read, minus what was written since
	full  atomic.Bool
	// waiting is set while a write that met ENOSPC waits for space
	// (onDiskFull): every commit then waits behind it in pebble, so the
	// store refuses writes before they reach pebble and reads go around
	// the stripes those commits hold (waiting.go).
	waiting atomic.Bool
	mu      sync.Mutex // one read of the file system at a time

	// opening is set while pebble.Open runs: an ENOSPC then fails the open
	// (openFull is closed) rather than waiting for space.
	opening  atomic.Bool
	openFull chan struct{}
	openOnce sync.Once

	closing chan struct{}
	done    chan struct{}
	limits  logLimits
}

func newSpace(fs vfs.FS, dir string, reserve int64, log *slog.Logger) *space {
	return &space{fs: fs, dir: dir, reserve: reserve, log: log,
		openFull: make(chan struct{}), closing: make(chan struct{}), done: make(chan struct{})}
}

// read reads the free space of the file system and sets full. It reports
// the free space, or the error of the read.
func (s *space) read() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, err := s.fs.GetDiskUsage(s.dir)
	if err != nil {
		return 0, fmt.Errorf("disk: free space of %s: %w", s.dir, err)
	}
	avail := int64(min(u.AvailBytes, 1<<62))
	s.avail.Store(avail)
	full := avail < s.reserve
	// Before the store serves, its open says it all, in one line.
	if was := s.full.Swap(full); was != full && !s.opening.Load() {
		if full {
			s.log.Warn("disk full: writes are refused until space is freed", "dir", s.dir, "free", avail, "min_free_disk", s.reserve)
		} else {
			s.log.Info("disk space freed: writes resume", "dir", s.dir, "free", avail, "min_free_disk", s.reserve)
		}
	}
	return avail, nil
}

// wrote accounts for n bytes written, and reads the file system again once
// the estimate of the free space comes within the reserve of it.
func (s *space) wrote(n int64) {
	if s.avail.Add(-n) < 2*s.reserve+minResume {
		if _, err := s.read(); err != nil && s.limits.allow("statfs") {
			s.log.Error("reading free space", "err", err.Error())
		}
	}
}

// room reports whether a write that adds records may go on.
func (s *space) room() error {
	if s.waiting.Load() {
		return s.noSpace()
	}
	if !s.full.Load() {
		return nil
	}
	if s.avail.Load() >= s.reserve {
		// Full without being below the reserve: a write met ENOSPC
		// (onDiskFull), with no reserve or past it.
		return s.noSpace()
	}
	return fmt.Errorf("%w: %s free on %s, below the reserve of %s (--min-free-disk); writes resume once space is freed",
		ErrDiskFull, bytesText(s.avail.Load()), s.dir, bytesText(s.reserve))
}

// roomToDelete reports whether a write that only deletes may go on: below
// the reserve it may (the reserve is there for it), but not while a write
// waits for space, since it would wait behind that one too.
func (s *space) roomToDelete() error {
	if s.waiting.Load() {
		return s.noSpace()
	}
	return nil
}

// noSpace is the error of a write refused while a write that met ENOSPC
// waits for space.
func (s *space) noSpace() error {
	return fmt.Errorf("%w: a write found no space on %s; writes resume once space is freed", ErrDiskFull, s.dir)
}

// watch reads the free space every spaceCheckInterval until close.
func (s *space) watch() {
	defer close(s.done)
	t := time.NewTicker(spaceCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-t.C:
			if _, err := s.read(); err != nil && s.limits.allow("statfs") {
				s.log.Error("reading free space", "err", err.Error())
			}
		}
	}
}

// close stops watch and lets a write waiting for space fail.
func (s *space) close() {
	close(s.closing)
	<-s.done
}

// onDiskFull is called by the file system when a write met ENOSPC, with
// every other write held until it returns; the write is then retried once.
// It waits until there is space again (the reserve, or minResume without
// one), or the store is closing. During pebble.Open it fails the open.
func (s *space) onDiskFull() {
	s.full.Store(true)
	s.waiting.Store(true)
	defer s.waiting.Store(false)
	if s.opening.Load() {
		s.openOnce.Do(func() { close(s.openFull) })
	} else if s.limits.allow("enospc") {
		s.log.Error("disk full: a write of the store found no space; writes wait until space is freed", "dir", s.dir)
	}
	want := max(s.reserve, minResume)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-t.C:
		}
		if avail, err := s.read(); err == nil && avail >= want {
			return
		}
	}
}

// countingFS is a file system that tells space what is written through it.
type countingFS struct {
	vfs.FS
	space *space
}

func (fs countingFS) Unwrap() vfs.FS { return fs.FS }

func (fs countingFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if f == nil {
		return f, err
	}
	return countingFile{File: f, space: fs.space}, err
}

func (fs countingFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.Create(name, c))
}

func (fs countingFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.ReuseForWrite(oldname, newname, c))
}

func (fs countingFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenReadWrite(name, c, opts...))
}

type countingFile struct {
	vfs.File
	space *space
}

func (f countingFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.space.wrote(int64(n))
	return n, err
}

func (f countingFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.space.wrote(int64(n))
	return n, err
}

// Preallocate takes space at once (pebble preallocates each WAL).
func (f countingFile) Preallocate(off, length int64) error {
	err := f.File.Preallocate(off, length)
	f.space.wrote(length)
	return err
}

// logLimits lets each kind of repeated error log once per logEvery, with
// how many were left out meanwhile: a disk that keeps failing must not
// fill the log (it grew by 1 MB/s before).
type logLimits struct {
	mu   sync.Mutex
	last map[string]time.Time
	left map[string]int
}

// allow reports whether an error of this kind may be logged now.
func (l *logLimits) allow(kind string) bool {
	ok, _ := l.allowN(kind)
	return ok
}

// allowN is allow, with how many of this kind were not logged since the
// last one that was.
func (l *logLimits) allowN(kind string) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last, l.left = map[string]time.Time{}, map[string]int{}
	}
	now := time.Now()
	if last, ok := l.last[kind]; ok && now.Sub(last) < logEvery {
		l.left[kind]++
		return false, 0
	}
	l.last[kind] = now
	n := l.left[kind]
	l.left[kind] = 0
	return true, n
}

// bytesText writes n bytes for people: 1.5 MiB.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}
