package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	mongodriver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/mongo"
	"github.com/prepkey/prepkey/commands"
)

// openMongoWow opens a layout=wow MongoDB store on a fresh database,
// dropped when the test ends, and returns it with the database's
// collection of a namespace (Wow's "prepare_" + ns), read directly.
func openMongoWow(t *testing.T) (*mongo.Store, func(ns string) *mongodriver.Collection) {
	t.Helper()
	raw := serverURL(t, "MONGO_URI", "PK_TEST_MONGO_URI")
	db := fmt.Sprintf("pktest_conformance_%d", time.Now().UnixNano())
	u, err := mongo.WithDatabase(raw, db)
	require.NoError(t, err)
	c, err := mongodriver.Connect(options.Client().ApplyURI(u))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Database(db).Drop(ctx)
		_ = c.Disconnect(ctx)
	})
	s, err := mongo.Open(t.Context(), withQuery(u, "layout=wow"), mongo.Config{Options: backend.Options{Retention: time.Hour}, SweepInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, func(ns string) *mongodriver.Collection { return c.Database(db).Collection("prepare_" + ns) }
}

// TestWowRefusals: arguments MongoDB in layout=wow cannot store get their
// -ERR, from every command (commands.Handler over the store), and nothing
// is written.
func TestWowRefusals(t *testing.T) {
	s, coll := openMongoWow(t)
	h := commands.New(s, commands.DefaultLimits, nil)
	do := func(args ...string) commands.Reply {
		raw := make([][]byte, len(args))
		for i, a := range args {
			raw[i] = []byte(a)
		}
		r, ok := h.Do(t.Context(), raw)
		require.True(t, ok)
		return r
	}
	errReply := func(text string) commands.Reply {
		return commands.Reply{Kind: commands.Error, Err: commands.ErrRefused, Text: text}
	}
	const (
		notJSON = "ERR value is not valid JSON (layout=wow)"
		badKey  = "ERR key is not valid UTF-8 (layout=wow)"
	)
	require.Equal(t, commands.Reply{Kind: commands.Int, Int: 1}, do("PK.PREPARE", "ns", "held", `"v"`))
	for _, tc := range []struct {
		args  []string
		reply string
	}{
		{[]string{"PK.PREPARE", "ns", "k", "v"}, notJSON},
		{[]string{"PK.PREPARE", "ns", "k", ""}, notJSON},
		{[]string{"PK.PREPARE", "ns", "k\xff", `"v"`}, badKey},
		{[]string{"PK.PREPARE", "ns", "k", `{"$set":{"a":1}}`}, `ERR value cannot be stored in MongoDB (layout=wow): field name "$set" starts with '$'`},
		{[]string{"PK.GET", "ns", "k\xff"}, badKey},
		{[]string{"PK.GETVALUE", "ns", "\xc3"}, badKey},
		{[]string{"PK.ROLLBACK", "ns", "held", "IFEQ", "v"}, notJSON},
		{[]string{"PK.ROLLBACK", "ns", "\xff"}, badKey},
		{[]string{"PK.REPREPARE", "ns", "held", "v"}, notJSON},
		{[]string{"PK.REPREPARE", "ns", "held", `"w"`, "IFEQ", "v"}, notJSON},
		{[]string{"PK.REPREPARE", "ns", "new", `"w"`, "FROM", "held", "IFEQ", "v"}, notJSON},
		{[]string{"PK.REPREPARE", "ns", "new", "w", "FROM", "held", "IFEQ", `"v"`}, notJSON},
		{[]string{"PK.REPREPARE", "ns", "new\xff", `"w"`, "FROM", "held", "IFEQ", `"v"`}, badKey},
		{[]string{"PK.MPREPARE", "2", "ns", "a", `"x"`, "ns", "b", "x"}, notJSON},
		{[]string{"PK.MPREPARE", "2", "ns", "a", `"x"`, "ns", "b\xff", `"x"`}, badKey},
		{[]string{"PK.PREPARE", "ns", "k", "18446744073709551616"}, "ERR value cannot be stored in MongoDB (layout=wow): integer 18446744073709551616 is outside the 64-bit range"},
	} {
		require.Equal(t, errReply(tc.reply), do(tc.args...), "%q", tc.args)
	}
	n, err := coll("ns").CountDocuments(t.Context(), bson.D{})
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "only the record of held")
	require.Equal(t, commands.Reply{Kind: commands.Bulk, Bytes: []byte(`"v"`)}, do("PK.GET", "ns", "held"))
}
