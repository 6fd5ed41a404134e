package admin

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/prepkey/prepkey/internal/version"
	"github.com/prepkey/prepkey/protocol/stats"
)

// descInfo is the usual _build_info gauge (as Prometheus's own
// <program>_build_info): a dashboard joins on it to show which build each
// sidecar runs, and an alert finds a fleet running mixed versions.
var descInfo = prometheus.NewDesc("prepkey_build_info",
	"Always 1: the sidecar's version, VCS commit, Go version and backend kind.",
	[]string{"version", "commit", "goversion", "backend"}, nil)

// buildInfo is prepkey_build_info. The version is the server's (INFO's
// prepkey_version, set from version.Get by the sidecar), the commit and Go
// version are the binary's own.
func buildInfo(s stats.Snapshot) prometheus.Metric {
	b := version.Get()
	return prometheus.MustNewConstMetric(descInfo, prometheus.GaugeValue, 1, s.Version, b.Commit, b.GoVersion, s.Backend)
}
