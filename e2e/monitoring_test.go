package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const monitoringDir = "../deploy/monitoring"

// TestMonitoringNamesExported: every metric that the Grafana dashboard's
// queries and the alert rules' expressions name is one that a running
// sidecar exports, as scraped from its /metrics after some traffic (file:,
// and Redis when the test servers run: scripts/test.sh).
func TestMonitoringNamesExported(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecars on file: and Redis")
	}
	exported := map[string]bool{}
	backendArgs := [][]string{{"--backend", "file:" + t.TempDir()}}
	redisURL := os.Getenv("PREPKEY_REDIS_URL")
	if redisURL != "" {
		backendArgs = append(backendArgs, []string{"--backend", redisURL, "--redis-key-prefix", uniqueNS(t) + ":"})
	}
	for _, args := range backendArgs {
		for name := range scrapeNames(t, args...) {
			exported[name] = true
		}
	}

	queries := dashboardQueries(t)
	require.Greater(t, len(queries), 20)
	rules := alertExprs(t)
	require.Len(t, rules, 5)
	for _, src := range []struct {
		what  string
		exprs []string
	}{{"grafana-dashboard.json", queries}, {"alerts.yaml", rules}} {
		for _, e := range src.exprs {
			names := metricNames(e)
			require.NotEmpty(t, names, "%s: %s names no metric", src.what, e)
			for _, n := range names {
				switch {
				case exported[n]:
				case redisURL == "" && strings.HasPrefix(n, "prepkey_redis_"):
					t.Logf("%s: %s not checked (no Redis test server: PREPKEY_REDIS_URL)", src.what, n)
				default:
					t.Errorf("%s: %q names %s, which the sidecar does not export", src.what, e, n)
				}
			}
		}
	}
}

// scrapeNames runs a sidecar with args and an admin port, sends it a few
// commands of every kind, and returns the metric names of its /metrics
// (histograms' with their _bucket, _sum and _count).
func scrapeNames(t *testing.T, args ...string) map[string]bool {
	s := start(t, append(args, "--admin-listen", "127.0.0.1:0")...)
	m := adminRE.FindStringSubmatch(s.logs())
	require.NotNil(t, m, s.logs())
	c := s.client(t, 2)
	ns := uniqueNS(t)
	check(t, c, int64(1), "PK.PREPARE", ns, "k", "v")
	check(t, c, "v", "PK.GET", ns, "k")
	check(t, c, int64(1), "PK.ROLLBACK", ns, "k")
	check(t, c, "PONG", "PING")
	_ = c.Do(ctx(), "NOSUCH").Err()
	resp, err := http.Get("http://" + m[1] + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		names[line[:strings.IndexAny(line, "{ ")]] = true
	}
	return names
}

// metricRE finds the metric names of a PromQL expression: the sidecar's
// names start with prepkey_, process_ or go_. Quoted strings (label
// values, regexps) are removed first.
var (
	metricRE = regexp.MustCompile(`\b(?:prepkey|process|go)_[a-zA-Z0-9_:]*`)
	quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

func metricNames(expr string) []string {
	names := metricRE.FindAllString(quotedRE.ReplaceAllString(expr, `""`), -1)
	slices.Sort(names)
	return slices.Compact(names)
}

// dashboardQueries are the PromQL expressions of the dashboard: every
// panel's targets (rows' panels too) and the template variables' queries.
func dashboardQueries(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join(monitoringDir, "grafana-dashboard.json"))
	require.NoError(t, err)
	type panel struct {
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Title      string            `json:"title"`
		UID        string            `json:"uid"`
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(b, &d))
	require.NotEmpty(t, d.UID)
	var exprs []string
	var walk func(raw []json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			require.NoError(t, json.Unmarshal(r, &p))
			if p.Type != "row" {
				require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, "panel %q", p.Title)
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		s, _ := q["query"].(string)
		require.NotEmpty(t, s, "template variable %s", v.Name)
		exprs = append(exprs, s)
	}
	return exprs
}

// alertExprs are the expressions of the alert rules.
func alertExprs(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join(monitoringDir, "alerts.yaml"))
	require.NoError(t, err)
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(b, &f))
	var exprs []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Expr, r.Alert)
			exprs = append(exprs, r.Expr)
		}
	}
	return exprs
}

// TestMonitoringPromtool: Prometheus's own tool accepts the alert rules
// (promtool check rules), their unit tests pass (promtool test rules
// alerts_test.yaml: each alert fires on the series that should fire it
// and only those), and every dashboard query parses as PromQL (checked as
// recording rules, Grafana's $variables replaced by values).
// promtool is in Debian's prometheus package (scripts/deps.sh installs it).
func TestMonitoringPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is not on PATH (apt-get install prometheus; scripts/deps.sh)")
		}
		t.Skip("promtool is not on PATH (apt-get install prometheus)")
	}
	run := func(args ...string) {
		t.Helper()
		out, err := exec.Command(promtool, args...).CombinedOutput()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	}
	run("check", "rules", filepath.Join(monitoringDir, "alerts.yaml"))
	cmd := exec.Command(promtool, "test", "rules", "alerts_test.yaml")
	cmd.Dir = monitoringDir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool test rules:\n%s", out)
	require.Contains(t, string(out), "SUCCESS")

	grafana := strings.NewReplacer("$__rate_interval", "5m", "$__range", "1h", "$instance", ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range dashboardQueries(t) {
		if strings.HasPrefix(q, "label_values(") {
			continue // Grafana's, not PromQL
		}
		js, _ := json.Marshal(grafana.Replace(q)) // a JSON string is a YAML string
		fmt.Fprintf(&rules, "      - record: dashboard_query_%d\n        expr: %s\n", i, js)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	require.NoError(t, os.WriteFile(path, []byte(rules.String()), 0o600))
	run("check", "rules", path)
}
