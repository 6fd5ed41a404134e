package memory

import "github.com/prometheus/client_golang/prometheus"

var descSwept = prometheus.NewDesc("prepkey_expired_swept_total",
	"Expired records deleted by the sidecar after --expired-retention.", nil, nil)

// Describe and Collect make the store a prometheus.Collector, for the
// admin port's /metrics.
func (s *Store) Describe(ch chan<- *prometheus.Desc) { ch <- descSwept }

func (s *Store) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descSwept, prometheus.CounterValue, float64(s.swept.Load()))
}
