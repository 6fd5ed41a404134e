// Package mongo keeps reservations in MongoDB: one collection per namespace,
// one document per key, and every PK command but the key change one atomic
// single-document operation whose filter carries the sidecar's clock.
//
// The document shape, the clock, the cleanup and what is atomic are described
// in docs/mongo.md; the comments here say why the code is as it is.
package mongo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/prepkey/prepkey/backend"
)

// DefaultDatabase is used when the URL names no database.
const DefaultDatabase = "prepkey"

// CollectionPrefix starts the name of every collection the store owns, so
// that it can share a database with an application and find its own
// collections when it sweeps.
const CollectionPrefix = "prepkey_"

// Defaults for the zero values of Config.
const (
	DefaultTimeout       = 2 * time.Second
	DefaultSweepInterval = time.Minute
)

// Config is what Open needs besides the URL.
type Config struct {
	backend.Options

	// Timeout bounds every operation on the server (--backend-timeout): a
	// command that cannot be answered in time fails with an error rather
	// than hanging the client. Zero means DefaultTimeout.
	Timeout time.Duration

	// SweepInterval is how often expired records past their retention are
	// deleted by the store itself (for servers without TTL indexes). Zero
	// means DefaultSweepInterval; negative disables the sweeper (tests call
	// Sweep themselves).
	SweepInterval time.Duration

	// Logger receives the sweeper's failures, which have no caller to
	// return to. Nil discards them.
	Logger *slog.Logger
}

// Store is a backend.Store on MongoDB.
type Store struct {
	client  *mongo.Client
	db      *mongo.Database
	opts    backend.Options
	now     func() time.Time
	timeout time.Duration
	log     *slog.Logger

	colls sync.Map // namespace -> *mongo.Collection

	// layout is the URL's layout option; prefix starts the name of every
	// namespace's collection in it.
	layout Layout
	prefix string
	// made holds the namespaces whose collection exists, in layout=wow
	// (ensureWowCollection); hashedMissing says the server has no hashed
	// indexes.
	made          sync.Map
	hashedMissing bool

	mu           sync.Mutex
	indexed      map[string]bool // collections whose TTL index exists
	ttlMissing   bool            // the server has no TTL indexes (FerretDB)
	stopSweeping context.CancelFunc
	sweeperDone  chan struct{}
	swept        atomic.Int64 // records deleted by Sweep (not by a TTL index), for metrics

	// fault, in tests only, injects failures into the steps of composed
	// commands.
	fault backend.Fault
}

// Open returns a store for a mongodb:// or mongodb+srv:// URL. The database is
// the URL's path (DefaultDatabase when empty); read and write concerns and
// every other client setting come from the URL's own options.
//
// Open does not contact the server: the sidecar starts while MongoDB is down,
// its commands fail until it is back, then succeed without a restart. It
// fails only on a malformed URL (a mongodb+srv URL is resolved here, so a
// DNS failure fails it too) or an unacknowledged write concern.
func Open(ctx context.Context, rawURL string, cfg Config) (*Store, error) {
	dbName, err := databaseFromURL(rawURL)
	if err != nil {
		return nil, err
	}
	layout, rawURL, err := splitLayout(rawURL)
	if err != nil {
		return nil, err
	}
	copts := options.Client().ApplyURI(rawURL)
	if err := copts.Validate(); err != nil {
		return nil, fmt.Errorf("mongo: invalid URL: %w", err)
	}
	// With w=0 the server never says whether a filter matched, so no
	// command could tell :1 from :0.
	if wc := copts.WriteConcern; wc != nil && !wc.Acknowledged() {
		return nil, errors.New("mongo: invalid URL: an unacknowledged write concern (w=0) cannot report results")
	}
	client, err := mongo.Connect(copts)
	if err != nil {
		return nil, fmt.Errorf("mongo: connect: %w", err)
	}

	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		client:  client,
		db:      client.Database(dbName),
		opts:    cfg.Options,
		now:     cfg.Clock(),
		timeout: cfg.Timeout,
		log:     cfg.Logger,
		indexed: make(map[string]bool),
		layout:  layout,
		prefix:  CollectionPrefix,
	}
	if layout == LayoutWow {
		s.prefix = WowCollectionPrefix
		s.log.Info("mongo: layout=wow: records are Wow's PrepareKey records in prepare_<namespace>; "+
			"where the server has TTL indexes it deletes a record at its ttlAt, so --expired-retention applies only where it has none",
			"database", dbName)
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}

	interval := cfg.SweepInterval
	if interval == 0 {
		interval = DefaultSweepInterval
	}
	if interval > 0 {
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		s.stopSweeping = cancel
		s.sweeperDone = make(chan struct{})
		go s.sweepEvery(sctx, interval)
	}
	return s, nil
}

// Close stops the sweeper and disconnects.
func (s *Store) Close() error {
	if s.stopSweeping != nil {
		s.stopSweeping()
		<-s.sweeperDone
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if err := s.client.Disconnect(ctx); err != nil {
		return wrap("close", err)
	}
	return nil
}

// Ping reports whether the server answers, for the sidecar's readiness.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.client.Ping(ctx, nil); err != nil {
		return wrap("ping", err)
	}
	return nil
}

// collection returns the collection of namespace ns. Handles are cached
// because building one allocates on every command otherwise.
func (s *Store) collection(ns string) *mongo.Collection {
	if c, ok := s.colls.Load(ns); ok {
		return c.(*mongo.Collection)
	}
	c, _ := s.colls.LoadOrStore(ns, s.db.Collection(s.prefix+ns))
	return c.(*mongo.Collection)
}

// opError is how every failure leaves the store. The sidecar writes it after
// -UNAVAILABLE, so it must be one line; driver errors (topology dumps,
// server messages) are not always.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	// errors.Join separates with newlines: keep the parts apart with "; ".
	var parts []string
	for line := range strings.Lines(e.err.Error()) {
		if line = strings.Join(strings.Fields(line), " "); line != "" {
			parts = append(parts, line)
		}
	}
	return "mongo: " + e.op + ": " + strings.Join(parts, "; ")
}

func (e *opError) Unwrap() error { return e.err }

func wrap(op string, err error) error { return &opError{op: op, err: err} }
