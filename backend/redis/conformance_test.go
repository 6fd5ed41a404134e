package redis

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/storetest"
)

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

func (f *fakeRedis) url() string { return "redis://" + f.Addr() }

func (f *fakeRedis) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeRedis) advance(d time.Duration) { f.setClock(f.clock().Add(d)) }

func (f *fakeRedis) setClock(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = now
	f.SetTime(now)
}

func TestConformanceMiniredis(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		f := startFake(t)
		s := openStore(t, f.url(), Config{Options: opts})
		return storetest.Harness{Store: s, Now: f.clock, Advance: f.advance}
	})
}

func TestConformanceStandalone(t *testing.T) {
	t.Parallel()
	url := serverURL(t, envStandalone)
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		return storetest.Harness{Store: openStore(t, url, Config{Options: opts})}
	})
}

func TestConformanceCluster(t *testing.T) {
	t.Parallel()
	url := serverURL(t, envCluster)
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		s := openStore(t, url, Config{Options: opts})
		return storetest.Harness{Store: s, Isolates: oneSlot(s), BlockKeys: slotMates(s)}
	})
}

// oneSlot: a Cluster runs a block as one script when its keys are in one
// slot.
func oneSlot(s *Store) func(ns string, keys [][]byte) bool {
	return func(ns string, keys [][]byte) bool {
		for _, k := range keys {
			if slot(s.keys.recordKey(ns, k)) != slot(s.keys.recordKey(ns, keys[0])) {
				return false
			}
		}
		return true
	}
}

// slotMates are two keys of the suite's namespace in one slot.
func slotMates(s *Store) [2]string {
	k := keysWithSlots(s.keys, "ns", 2, true)
	return [2]string{string(k[0]), string(k[1])}
}

func TestConformanceSentinel(t *testing.T) {
	t.Parallel()
	url := serverURL(t, envSentinel)
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		return storetest.Harness{Store: openStore(t, url, Config{Options: opts})}
	})
}

// The conformance suite in layout=wow, on every topology: the store
// keeps Wow's records and every command keeps its contract. On real
// servers each store gets a key head of its own before Wow's (wowHead),
// since Wow's keys have no prefix to tell tests apart.

func wowURL(url string) string { return url + sep(url) + "layout=wow" }

func sep(url string) string {
	if strings.Contains(url, "?") {
		return "&"
	}
	return "?"
}

// openWow opens a layout=wow store on url whose record keys start with a
// head of the test's own.
func openWow(t testing.TB, url string, opts backend.Options) *Store {
	t.Helper()
	head := fmt.Sprintf("pktest:%s:%d:", t.Name(), time.Now().UnixNano()) + WowKeyHead
	return openStore(t, wowURL(url), Config{Options: opts, KeyPrefix: DefaultKeyPrefix, wowHead: head})
}

func TestConformanceWowMiniredis(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole suite again, in layout=wow (make test runs it)")
	}
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		f := startFake(t)
		s := openStore(t, wowURL(f.url()), Config{Options: opts, KeyPrefix: DefaultKeyPrefix})
		return storetest.Harness{Store: s, Now: f.clock, Advance: f.advance}
	})
}

func TestConformanceWowStandalone(t *testing.T) {
	t.Parallel()
	url := serverURL(t, envStandalone)
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		return storetest.Harness{Store: openWow(t, url, opts)}
	})
}

func TestConformanceWowCluster(t *testing.T) {
	t.Parallel()
	url := serverURL(t, envCluster)
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		s := openWow(t, url, opts)
		return storetest.Harness{Store: s, Isolates: oneSlot(s), BlockKeys: slotMates(s)}
	})
}

func TestConformanceWowSentinel(t *testing.T) {
	t.Parallel()
	url := serverURL(t, envSentinel)
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		return storetest.Harness{Store: openWow(t, url, opts)}
	})
}

// The conformance suite in layout=wow over the event loops' Wire.
func TestConformanceWowWireMiniredis(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole suite again, in layout=wow over the Wire (make test runs it)")
	}
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		f := startFake(t)
		s := openStore(t, wowURL(f.url()), Config{Options: opts, KeyPrefix: DefaultKeyPrefix})
		return storetest.Harness{Store: newWireStore(t, s), Now: f.clock, Advance: f.advance}
	})
}

func TestConformanceWowWireStandalone(t *testing.T) {
	t.Parallel()
	url := serverURL(t, envStandalone)
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		return storetest.Harness{Store: newWireStore(t, openWow(t, url, opts))}
	})
}
