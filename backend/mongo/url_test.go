package mongo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDatabaseFromURL(t *testing.T) {
	for _, tc := range []struct {
		url, db string
	}{
		{"mongodb://localhost", "prepkey"},
		{"mongodb://localhost/", "prepkey"},
		{"mongodb://localhost/?w=majority", "prepkey"},
		{"mongodb://localhost:27017/app", "app"},
		{"mongodb://localhost/app?w=majority&readConcernLevel=majority", "app"},
		{"mongodb://a:1,b:2,c:3/app?replicaSet=rs0", "app"},
		{"mongodb://user:p%40ss@localhost/app", "app"},
		{"mongodb://user:pass@localhost/?authSource=admin", "prepkey"},
		{"mongodb+srv://cluster0.example.net/app", "app"},
		{"mongodb://localhost/my%2Ddb", "my-db"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			db, err := databaseFromURL(tc.url)
			require.NoError(t, err)
			require.Equal(t, tc.db, db)
		})
	}
}

func TestOpenRejects(t *testing.T) {
	for _, tc := range []struct {
		url, err string
	}{
		{"redis://localhost", `mongo: invalid URL: scheme must be "mongodb" or "mongodb+srv"`},
		{"mongodb://localhost/a.b", `mongo: invalid URL: database name "a.b": at most 63 bytes, none of /\. "$*<>:|?`},
		{"mongodb://localhost/a%20b", `mongo: invalid URL: database name "a b": at most 63 bytes, none of /\. "$*<>:|?`},
		{"mongodb://localhost/%zz", `mongo: invalid URL: database "%zz": invalid URL escape "%zz"`},
		{"mongodb://localhost/app?w=0", "mongo: invalid URL: an unacknowledged write concern (w=0) cannot report results"},
		{"mongodb://localhost/app?layout=Wow", `mongo: invalid URL: unknown layout "Wow" (want wow or prepkey)`},
		{"mongodb://localhost/app?w=majority&layout=", `mongo: invalid URL: unknown layout "" (want wow or prepkey)`},
		{"mongodb://localhost/app?layout=wow&LAYOUT=wow", "mongo: invalid URL: layout is given twice"},
		{"mongodb://localhost/app?connectTimeoutMS=x", `mongo: invalid URL: error parsing uri: invalid value for "connectTimeoutMS": "x"`},
	} {
		t.Run(tc.url, func(t *testing.T) {
			s, err := Open(t.Context(), tc.url, Config{SweepInterval: -1})
			require.Nil(t, s)
			require.EqualError(t, err, tc.err)
		})
	}
}

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct {
		url, db, want string
	}{
		{"mongodb://127.0.0.1:27017/", "t1", "mongodb://127.0.0.1:27017/t1"},
		{"mongodb://127.0.0.1:27017", "t1", "mongodb://127.0.0.1:27017/t1"},
		{"mongodb://h/app?w=majority", "t1", "mongodb://h/t1?w=majority"},
		{"mongodb://h?w=majority", "t1", "mongodb://h/t1?w=majority"},
		{"mongodb://u:p%2Fw@a:1,b:2/app?replicaSet=rs0", "t1", "mongodb://u:p%2Fw@a:1,b:2/t1?replicaSet=rs0"},
		{"mongodb+srv://c.example.net/", "t1", "mongodb+srv://c.example.net/t1"},
		{"mongodb://h/app?layout=wow&w=1", "t1", "mongodb://h/t1?layout=wow&w=1"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			got, err := WithDatabase(tc.url, tc.db)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			db, err := databaseFromURL(got)
			require.NoError(t, err)
			require.Equal(t, tc.db, db)
		})
	}
	_, err := WithDatabase("mongodb://h/", "a.b")
	require.EqualError(t, err, `mongo: invalid URL: database name "a.b": at most 63 bytes, none of /\. "$*<>:|?`)
}

// TestSplitLayout: the layout option is read and removed, whatever its
// place among the options, and the rest of the URL is kept byte for byte.
func TestSplitLayout(t *testing.T) {
	for _, tc := range []struct {
		url    string
		layout Layout
		rest   string
	}{
		{"mongodb://h/app", LayoutPrepkey, "mongodb://h/app"},
		{"mongodb://h/app?w=majority", LayoutPrepkey, "mongodb://h/app?w=majority"},
		{"mongodb://h/app?layout=wow", LayoutWow, "mongodb://h/app"},
		{"mongodb://h/app?layout=prepkey", LayoutPrepkey, "mongodb://h/app"},
		{"mongodb://h?layout=wow", LayoutWow, "mongodb://h"},
		{"mongodb://h/?w=majority&layout=wow&retryWrites=true", LayoutWow, "mongodb://h/?w=majority&retryWrites=true"},
		{"mongodb://h/app?Layout=wow;w=1", LayoutWow, "mongodb://h/app?w=1"},
		{"mongodb://u:p%3Fx@a:1,b:2/app?replicaSet=rs0&layout=w%6Fw", LayoutWow, "mongodb://u:p%3Fx@a:1,b:2/app?replicaSet=rs0"},
		{"mongodb+srv://c.example.net/app?layout=wow", LayoutWow, "mongodb+srv://c.example.net/app"},
		{"mongodb://h/app?playout=wow", LayoutPrepkey, "mongodb://h/app?playout=wow"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			layout, rest, err := splitLayout(tc.url)
			require.NoError(t, err)
			require.Equal(t, tc.layout, layout)
			require.Equal(t, tc.rest, rest)
		})
	}
}
