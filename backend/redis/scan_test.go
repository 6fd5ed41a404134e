package redis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestScanPrefixWithGlobCharacters: a key prefix holding glob
// metacharacters matches only itself in SCAN's MATCH, so a store never
// returns another prefix's records (nor the other way round).
func TestScanPrefixWithGlobCharacters(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) { testScanPrefix(t, "redis://"+startFake(t).Addr()) })
	t.Run("standalone", func(t *testing.T) { testScanPrefix(t, serverURL(t, envStandalone)) })
	t.Run("cluster", func(t *testing.T) { testScanPrefix(t, serverURL(t, envCluster)) })
}

func testScanPrefix(t *testing.T, url string) {
	ctx := context.Background()
	prefixes := []string{`a*[x]?\:`, `ab[x]c\:`, `aZxc:`, `a*[x]?\\:`}
	run := fmt.Sprintf("%d:", time.Now().UnixNano()) // real servers are shared
	for i := range prefixes {
		prefixes[i] += run
	}
	stores := make([]*Store, len(prefixes))
	for i, p := range prefixes {
		stores[i] = openStore(t, url, Config{KeyPrefix: p})
		ok, err := (backend.Calls{Runner: stores[i]}).Prepare(ctx, "ns", []byte("k*"), []byte(p), backend.Expiry{})
		require.NoError(t, err)
		require.True(t, ok)
	}
	for i, s := range stores {
		var got []string
		var pos []byte
		for {
			page, err := s.Scan(ctx, "ns", pos, 1000)
			require.NoError(t, err)
			for _, r := range page.Records {
				got = append(got, string(r.Key)+"="+string(r.Value))
			}
			if page.Done {
				break
			}
			pos = page.Next
		}
		require.Equal(t, []string{"k*=" + prefixes[i]}, got, "prefix %q", prefixes[i])
	}
}
