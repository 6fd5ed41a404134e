package redis

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		url  string
		want target
	}{
		{"redis://localhost", target{addrs: []string{"localhost:6379"}}},
		{"redis://h:7000/3", target{addrs: []string{"h:7000"}, db: 3}},
		{"redis://u:p%40ss@h:7000/", target{addrs: []string{"h:7000"}, username: "u", password: "p@ss"}},
		{"redis://:secret@h", target{addrs: []string{"h:6379"}, password: "secret"}},
		{"redis://[::1]:7000", target{addrs: []string{"[::1]:7000"}}},
		{"REDIS://h", target{addrs: []string{"h:6379"}}},
		{"redis+sentinel://s1,s2:5000/mymaster", target{topology: Sentinel,
			addrs: []string{"s1:26379", "s2:5000"}, master: "mymaster"}},
		{"redis+sentinel://u:p@s1:5000/mymaster/2?sentinel_password=sp&sentinel_username=su", target{topology: Sentinel,
			addrs: []string{"s1:5000"}, master: "mymaster", db: 2, username: "u", password: "p",
			sentinelUsername: "su", sentinelPassword: "sp"}},
		{"redis+cluster://a:7000,b:7001,c", target{topology: Cluster,
			addrs: []string{"a:7000", "b:7001", "c:6379"}}},
		{"redis+cluster://:pw@a:7000/", target{topology: Cluster, addrs: []string{"a:7000"}, password: "pw"}},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got, err := parseURL(tt.url)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseURLTLS(t *testing.T) {
	for _, u := range []string{"rediss://h:6380", "rediss+sentinel://h:6380/m", "rediss+cluster://h:6380"} {
		got, err := parseURL(u)
		require.NoError(t, err, u)
		require.NotNil(t, got.tls, u)
		require.Empty(t, got.tls.ServerName, u) // taken from each address by the dialer
	}
}

func TestParseURLErrors(t *testing.T) {
	tests := []struct{ url, msg string }{
		{"localhost:6379", `redis: invalid URL "localhost:6379": no scheme`},
		{"http://h", `redis: invalid URL "http://h": unknown scheme "http"`},
		{"redis://", `redis: invalid URL "redis://": empty host`},
		{"redis://a,b", `redis: invalid URL "redis://a,b": one host expected (use redis+cluster:// or redis+sentinel:// for several)`},
		{"redis://h:0", `redis: invalid URL "redis://h:0": bad port in "h:0"`},
		{"redis://h:x", `redis: invalid URL "redis://h:x": bad port in "h:x"`},
		{"redis://h/x", `redis: invalid URL "redis://h/x": bad database number "x"`},
		{"redis://h/-1", `redis: invalid URL "redis://h/-1": bad database number "-1"`},
		{"redis://h/1/2", `redis: invalid URL "redis://h/1/2": unexpected path "1/2"`},
		{"redis://h?foo=1", `redis: invalid URL "redis://h?foo=1": unknown parameter "foo"`},
		{"redis://u:pw@h/x", `redis: invalid URL "redis://u:xxxxx@h/x": bad database number "x"`},
		{"redis+cluster://a,b/1", `redis: invalid URL "redis+cluster://a,b/1": a cluster has no database number`},
		{"redis+cluster://a,,b", `redis: invalid URL "redis+cluster://a,,b": empty host`},
		{"redis+sentinel://s1", `redis: invalid URL "redis+sentinel://s1": the master name is missing (redis+sentinel://host:port,…/master)`},
		{"redis+sentinel://s1/m?sentinel_password=x&bad=1", `redis: invalid URL "redis+sentinel://s1/m?xxxxx": unknown parameter "bad"`},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, err := parseURL(tt.url)
			require.EqualError(t, err, tt.msg)
		})
	}
}
