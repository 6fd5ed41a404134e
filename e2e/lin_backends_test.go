package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"
	mongoopts "go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/backend/mongo"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol"
)

// linShape is the default history: a few hundred commands from 8 to 16
// clients over 3 to 5 keys (drawn from the seed), with key changes.
func linShape(seed uint64) linConfig {
	rng := rand.New(rand.NewPCG(seed, 0x11e))
	ops := 400
	if linLong() {
		ops = 2000
	}
	return linConfig{clients: 8 + rng.IntN(9), keys: 3 + rng.IntN(3), ops: ops, moves: true, cut: 0.02}
}

// linBlockShape is a history with MULTI blocks: each block is a step over
// several keys, which makes porcupine's search much longer (a history of
// 400 commands from 16 clients took over a minute now and then), so these
// have fewer clients and commands.
func linBlockShape(seed uint64) linConfig {
	cfg := linShape(seed)
	cfg.clients, cfg.ops, cfg.blocks = 8, 250, true
	if linLong() {
		cfg.ops = 800
	}
	return cfg
}

// TestLinearizableBlocks: MULTI … EXEC blocks among the commands, on the
// backends that run a block as one isolated unit (memory, file, standalone
// Redis).
func TestLinearizableBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("records and checks concurrent histories (make test runs them)")
	}
	t.Parallel()
	seed := linSeed(t)
	backends := map[string]func(t *testing.T) []string{
		"memory": func(*testing.T) []string { return []string{"--backend", "memory:"} },
		"file":   func(t *testing.T) []string { return []string{"--backend", "file:" + t.TempDir()} },
	}
	if url := os.Getenv("PREPKEY_REDIS_URL"); url != "" {
		backends["redis"] = func(*testing.T) []string {
			return []string{"--backend", url, "--redis-key-prefix", fmt.Sprintf("pk-lin-%d:", time.Now().UnixNano())}
		}
	}
	for name, args := range backends {
		t.Run(name, func(t *testing.T) {
			for r := range linRounds(2, 8) {
				s := start(t, args(t)...)
				newLinHarness(t, s.addr, linBlockShape(seed+uint64(r))).run(seed + uint64(r))
			}
		})
	}
}

// TestLinearizableMemory: memory:, with connections cut by clients.
func TestLinearizableMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("records and checks concurrent histories (make test runs them)")
	}
	t.Parallel()
	seed := linSeed(t)
	for r := range linRounds(2, 10) {
		s := start(t, "--backend", "memory:")
		newLinHarness(t, s.addr, linShape(seed+uint64(r))).run(seed + uint64(r))
	}
}

// TestLinearizableFile: file:, killed with SIGKILL and started again on
// the same directory in the middle of the history; the commands the kill
// cuts have unknown outcomes, and every acknowledged one must be there
// after the restart.
func TestLinearizableFile(t *testing.T) {
	if testing.Short() {
		t.Skip("records and checks concurrent histories, with kills (make test runs them)")
	}
	t.Parallel()
	seed := linSeed(t)
	for r := range linRounds(2, 6) {
		dir := t.TempDir()
		s := start(t, "--backend", "file:"+dir)
		cfg := linShape(seed + uint64(r))
		restart := func(h *linHarness) {
			s.kill()
			h.horizon() // what the dead process did not run, nothing will
			s = start(t, "--backend", "file:"+dir, "--listen", s.addr)
			h.setAddr(s.addr)
		}
		newLinHarness(t, s.addr, cfg,
			linFault{"kill -9 and restart", cfg.ops / 3, restart},
			linFault{"kill -9 and restart", 2 * cfg.ops / 3, restart},
		).run(seed + uint64(r))
	}
}

// TestLinearizableRedis: a standalone Redis of the test's own, with
// appendfsync always, that loses its scripts (SCRIPT FLUSH), has the
// sidecar's connections killed (CLIENT KILL), hangs past the backend
// timeout (SIGSTOP, then SIGCONT), and is killed with SIGKILL and started
// again on its data.
func TestLinearizableRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("records and checks concurrent histories, with faults (make test runs them)")
	}
	requireRedisServer(t)
	t.Parallel()
	seed := linSeed(t)
	for r := range linRounds(1, 4) {
		port, dir := freePort(t), t.TempDir()
		args := []string{"--port", fmt.Sprint(port), "--dir", dir, "--appendonly", "yes", "--appendfsync", "always"}
		srv := redisServer(t, args...)
		admin := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1})
		t.Cleanup(func() { admin.Close() })
		require.Eventually(t, func() bool { return admin.Ping(ctx()).Err() == nil }, 10*time.Second, 10*time.Millisecond)
		s := start(t, "--backend", fmt.Sprintf("redis://127.0.0.1:%d", port), "--backend-timeout", "300ms")
		cfg := linShape(seed + uint64(r))
		cfg.ops = cfg.ops * 4 / 3 // more faults than the others
		adminDo := func(args ...any) func(h *linHarness) {
			return func(h *linHarness) {
				require.NoError(t, admin.Do(ctx(), args...).Err(), "%v", args)
			}
		}
		stopPast := func(h *linHarness) {
			from := h.unknowns.Load()
			require.NoError(t, srv.Process.Signal(syscall.SIGSTOP))
			h.waitUnknown(from) // a command waited past --backend-timeout
			require.NoError(t, srv.Process.Signal(syscall.SIGCONT))
		}
		killRestart := func(h *linHarness) {
			from := h.unknowns.Load()
			require.NoError(t, srv.Process.Kill())
			_ = srv.Wait()
			h.waitUnknown(from)
			srv = redisServer(t, args...)
			require.Eventually(t, func() bool { return admin.Ping(ctx()).Err() == nil }, 10*time.Second, 10*time.Millisecond)
		}
		n := cfg.ops / 5
		newLinHarness(t, s.addr, cfg,
			linFault{"SCRIPT FLUSH", n, adminDo("SCRIPT", "FLUSH")},
			linFault{"CLIENT KILL of the sidecar's connections", 2 * n, adminDo("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")},
			linFault{"SIGSTOP past --backend-timeout, SIGCONT", 3 * n, stopPast},
			linFault{"kill -9 and restart (appendfsync always)", 4 * n, killRestart},
		).run(seed + uint64(r))
	}
}

// TestLinearizableRedisCluster: the shared Cluster. A key change across
// slots is composed of two scripts (see backend/redis/move.go), so it is
// checked as its steps (splitMoves); every other command is one script.
func TestLinearizableRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("records and checks concurrent histories (make test runs them)")
	}
	url := sharedURL(t, "PREPKEY_REDIS_CLUSTER_URL")
	t.Parallel()
	seed := linSeed(t)
	for r := range linRounds(1, 4) {
		s := start(t, "--backend", url, "--redis-key-prefix", fmt.Sprintf("pk-lin-%d:", time.Now().UnixNano()))
		cfg := linShape(seed + uint64(r))
		cfg.composed = true
		cfg.blocks = false // a block across slots answers EXECABORT: nothing to linearize
		newLinHarness(t, s.addr, cfg).run(seed + uint64(r))
	}
}

// TestLinearizableMongo: MongoDB (FerretDB v2 on DocumentDB in CI). Every
// command but the key change is one atomic document operation; the key
// change is composed and checked as its steps, as on a Cluster.
//
// FerretDB v1 does not update or delete an existing document atomically (it
// reads, filters in Go, then writes: docs/mongo.md), so on v1 the history
// is shaped so that it can judge it: the changes of an existing record
// (REPREPARE, ROLLBACK, key changes) of each key come from one client,
// while every client PREPAREs (an insert by _id, atomic there) and reads
// every key. FerretDB v2 and MongoDB get the full mix (on v2, a deleteOne
// racing an update can miss the document: the store's deletes fall back to
// deleteMany, see backend/mongo's deleteByID).
func TestLinearizableMongo(t *testing.T) {
	if testing.Short() {
		t.Skip("records and checks concurrent histories (make test runs them)")
	}
	url := sharedURL(t, "PK_TEST_MONGO_URI")
	if u := os.Getenv("MONGO_URI"); u != "" {
		url = u
	}
	t.Parallel()
	seed := linSeed(t)
	ferret := deletesMissUpdates(t, url)
	t.Logf("FerretDB v1 (one owner per key's changes): %t", ferret)
	for r := range linRounds(1, 3) {
		db, err := mongo.WithDatabase(url, fmt.Sprintf("lin_%d", time.Now().UnixNano()))
		require.NoError(t, err)
		s := start(t, "--backend", db)
		cfg := linShape(seed + uint64(r))
		cfg.composed = true
		cfg.blocks = false // MongoDB answers EXEC with PK commands EXECABORT
		if ferret {
			cfg.owners = 2
		}
		newLinHarness(t, s.addr, cfg).run(seed + uint64(r))
	}
}

// isFerretDB reports whether the server at url is FerretDB v1: its
// buildInfo has ferretdbVersion (v2 answers ferretdb.version).
func isFerretDB(t *testing.T, url string) bool {
	t.Helper()
	return ferretDBVersion(t, url) == "v1"
}

// deletesMissUpdates reports whether the server at url is FerretDB v1,
// whose updates and deletes of an existing document read, filter in Go and
// write without checking the filter again, so the linearizability tests
// give each key one owner that changes its existing record there.
//
// FerretDB v2 is not one: on DocumentDB a deleteOne that races an update of
// the same document can delete nothing although the document matched
// before and after (backend/mongo's TestEngineDeleteOneRacingUpdates), but
// the store's deletes fall back to deleteMany, which does not miss, so the
// sidecar's histories are judged in full there. (A Wow service's own
// deleteOne does miss: TestWowMongoLinearizable keeps Wow's deletes to
// keys that only their Wow client changes, on v2.)
func deletesMissUpdates(t *testing.T, url string) bool {
	t.Helper()
	return ferretDBVersion(t, url) == "v1"
}

// ferretDBVersion is "v1" for FerretDB v1 (buildInfo's ferretdbVersion,
// "unknown" when embedded as tools/ferretdb does), v2's ferretdb.version
// ("v2.7.0"), and "" for a server that is not FerretDB.
func ferretDBVersion(t *testing.T, url string) string {
	t.Helper()
	c, err := mongodrv.Connect(mongoopts.Client().ApplyURI(url))
	require.NoError(t, err)
	defer c.Disconnect(context.Background())
	raw, err := c.Database("admin").RunCommand(ctx(), bson.D{{Key: "buildInfo", Value: 1}}).Raw()
	require.NoError(t, err)
	if _, err := raw.LookupErr("ferretdbVersion"); err == nil {
		return "v1"
	}
	v, _ := raw.Lookup("ferretdb", "version").StringValueOK() // v2
	return v
}

// TestLinearizabilityCatchesBrokenPrepare: the checker is not vacuous. A
// store whose PREPARE does not check that the key is free (it overwrites
// any record and answers :1), served by the real protocol server, gives
// histories the checker refuses.
func TestLinearizabilityCatchesBrokenPrepare(t *testing.T) {
	if testing.Short() {
		t.Skip("records and checks histories of a broken store (make test runs it)")
	}
	t.Parallel()
	seed := linSeed(t)
	st := brokenPrepare{memory.New(backend.Options{})}
	srv := protocol.New(protocol.Config{}, commands.New(st, commands.DefaultLimits, nil), st)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })

	cfg := linShape(seed)
	cfg.cut = 0
	h := newLinHarness(t, ln.Addr().String(), cfg)
	h.outDir = t.TempDir() // expected: not kept
	h.record(seed)
	res, path := h.verdict()
	require.Equal(t, porcupine.Illegal, res, "the checker accepted a store whose PREPARE overwrites live records")
	t.Logf("caught; visualization: %s", path)
}

// brokenPrepare is the memory store with a PREPARE that does not check
// liveness.
type brokenPrepare struct{ *memory.Store }

func (b brokenPrepare) RunOne(ctx context.Context, op backend.Op) backend.Result {
	if op.Kind == backend.OpPrepare { // whatever holds the key goes first
		if r := b.Store.RunOne(ctx, backend.Op{Kind: backend.OpRollback, NS: op.NS, Key: op.Key}); r.Err != nil {
			return r
		}
	}
	return b.Store.RunOne(ctx, op)
}

func (b brokenPrepare) Run(ctx context.Context, ops []backend.Op, res []backend.Result, iso backend.Isolation) error {
	if iso == backend.Isolated {
		return b.Store.Run(ctx, ops, res, iso)
	}
	for i, op := range ops {
		res[i] = b.RunOne(ctx, op)
	}
	return nil
}

// Submit runs the submission through the broken Run and RunOne, at once
// (memory's Info declares AtOnce): the Submit promoted from the memory
// store would bypass them.
func (b brokenPrepare) Submit(sub *backend.Submission) {
	backend.RunSubmission(b, sub)
	sub.Finish(backend.AtOnce)
}

// requireRedisServer skips (fails on CI) when redis-server is not installed.
func requireRedisServer(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not on PATH")
		}
		t.Skip("redis-server is not on PATH")
	}
}

// sharedURL is a shared test server's URL from env, which scripts/test.sh
// sets; without it the test is skipped (failed on CI).
func sharedURL(t *testing.T, env string) string {
	t.Helper()
	url := os.Getenv(env)
	if url == "" && env == "PK_TEST_MONGO_URI" {
		url = os.Getenv("MONGO_URI")
	}
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s is unset: scripts/test.sh starts that server", env)
		}
		t.Skipf("%s is unset (scripts/test.sh starts that server)", env)
	}
	return url
}
