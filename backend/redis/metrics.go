package redis

import (
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
)

var (
	descNoscript = prometheus.NewDesc("prepkey_redis_noscript_reloads_total",
		"Script runs sent again with EVAL after Redis answered NOSCRIPT (a restart or SCRIPT FLUSH).", nil, nil)
	descFailovers = prometheus.NewDesc("prepkey_redis_failovers_seen_total",
		"Changes of the Sentinel master seen by the sidecar's pings.", nil, nil)
	descNodes = prometheus.NewDesc("prepkey_redis_nodes",
		"Redis nodes the client holds connections to (the master, or a Cluster's nodes).", nil, nil)
)

// Describe and Collect make the store a prometheus.Collector, for the
// admin port's /metrics.
func (s *Store) Describe(ch chan<- *prometheus.Desc) {
	ch <- descNoscript
	ch <- descFailovers
	ch <- descNodes
}

func (s *Store) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descNoscript, prometheus.CounterValue, float64(s.noscript.Load()))
	ch <- prometheus.MustNewConstMetric(descFailovers, prometheus.CounterValue, float64(s.failovers.Load()))
	nodes := 0
	if c := s.client.Load(); c != nil {
		nodes = len(c.Nodes())
	}
	ch <- prometheus.MustNewConstMetric(descNodes, prometheus.GaugeValue, float64(nodes))
}

// seeMaster notes the Sentinel master the client is bound to after a
// successful ping; a change from the one seen before is a failover, counted
// and logged once.
func (s *Store) seeMaster(c rueidis.Client) {
	addrs := slices.Sorted(maps.Keys(c.Nodes()))
	now := strings.Join(addrs, ",")
	if now == "" {
		return
	}
	was := s.master.Swap(&now)
	if was != nil && *was != now {
		s.failovers.Add(1)
		s.log.Warn("redis: failover seen: the Sentinel master changed", "conn", "health", "from", *was, "to", now)
	}
}
