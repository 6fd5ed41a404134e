package mongo

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/prepkey/prepkey/backend"
)

// TestRecordTooLarge: a record whose value is longer than the store's read
// bound (--max-value-bytes), written by another writer (here a store with
// a larger bound on the same database), is refused with the refusal that
// names it and the document's size, in both layouts; a value of exactly
// the bound is served; a scan leaves it out and goes on past it; a
// rollback deletes it. In layout=wow, a document too large to hold a
// value within the bound is refused before its value is converted.
func TestRecordTooLarge(t *testing.T) {
	const bound = 100
	for _, layout := range []string{"prepkey", "wow"} {
		t.Run(layout, func(t *testing.T) {
			ctx := t.Context()
			u, err := WithDatabase(withLayout(t, serverURL(t), layout), freshDatabase(t))
			require.NoError(t, err)
			open := func(max int) *Store {
				s, err := Open(ctx, u, Config{Options: backend.Options{Retention: time.Hour, MaxValueBytes: max}, SweepInterval: -1})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, s.Close()) })
				return s
			}
			other := open(1000)
			s := open(bound)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = s.db.Drop(ctx)
			})
			const ns = "user"
			// JSON strings, so that both layouts take them: quotes included,
			// exactly the bound, and one byte more.
			fits := `"` + strings.Repeat("f", bound-2) + `"`
			big := `"` + strings.Repeat("b", bound-1) + `"`
			for _, kv := range [][2]string{{"a-fits", fits}, {"b-big", big}, {"c-fits", fits}} {
				ok, err := (backend.Calls{Runner: other}).Prepare(ctx, ns, []byte(kv[0]), []byte(kv[1]), backend.Expiry{})
				require.NoError(t, err)
				require.True(t, ok)
			}
			rec, ok, err := (backend.Calls{Runner: s}).Get(ctx, ns, []byte("a-fits"))
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, backend.Record{Value: []byte(fits), TTLAt: backend.Forever, Live: true}, rec)

			docSize := func(key string) int64 {
				id := any(binary([]byte(key)))
				if layout == "wow" {
					id = key
				}
				raw, err := s.collection(ns).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Raw()
				require.NoError(t, err)
				return int64(len(raw))
			}
			_, _, err = (backend.Calls{Runner: s}).Get(ctx, ns, []byte("b-big"))
			require.Equal(t, backend.RecordTooLarge(ns, []byte("b-big"), docSize("b-big"), bound), err)
			require.Contains(t, err.Error(), `ERR record of key "b-big" in namespace user is `)

			// A scan of pages of one: the record left out, the scan not
			// ended by it.
			var keys []string
			var pos []byte
			for {
				page, err := s.Scan(ctx, ns, pos, 1)
				require.NoError(t, err)
				for _, r := range page.Records {
					keys = append(keys, string(r.Key))
				}
				if page.Done {
					break
				}
				pos = page.Next
			}
			require.Equal(t, []string{"a-fits", "c-fits"}, keys)

			if layout == "wow" {
				// An array of one-digit numbers: 5 times its JSON in BSON.
				arr := make(bson.A, 200)
				for i := range arr {
					arr[i] = int32(1)
				}
				_, err := s.collection(ns).InsertOne(ctx, bson.D{{Key: "_id", Value: "d-array"}, {Key: "value", Value: arr}, {Key: "ttlAt", Value: bson.DateTime(148204944000000)}})
				require.NoError(t, err)
				n := docSize("d-array")
				require.Greater(t, n, int64(wowRawBound(bound, "d-array")), "refused before conversion")
				_, _, err = (backend.Calls{Runner: s}).Get(ctx, ns, []byte("d-array"))
				require.Equal(t, backend.RecordTooLarge(ns, []byte("d-array"), n, bound), err)
			}

			ok, err = (backend.Calls{Runner: s}).Rollback(ctx, ns, []byte("b-big"), backend.Cond{})
			require.NoError(t, err)
			require.True(t, ok)
			_, ok, err = (backend.Calls{Runner: s}).Get(ctx, ns, []byte("b-big"))
			require.NoError(t, err)
			require.False(t, ok)
		})
	}
}
