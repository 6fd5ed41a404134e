package mongo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/prepkey/prepkey/backend/storetest"
)

// serverURL returns the server the tests run against: MONGO_URI (a real
// MongoDB) when set, else PK_TEST_MONGO_URI (FerretDB, started by
// scripts/ferretdb.sh). Without either the test is skipped, but on CI, where
// a silent skip would hide the whole backend, it fails.
func serverURL(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"MONGO_URI", "PK_TEST_MONGO_URI"} {
		if u := os.Getenv(name); u != "" {
			return u
		}
	}
	const msg = `no MongoDB server: set MONGO_URI, or PK_TEST_MONGO_URI with eval "$(scripts/ferretdb.sh up DIR)"`
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// urlParts splits a MongoDB URL the way the driver does.
type urlParts struct {
	scheme, userinfo, hosts, db, query string
}

func splitURL(t testing.TB, raw string) urlParts {
	t.Helper()
	var p urlParts
	var rest string
	var ok bool
	for _, scheme := range []string{"mongodb://", "mongodb+srv://"} {
		if rest, ok = strings.CutPrefix(raw, scheme); ok {
			p.scheme = scheme
			break
		}
	}
	require.True(t, ok, "not a MongoDB URL: %q", raw)
	if before, after, found := strings.Cut(rest, "@"); found {
		p.userinfo, rest = before+"@", after
	}
	rest, p.query, _ = strings.Cut(rest, "?")
	p.hosts, p.db, _ = strings.Cut(rest, "/")
	return p
}

func (p urlParts) String() string {
	s := p.scheme + p.userinfo + p.hosts + "/" + p.db
	if p.query != "" {
		s += "?" + p.query
	}
	return s
}

// freshDatabase returns a database name no other test uses, so that tests
// (and concurrent test runs on one server) never see each other's records.
func freshDatabase(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "pktest_" + hex.EncodeToString(b)
}

// openTest opens a store on a fresh database of raw's server and drops the
// database when the test ends.
func openTest(t testing.TB, raw string, cfg Config) *Store {
	t.Helper()
	u, err := WithDatabase(raw, freshDatabase(t))
	require.NoError(t, err)
	s, err := Open(t.Context(), u, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// The server may be down on purpose (failure tests); a database
		// left behind there holds a few test records at most.
		_ = s.db.Drop(ctx)
		require.NoError(t, s.Close())
	})
	return s
}

// ferretDB reports whether the store's server is FerretDB v1 (on SQLite),
// which answers buildInfo with its own version, ferretdbVersion ("unknown"
// when embedded, as tools/ferretdb does), besides the MongoDB one it
// emulates. FerretDB v2 on PostgreSQL with DocumentDB
// (scripts/mongo-engine.sh) answers ferretdb.version instead and is not
// told apart: its updates of one document are atomic, it stores Decimal128
// and builds TTL and hashed indexes, so it runs everything MongoDB runs.
func ferretDB(t *testing.T, s *Store) bool {
	t.Helper()
	raw, err := s.client.Database("admin").RunCommand(t.Context(), bson.D{{Key: "buildInfo", Value: 1}}).Raw()
	require.NoError(t, err)
	_, err = raw.LookupErr("ferretdbVersion")
	return err == nil
}

// fakeClock is the sidecar's clock in tests: it moves only when told to.
type fakeClock = storetest.Clock

// newFakeClock starts at the real time: MongoDB's TTL monitor compares
// expireAt with the server's clock, and must not delete records early.
func newFakeClock() *fakeClock { return storetest.NewClock(time.Now().Truncate(time.Millisecond)) }
