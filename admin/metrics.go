package admin

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/prepkey/prepkey/protocol/stats"
)

// StatsSource is the RESP server's counters.
type StatsSource interface {
	Stats() stats.Snapshot
}

// NewRegistry is every metric of /metrics: the server's counters, read at
// each scrape (the hot path only adds to atomic counters), the backend's
// health, the store's own metrics when it has some (store: its
// backend.Info.Metrics, or nil), and Go's runtime and process metrics.
func NewRegistry(source StatsSource, health *Health, store prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		// The standard process_* names (no namespace), which dashboards
		// and alerts for every Go service already query.
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&serverCollector{stats: source, health: health},
	)
	if store != nil {
		reg.MustRegister(store)
	}
	return reg
}

var (
	descCommands = prometheus.NewDesc("prepkey_commands_total",
		"Commands answered, by command and outcome (1, 0, nil, mismatch, error, unavailable, ok for any other reply).",
		[]string{"command", "outcome"}, nil)
	descDuration = prometheus.NewDesc("prepkey_command_duration_seconds",
		"Time from a complete request to its reply written, in the sidecar, by command.",
		[]string{"command"}, nil)
	descBackend = prometheus.NewDesc("prepkey_backend_call_duration_seconds",
		"Time of one backend call for a batch of commands (not the memory store, called inline), by op: the commands' name without pk., or mixed.",
		[]string{"op"}, nil)
	descBatch = prometheus.NewDesc("prepkey_backend_batch_size",
		"Commands per backend call.", nil, nil)
	descConnected = prometheus.NewDesc("prepkey_connected_clients",
		"Client connections open.", nil, nil)
	descMaxClients = prometheus.NewDesc("prepkey_max_clients",
		"Most client connections at once (--max-clients).", nil, nil)
	descTxQueued = prometheus.NewDesc("prepkey_tx_queued_bytes",
		"Bytes held by the queues of open transactions (MULTI), bounded by --max-tx-memory.", nil, nil)
	descReceived = prometheus.NewDesc("prepkey_connections_received_total",
		"Client connections accepted or refused.", nil, nil)
	descRejected = prometheus.NewDesc("prepkey_rejected_connections_total",
		"Client connections refused at --max-clients.", nil, nil)
	descErrors = prometheus.NewDesc("prepkey_error_replies_total",
		"Error replies, by prefix (ERR, NOAUTH, UNAVAILABLE, MISMATCH, ...), as INFO errorstats.",
		[]string{"prefix"}, nil)
	descUp = prometheus.NewDesc("prepkey_backend_up",
		"1 when the backend answered its last ping within --backend-timeout, else 0.", nil, nil)
	descLoopConns = prometheus.NewDesc("prepkey_backend_loop_connections",
		"Event loops' own connections to a standalone Redis that are up (0 for other backends).", nil, nil)
	descClientsMem = prometheus.NewDesc("prepkey_clients_memory_bytes",
		"Bytes client connections hold in buffers (unread replies, input not yet served), bounded by --max-clients-memory.", nil, nil)
	descMaxClientsMem = prometheus.NewDesc("prepkey_max_clients_memory_bytes",
		"--max-clients-memory (0: no bound).", nil, nil)
	descEvicted = prometheus.NewDesc("prepkey_evicted_clients_total",
		"Client connections closed for --max-clients-memory (the one holding the most).", nil, nil)
)

// serverCollector turns a snapshot of the server's counters into metrics.
type serverCollector struct {
	stats  StatsSource
	health *Health
}

func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCommands, descDuration, descBackend, descBatch, descConnected,
		descMaxClients, descTxQueued, descReceived, descRejected, descErrors, descUp, descLoopConns, descInfo,
		descClientsMem, descMaxClientsMem, descEvicted} {
		ch <- d
	}
}

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats.Stats()
	// Only the series that can have a value (series.go).
	for _, cs := range s.Commands {
		for o, n := range cs.Outcomes {
			if n > 0 || canHave(cs.Name, s.OutcomeNames[o]) {
				ch <- prometheus.MustNewConstMetric(descCommands, prometheus.CounterValue, float64(n), cs.Name, s.OutcomeNames[o])
			}
		}
		if cs.Latency.Count() > 0 {
			ch <- histogram(descDuration, cs.Latency, s.LatencyBoundsNanos, 1e9, cs.Name)
		}
	}
	for i, h := range s.BackendLatency {
		if h.Count() > 0 {
			ch <- histogram(descBackend, h, s.LatencyBoundsNanos, 1e9, s.BackendOps[i])
		}
	}
	if s.BatchSize.Count() > 0 {
		ch <- histogram(descBatch, s.BatchSize, s.BatchBounds, 1)
	}
	ch <- prometheus.MustNewConstMetric(descConnected, prometheus.GaugeValue, float64(s.ConnectedClients))
	ch <- prometheus.MustNewConstMetric(descMaxClients, prometheus.GaugeValue, float64(s.MaxClients))
	ch <- prometheus.MustNewConstMetric(descTxQueued, prometheus.GaugeValue, float64(s.TxQueuedBytes))
	ch <- prometheus.MustNewConstMetric(descReceived, prometheus.CounterValue, float64(s.ConnectionsTotal))
	ch <- prometheus.MustNewConstMetric(descRejected, prometheus.CounterValue, float64(s.RejectedTotal))
	for p, n := range s.Errors {
		ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(n), p)
	}
	up := 0.0
	if ok, _ := c.health.Ready(); ok {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(descLoopConns, prometheus.GaugeValue, float64(s.LoopBackendConns))
	ch <- buildInfo(s)
	ch <- prometheus.MustNewConstMetric(descClientsMem, prometheus.GaugeValue, float64(s.ClientsMemory))
	ch <- prometheus.MustNewConstMetric(descMaxClientsMem, prometheus.GaugeValue, float64(s.MaxClientsMemory))
	ch <- prometheus.MustNewConstMetric(descEvicted, prometheus.CounterValue, float64(s.EvictedClients))
}

// histogram turns per-bucket counts into Prometheus's cumulative buckets;
// the bounds and the sum are divided by unit (1e9: nanoseconds to seconds).
// Dividing, not multiplying by 1e-9: a division of two exact numbers is the
// double nearest the decimal (1e3/1e9 is 1e-06), where 1e3*1e-9 was
// 1.0000000000000002e-06 in the bucket's le label.
func histogram(d *prometheus.Desc, h stats.Hist, bounds []uint64, unit float64, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(bounds))
	var cum uint64
	for i, b := range bounds {
		cum += h.Counts[i]
		buckets[float64(b)/unit] = cum
	}
	cum += h.Counts[len(bounds)]
	return prometheus.MustNewConstHistogram(d, cum, float64(h.Sum)/unit, buckets, labels...)
}
