// Package redis keeps reservations in Redis (standalone, Sentinel or
// Cluster) so that many sidecars share them. Every PK command runs in
// block.lua with EVALSHA: the script reads the server's clock with TIME,
// checks and writes in one atomic step, so two sidecars can never both win
// a key; a list of commands is one call of it (Run, Wire), a transaction
// too. Only a key change or an MPREPARE across Cluster slots is composed of
// several scripts, with compensation (see Run).
//
// How the server drives the store is its opener's to say (cmd/sidecar):
// over each event loop's own connection (Wire, when it is not nil: a
// standalone Redis without TLS), otherwise in batches through the rueidis
// client, which follows failovers and slots and speaks TLS.
//
// The client is rueidis: its auto-pipelining coalesces the commands of all
// concurrent callers into shared round trips, which is what keeps the hop
// from the sidecar to Redis cheap.
package redis

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/prepkey/prepkey/backend"
)

// DefaultTimeout bounds every call to Redis when Config.Timeout is zero
// (--backend-timeout).
const DefaultTimeout = 2 * time.Second

// Config is how Open builds a Store.
type Config struct {
	// Options.Retention is how long Redis keeps an expired record.
	// Options.Now is ignored: the clock is the Redis server's TIME.
	backend.Options
	// KeyPrefix starts every Redis key; empty means DefaultKeyPrefix.
	KeyPrefix string
	// Logger receives the failovers seen (Sentinel); nil discards them.
	Logger *slog.Logger
	// Timeout bounds each call, the caller's context having no deadline;
	// zero means DefaultTimeout. A composed key change on a Cluster may take
	// up to twice as long (its compensation has its own budget).
	Timeout time.Duration
	// Dial, when set, opens every connection to Redis instead of
	// net.Dialer: the WebAssembly build dials through its host's socket
	// ABI (internal/wasisock), having no connect of its own. TLS is
	// layered on top of what it returns.
	Dial func(ctx context.Context, addr string) (net.Conn, error)

	// wowHead, in tests only, replaces WowKeyHead with layout=wow, so that
	// concurrent tests on one server keep apart.
	wowHead string
}

// Store is a backend.Store on Redis. It is safe for concurrent use.
type Store struct {
	target  target
	opt     rueidis.ClientOption
	layout  Layout
	keys    keyCodec
	timeout time.Duration
	// dialFn is Config.Dial (nil: net.Dialer).
	dialFn func(ctx context.Context, addr string) (net.Conn, error)
	// waitTimeout bounds the WAIT after a batch's writes (?wait=N).
	waitTimeout time.Duration
	deadlines   deadlines
	retention   string // in ms, an argument of every script
	// maxValue is the largest value a read returns (--max-value-bytes),
	// written into the scripts: a record with a larger one is refused
	// (TOOLARGE, backend.RecordTooLarge).
	maxValue int
	scripts  scripts
	// composed: key changes across two slots compose two scripts (Cluster).
	composed bool

	client atomic.Pointer[clientRef]

	// loops are the event loops' own connections (UseLoopConns), nil
	// without; againFn is s.again, made once.
	loops   LoopConns
	againFn func(*backend.Submission, []int)
	// workers run the submissions taken through the client (Submit);
	// closed once (Close).
	workers      *backend.Workers
	closeWorkers sync.Once

	// fault, in tests only, injects failures into the steps of composed
	// commands (backend.ComposeMove, backend.ComposeMPrepare).
	fault backend.Fault

	// Counted for metrics (metrics.go).
	noscript  atomic.Int64 // ops sent again with EVAL after NOSCRIPT
	failovers atomic.Int64 // changes of the Sentinel master seen
	log       *slog.Logger
	master    atomic.Pointer[string] // the master address last seen (Sentinel)

	mu      sync.Mutex
	dialing chan struct{} // closed when the running dial ends; nil if none
	dialErr error         // outcome of the last dial
	closed  bool
}

// clientRef boxes the client interface for atomic.Pointer.
type clientRef struct{ rueidis.Client }

// Open returns a Store for rawURL. It fails only on a malformed URL: Redis
// may be down, in which case commands fail until it is back, and the
// connection is made by the first call that needs it (or by Ping).
func Open(ctx context.Context, rawURL string, cfg Config) (*Store, error) {
	t, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	opt := clientOption(t, cfg.Timeout)
	if dial := cfg.Dial; dial != nil {
		opt.DialCtxFn = func(ctx context.Context, addr string, _ *net.Dialer, tc *tls.Config) (net.Conn, error) {
			c, err := dial(ctx, addr)
			if err != nil || tc == nil {
				return c, err
			}
			return tls.Client(c, tc), nil
		}
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = DefaultKeyPrefix
	}
	keys, err := layoutKeys(t.layout, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Retention < 0 {
		return nil, fmt.Errorf("redis: negative retention %s", cfg.Retention)
	}
	// A batch with writes may wait for replicas for up to waitTimeout
	// after Redis ran it: its deadline allows for both.
	var waitTimeout time.Duration
	if t.wait > 0 {
		waitTimeout = cmp.Or(t.waitTimeout, cfg.Timeout)
	}
	s := &Store{
		target:      t,
		opt:         opt,
		dialFn:      cfg.Dial,
		layout:      t.layout,
		keys:        keys,
		timeout:     cfg.Timeout,
		waitTimeout: waitTimeout,
		deadlines:   deadlines{timeout: cfg.Timeout + waitTimeout},
		retention:   strconv.FormatInt(cfg.Retention.Milliseconds(), 10),
		scripts:     loadScripts(t.layout, cfg.ReadBound()),
		maxValue:    cfg.ReadBound(),
		composed:    t.topology == Cluster,
		log:         cfg.Logger,
		workers:     backend.NewWorkers(maxWorkers),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	// Connect in the background so that the first command does not pay for
	// it; a failure here is only remembered, the next call dials again.
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Timeout)
		defer cancel()
		_, _ = s.conn(ctx)
	}()
	return s, nil
}

// layoutKeys is the key codec of layout. Wow's keys are fixed, so a key
// prefix other than the default is refused with layout=wow rather than
// silently ignored: an operator who set one expects it to be used.
func layoutKeys(l Layout, cfg Config) (keyCodec, error) {
	if l != LayoutWow {
		return keyspace{prefix: cfg.KeyPrefix}, nil
	}
	if cfg.KeyPrefix != DefaultKeyPrefix {
		return nil, fmt.Errorf("redis: --redis-key-prefix %q cannot apply with layout=wow: Wow's record keys are fixed (%s…}); leave the prefix at its default", cfg.KeyPrefix, WowKeyHead)
	}
	return wowKeys{head: cmp.Or(cfg.wowHead, WowKeyHead)}, nil
}

// Layout reports how the store keeps its records (?layout=).
func (s *Store) Layout() Layout { return s.layout }

// clientOption turns a parsed URL into rueidis options.
func clientOption(t target, timeout time.Duration) rueidis.ClientOption {
	opt := rueidis.ClientOption{
		InitAddress: t.addrs,
		Username:    t.username,
		Password:    t.password,
		SelectDB:    t.db,
		TLSConfig:   t.tls,
		ClientName:  "prepkey",
		// No client-side caching: every read must see the server's clock.
		DisableCache: true,
		// A write is never retried by the client: a retry after a lost
		// reply would read our own reservation and answer :0.
		DisableRetry: true,
		// A connection that does not answer within the timeout is dropped
		// and redialled, instead of holding every later call.
		ConnWriteTimeout: max(timeout, time.Second),
		// After each flush to Redis the writer waits up to this long for
		// more commands, so that concurrent clients share write syscalls.
		// Measured with scripts/bench.sh at 50 clients, pipeline 1: the
		// sidecar's CPU per request fell from 36.8 to 29.0 µs and its
		// throughput rose 18%; pipeline 16 was unchanged. It adds at most
		// this much latency to a request.
		MaxFlushDelay: 100 * time.Microsecond,
	}
	opt.Dialer.Timeout = timeout
	if t.topology == Sentinel {
		opt.Sentinel = rueidis.SentinelOption{
			MasterSet:  t.master,
			Username:   t.sentinelUsername,
			Password:   t.sentinelPassword,
			TLSConfig:  t.tls,
			ClientName: "prepkey",
			// Events can be missed during a failover; reconcile now and
			// then so the client never stays bound to a demoted master.
			TopologyRefreshInterval: 2 * time.Second,
		}
		opt.Sentinel.Dialer.Timeout = timeout
	}
	if t.topology == Standalone {
		opt.ForceSingleClient = true
	}
	return opt
}

// conn returns the client, dialling if there is none yet. Dialling runs in
// its own goroutine, shared by concurrent callers, so that a caller waits
// no longer than its context even when Redis is unreachable.
func (s *Store) conn(ctx context.Context) (rueidis.Client, error) {
	if c := s.client.Load(); c != nil {
		return c.Client, nil
	}
	s.mu.Lock()
	if c := s.client.Load(); c != nil {
		s.mu.Unlock()
		return c.Client, nil
	}
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed
	}
	if s.dialing == nil {
		s.dialing = make(chan struct{})
		go s.dial(s.dialing)
	}
	done := s.dialing
	s.mu.Unlock()

	select {
	case <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("connect to %s: %w", s.target.describe(), s.noAnswer(ctx.Err()))
	}
	if c := s.client.Load(); c != nil {
		return c.Client, nil
	}
	s.mu.Lock()
	err := s.dialErr
	s.mu.Unlock()
	if err == nil {
		err = errClosed
	}
	return nil, err
}

var errClosed = errors.New("store closed")

func (s *Store) dial(done chan struct{}) {
	c, err := rueidis.NewClient(s.opt)
	if err != nil && c != nil {
		c.Close()
	}
	if err == nil {
		// Load the scripts everywhere now so that the first commands find
		// them; a node that misses one later gets it again on NOSCRIPT.
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		s.scripts.load(ctx, c)
		cancel()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		s.dialErr = fmt.Errorf("connect to %s: %w", s.target.describe(), s.noAnswer(err))
	case s.closed:
		c.Close()
		s.dialErr = errClosed
	default:
		s.client.Store(&clientRef{c})
		s.dialErr = nil
	}
	s.dialing = nil
	close(done)
}

// Close releases the connections. Calls after Close fail.
func (s *Store) Close() error {
	if s.loops != nil {
		s.loops.Close()
	}
	s.closeWorkers.Do(s.workers.Close)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if c := s.client.Swap(nil); c != nil {
		c.Close()
	}
	return nil
}

// Topology reports how the Redis behind the URL is deployed.
func (s *Store) Topology() Topology { return s.target.topology }

// Ping reports whether Redis answers now: PING on standalone and Sentinel
// (through the client's current master), CLUSTER INFO with cluster_state:ok
// on a Cluster.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.deadlines.bound(ctx)
	defer cancel()
	c, err := s.conn(ctx)
	if err != nil {
		return s.fail(ctx, "ping", err)
	}
	if s.target.topology != Cluster {
		err := s.fail(ctx, "ping", c.Do(ctx, c.B().Ping().Build()).Error())
		if err == nil && s.target.topology == Sentinel {
			s.seeMaster(c)
		}
		return err
	}
	info, err := c.Do(ctx, c.B().ClusterInfo().Build()).ToString()
	if err != nil {
		return s.fail(ctx, "ping", err)
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return fmt.Errorf("redis: ping: cluster state is not ok")
	}
	return nil
}

// fail turns a client error into the one-line error the sidecar reports
// as -UNAVAILABLE; nil stays nil.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	err = s.noAnswer(err)
	msg := strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, err.Error())
	return &Error{Op: op, msg: msg, err: err}
}

// noAnswer words a deadline error as what it means here: Redis did not
// answer within the timeout.
func (s *Store) noAnswer(err error) error {
	var na *noAnswerError
	if errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &na) {
		return &noAnswerError{after: s.timeout, err: err}
	}
	return err
}

type noAnswerError struct {
	after time.Duration
	err   error
}

func (e *noAnswerError) Error() string { return fmt.Sprintf("no answer within %s", e.after) }
func (e *noAnswerError) Unwrap() error { return e.err }

// Error is a failure of Redis or of the way to it. The command may or may
// not have taken effect.
type Error struct {
	Op  string
	msg string
	err error
}

func (e *Error) Error() string { return "redis: " + e.Op + ": " + e.msg }
func (e *Error) Unwrap() error { return e.err }

// describe names the target in errors, without credentials.
func (t target) describe() string {
	switch t.topology {
	case Sentinel:
		return "sentinel master " + strconv.Quote(t.master) + " via " + strings.Join(t.addrs, ",")
	case Cluster:
		return "cluster " + strings.Join(t.addrs, ",")
	default:
		return t.addrs[0]
	}
}
