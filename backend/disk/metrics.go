package disk

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

var (
	descSwept = prometheus.NewDesc("prepkey_expired_swept_total",
		"Expired records deleted by the sidecar after --expired-retention.", nil, nil)
	descDisk = prometheus.NewDesc("prepkey_pebble_disk_usage_bytes",
		"Disk space of the embedded store: live and obsolete files and the WAL.", nil, nil)
	descFsync = prometheus.NewDesc("prepkey_pebble_wal_fsync_duration_seconds",
		"Latency of the embedded store's WAL fsyncs.", nil, nil)
)

// fsyncBounds are the bucket bounds wanted, in seconds: pebble keeps a
// hundred; each is shown as the nearest of pebble's at or below it, so the
// counts are pebble's. Pebble's bounds are exponential (0.009299119756734196
// s): the le label is that bound rounded to two significant digits (0.0093),
// as clean as a decimal literal and off by under 1% of the bound.
var fsyncBounds = []float64{100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 10}

// Describe and Collect make the store a prometheus.Collector, for the
// admin port's /metrics.
func (s *Store) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSwept
	ch <- descDisk
	ch <- descFsync
}

func (s *Store) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descSwept, prometheus.CounterValue, float64(s.swept.Load()))
	if s.closed.Load() {
		return // pebble panics on use after Close
	}
	m := s.db.Metrics()
	ch <- prometheus.MustNewConstMetric(descDisk, prometheus.GaugeValue, float64(m.DiskSpaceUsage()))
	if m.LogWriter.FsyncLatency == nil {
		return
	}
	var d dto.Metric
	if err := m.LogWriter.FsyncLatency.Write(&d); err != nil || d.Histogram == nil {
		return
	}
	// pebble observes nanoseconds.
	buckets := make(map[float64]uint64, len(fsyncBounds))
	pb := d.Histogram.GetBucket()
	for _, want := range fsyncBounds {
		var le float64
		var cum uint64
		for _, b := range pb {
			if b.GetUpperBound()/1e9 <= want {
				le, cum = b.GetUpperBound()/1e9, b.GetCumulativeCount()
			}
		}
		if le > 0 {
			buckets[twoDigits(le)] = cum
		}
	}
	ch <- prometheus.MustNewConstHistogram(descFsync, d.Histogram.GetSampleCount(), d.Histogram.GetSampleSum()/1e9, buckets)
}

// twoDigits is v rounded to two significant digits: 0.009299119756734196
// is 0.0093, 9.999999999999957 is 10.
func twoDigits(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 2, 64), 64)
	return r
}
