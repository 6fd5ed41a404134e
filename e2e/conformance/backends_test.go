// Package conformance runs the server-level cases of the store contract on
// every backend: PK.SCAN through commands.Handler (cursors, MATCH,
// LIVE/EXPIRED) and MULTI/EXEC over connections to a server on the store.
// They were part of backend/storetest, which now tests the stores' own
// methods and links no server package; the stores here are opened through
// each backend's public opener, as the sidecar opens them.
package conformance

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/require"
	mongodriver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/disk"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/backend/mongo"
	"github.com/prepkey/prepkey/backend/redis"
	"github.com/prepkey/prepkey/backend/storetest"
	"github.com/prepkey/prepkey/protocol/scheduler/schedtest"
)

// run runs the server-level cases on the stores newStore builds, under the
// names they had in storetest.Run, each served as it declares itself
// (backend.Info: Completes, Joins), as the sidecar serves it
// (cmd/sidecar, TestOpenBackendDeclares).
func run(t *testing.T, newStore storetest.NewStore) { runAs(t, newStore, nil) }

// runAs is run with the store served as sc says, when not nil
// (schedtest.Declare).
func runAs(t *testing.T, newStore storetest.NewStore, sc *schedtest.Schedule) {
	t.Run("Scan", func(t *testing.T) { runScan(t, newStore) })
	t.Run("Transactions", func(t *testing.T) {
		t.Run("blocks", func(t *testing.T) { testBlocks(t, newStore, sc) })
		t.Run("isolation", func(t *testing.T) { testBlockIsolation(t, newStore, sc) })
	})
}

func TestConformanceMemory(t *testing.T) { run(t, memoryHarness) }

// memoryHarness is a fresh memory store on the suite's clock.
func memoryHarness(t *testing.T, opts backend.Options) storetest.Harness {
	clock := newClock()
	opts.Now = clock.Now
	s := memory.New(opts)
	t.Cleanup(func() { _ = s.Close() })
	return storetest.Harness{Store: s, Now: clock.Now, Advance: clock.Advance}
}

// TestConformanceMemorySchedules serves the memory store on each of the
// server's paths (schedtest.All): runs joined or each its own, finished at
// once, on the loop or elsewhere.
func TestConformanceMemorySchedules(t *testing.T) {
	for _, sc := range schedtest.All {
		t.Run(sc.Name, func(t *testing.T) {
			runAs(t, memoryHarness, &sc.Schedule)
		})
	}
}

func TestConformanceFile(t *testing.T) {
	run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		clock := newClock()
		opts.Now = clock.Now
		s, err := disk.Open(t.TempDir(), opts)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return storetest.Harness{Store: s, Now: clock.Now, Advance: clock.Advance}
	})
}

func newClock() *storetest.Clock { return storetest.NewClock(time.UnixMilli(1_700_000_000_000)) }

// fakeRedis is a miniredis whose clock (TIME and key expiry alike) only
// moves when the test says so.
type fakeRedis struct {
	*miniredis.Miniredis
	mu  sync.Mutex
	now time.Time
}

func startFake(t testing.TB) *fakeRedis {
	t.Helper()
	f := &fakeRedis{Miniredis: miniredis.RunT(t), now: time.UnixMilli(1_750_000_000_123)}
	f.SetTime(f.now)
	f.ClockTTL(true)
	return f
}

func (f *fakeRedis) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeRedis) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	f.SetTime(f.now)
}

// openRedis opens a Redis store on url; on a real server with a key prefix
// of the test's own, so that tests sharing it never see each other's keys.
func openRedis(t *testing.T, url string, opts backend.Options, ownPrefix bool) *redis.Store {
	t.Helper()
	cfg := redis.Config{Options: opts}
	if ownPrefix {
		cfg.KeyPrefix = fmt.Sprintf("pktest:%s:%d:", t.Name(), time.Now().UnixNano())
	}
	s, err := redis.Open(context.Background(), url, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func miniredisStore(layout string) storetest.NewStore {
	return func(t *testing.T, opts backend.Options) storetest.Harness {
		f := startFake(t)
		url := "redis://" + f.Addr()
		if layout != "" {
			url += "?" + redisLayout(layout)
		}
		return storetest.Harness{Store: openRedis(t, url, opts, false), Now: f.clock, Advance: f.advance}
	}
}

// redisLayout is the query of a Redis store in layout. The suite's values
// are any bytes (the wire rows send them as they are), so layout=wow runs
// with ?values=any, its opt-out of the JSON check; the check itself is
// e2e's TestWowNotJSON and backend/redis's TestWowArgCheck.
func redisLayout(layout string) string {
	if layout == "wow" {
		return "layout=wow&values=any"
	}
	return "layout=" + layout
}

func TestConformanceMiniredis(t *testing.T)    { run(t, miniredisStore("")) }
func TestConformanceWowMiniredis(t *testing.T) { run(t, miniredisStore("wow")) }

// serverURL returns a real server's URL from the environment (printed by
// scripts/redis-servers.sh up, or scripts/ferretdb.sh up); without it the
// test is skipped, except under CI=true, where a skip would hide a backend.
func serverURL(t *testing.T, names ...string) string {
	t.Helper()
	for _, name := range names {
		if v := os.Getenv(name); v != "" {
			return v
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not set under CI=true: scripts/test.sh starts that server", strings.Join(names, " or "))
	}
	t.Skipf("%s is not set: no server to run against", strings.Join(names, " or "))
	return ""
}

// redisServer opens stores on the real server of variable env, in layout
// (empty: the default layout, with a key prefix of the store's own; wow:
// Wow's keys, which have none, so each env's namespaces have a head of
// their own). On a Cluster (isolates) a block runs as one script only when
// its keys are in one slot; elsewhere EXEC answers -EXECABORT.
func redisServer(t *testing.T, env, layout string, cluster bool) storetest.NewStore {
	url := serverURL(t, env)
	if layout != "" {
		url = withQuery(url, redisLayout(layout))
	}
	return func(t *testing.T, opts backend.Options) storetest.Harness {
		h := storetest.Harness{Store: openRedis(t, url, opts, layout == "")}
		if cluster {
			h.Isolates = oneSlot(layout)
		}
		return h
	}
}

func TestConformanceStandalone(t *testing.T) {
	t.Parallel()
	run(t, redisServer(t, "PREPKEY_REDIS_URL", "", false))
}

func TestConformanceSentinel(t *testing.T) {
	t.Parallel()
	run(t, redisServer(t, "PREPKEY_REDIS_SENTINEL_URL", "", false))
}

func TestConformanceCluster(t *testing.T) {
	t.Parallel()
	run(t, redisServer(t, "PREPKEY_REDIS_CLUSTER_URL", "", true))
}

func TestConformanceWowStandalone(t *testing.T) {
	t.Parallel()
	run(t, redisServer(t, "PREPKEY_REDIS_URL", "wow", false))
}

func TestConformanceWowSentinel(t *testing.T) {
	t.Parallel()
	run(t, redisServer(t, "PREPKEY_REDIS_SENTINEL_URL", "wow", false))
}

func TestConformanceWowCluster(t *testing.T) {
	t.Parallel()
	run(t, redisServer(t, "PREPKEY_REDIS_CLUSTER_URL", "wow", true))
}

// oneSlot reports whether keys of ns are in one Cluster slot, in layout.
// The hash tag of a record's Redis key is its (namespace, key): in the
// default layout ns + ":" + key with '%' and '}' of key escaped
// (backend/redis/keys.go), in layout=wow b64(ns) + "." + b64(key)
// (v2:prepare:{…}, base64url without padding).
func oneSlot(layout string) func(ns string, keys [][]byte) bool {
	tag := func(ns string, key []byte) string {
		if layout == "wow" {
			b := base64.RawURLEncoding
			return b.EncodeToString([]byte(ns)) + "." + b.EncodeToString(key)
		}
		return ns + ":" + strings.NewReplacer("%", "%25", "}", "%7D").Replace(string(key))
	}
	return func(ns string, keys [][]byte) bool {
		for _, k := range keys {
			if slot(tag(ns, k)) != slot(tag(ns, keys[0])) {
				return false
			}
		}
		return true
	}
}

// slot is the Cluster slot of a hash tag: CRC16 (XMODEM) modulo 16384.
func slot(tag string) uint16 {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// mongoStore opens MongoDB stores, each on a fresh database dropped when
// its test ends. MongoDB composes a block from steps, so it never isolates
// one: EXEC answers -EXECABORT.
func mongoStore(t *testing.T, layout string) storetest.NewStore {
	raw := serverURL(t, "MONGO_URI", "PK_TEST_MONGO_URI")
	return func(t *testing.T, opts backend.Options) storetest.Harness {
		clock := newClock()
		opts.Now = clock.Now
		db := fmt.Sprintf("pktest_conformance_%d", time.Now().UnixNano())
		u, err := mongo.WithDatabase(raw, db)
		require.NoError(t, err)
		dropAtCleanup(t, u, db)
		if layout != "" {
			u = withQuery(u, "layout="+layout)
		}
		s, err := mongo.Open(t.Context(), u, mongo.Config{Options: opts, Timeout: 15 * time.Second, SweepInterval: -1})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		h := storetest.Harness{Store: s, Now: clock.Now, Advance: clock.Advance,
			Isolates: func(string, [][]byte) bool { return false }}
		if layout == "wow" {
			h.Values = &storetest.JSONValues
			h.TextKeys = "a key in layout=wow is a string, so it must be UTF-8"
		}
		return h
	}
}

// withQuery adds an option to a URL's query.
func withQuery(url, opt string) string {
	if strings.Contains(url, "?") {
		return url + "&" + opt
	}
	return url + "?" + opt
}

// dropAtCleanup drops database db of the server at url when t ends.
func dropAtCleanup(t *testing.T, url, db string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := mongodriver.Connect(options.Client().ApplyURI(url))
		if err != nil {
			return
		}
		defer func() { _ = c.Disconnect(ctx) }()
		_ = c.Database(db).Drop(ctx)
	})
}

func TestConformanceMongo(t *testing.T) {
	t.Parallel()
	run(t, mongoStore(t, ""))
}

// TestConformanceMongoWow: values are any bytes and layout=wow takes JSON,
// so each is stored as a JSON text standing for it (storetest.JSONValues);
// keys that are not UTF-8 are left out.
func TestConformanceMongoWow(t *testing.T) {
	t.Parallel()
	run(t, mongoStore(t, "wow"))
}
