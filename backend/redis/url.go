package redis

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Topology is how the Redis behind a URL is deployed; it decides where a
// key change can run as one script.
type Topology uint8

const (
	// Standalone is one Redis server (redis://, rediss://).
	Standalone Topology = iota
	// Sentinel is a master found through Sentinel (redis+sentinel://).
	Sentinel
	// Cluster is a Redis Cluster (redis+cluster://).
	Cluster
)

func (t Topology) String() string {
	switch t {
	case Sentinel:
		return "sentinel"
	case Cluster:
		return "cluster"
	default:
		return "standalone"
	}
}

// Schemes returns the URL schemes Open accepts, for the one place that
// dispatches --backend URLs to stores.
func Schemes() []string {
	return []string{"redis", "rediss", "redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster"}
}

// target is a parsed backend URL.
type target struct {
	topology Topology
	tls      *tls.Config
	addrs    []string
	username string
	password string
	db       int
	// master is the Sentinel master name.
	master string
	// sentinelUsername and sentinelPassword authenticate to the Sentinels
	// themselves, which often have no password when the master has one.
	sentinelUsername string
	sentinelPassword string
	// wait is how many replicas must acknowledge a batch's writes (Redis
	// WAIT) before they are answered; 0 answers them as the master ran
	// them. waitTimeout bounds that wait; 0 means the backend timeout.
	wait        int
	waitTimeout time.Duration
	// layout is how records are kept (?layout=prepkey|wow).
	layout Layout
	// anyValues (?values=any, layout=wow only) stores values that are not
	// JSON, which a Wow service cannot read: for a keyspace that only
	// sidecar clients use.
	anyValues bool
}

// parseURL reads the backend URL. It is written by hand because net/url
// rejects the comma-separated host lists of Sentinel and Cluster URLs.
//
//	redis://[user:pass@]host[:port][/db]
//	rediss://…                                       (TLS)
//	redis+sentinel://[user:pass@]host[:port],…/master[/db][?sentinel_username=u&sentinel_password=p]
//	redis+cluster://[user:pass@]host[:port],…
//
// redis:// and redis+sentinel:// (and their TLS forms) also take
// ?wait=N[&wait-timeout=D]: see docs/redis.md, Replication. Every form
// takes ?layout=prepkey|wow: see docs/redis.md, Wow layout.
func parseURL(raw string) (target, error) {
	var t target
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return t, fmt.Errorf("redis: invalid URL %q: no scheme", redact(raw))
	}
	defPort := "6379"
	switch strings.ToLower(scheme) {
	case "redis":
	case "rediss":
		t.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	case "redis+sentinel":
		t.topology, defPort = Sentinel, "26379"
	case "rediss+sentinel":
		t.topology, defPort = Sentinel, "26379"
		t.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	case "redis+cluster":
		t.topology = Cluster
	case "rediss+cluster":
		t.topology = Cluster
		t.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return t, fmt.Errorf("redis: invalid URL %q: unknown scheme %q", redact(raw), scheme)
	}

	rest, rawQuery, _ := strings.Cut(rest, "?")
	authority, path, _ := strings.Cut(rest, "/")
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		if err := t.setUserinfo(authority[:at]); err != nil {
			return t, fmt.Errorf("redis: invalid URL %q: %w", redact(raw), err)
		}
		authority = authority[at+1:]
	}
	for _, hp := range strings.Split(authority, ",") {
		addr, err := hostPort(hp, defPort)
		if err != nil {
			return t, fmt.Errorf("redis: invalid URL %q: %w", redact(raw), err)
		}
		t.addrs = append(t.addrs, addr)
	}
	if t.topology != Cluster && t.topology != Sentinel && len(t.addrs) != 1 {
		return t, fmt.Errorf("redis: invalid URL %q: one host expected (use redis+cluster:// or redis+sentinel:// for several)", redact(raw))
	}
	if err := t.setPath(path); err != nil {
		return t, fmt.Errorf("redis: invalid URL %q: %w", redact(raw), err)
	}
	if err := t.setQuery(rawQuery); err != nil {
		return t, fmt.Errorf("redis: invalid URL %q: %w", redact(raw), err)
	}
	// Unless tls-server-name sets it, the TLS server name stays empty: the
	// dialer takes it from each address, which matters when Sentinel or
	// Cluster hand out others.
	return t, nil
}

func (t *target) setUserinfo(ui string) error {
	user, pass, hasPass := strings.Cut(ui, ":")
	var err error
	if t.username, err = url.PathUnescape(user); err != nil {
		return fmt.Errorf("bad user name: %w", err)
	}
	if hasPass {
		if t.password, err = url.PathUnescape(pass); err != nil {
			return fmt.Errorf("bad password: %w", err)
		}
	}
	return nil
}

// setPath reads "/db" (standalone), "/master[/db]" (Sentinel) or nothing
// (Cluster, which has only database 0).
func (t *target) setPath(path string) error {
	parts := strings.Split(path, "/")
	if path == "" {
		parts = nil
	}
	if t.topology == Sentinel {
		if len(parts) == 0 || parts[0] == "" {
			return fmt.Errorf("the master name is missing (redis+sentinel://host:port,…/master)")
		}
		name, err := url.PathUnescape(parts[0])
		if err != nil {
			return fmt.Errorf("bad master name: %w", err)
		}
		t.master, parts = name, parts[1:]
	}
	switch {
	case len(parts) == 0 || (len(parts) == 1 && parts[0] == ""):
		return nil
	case len(parts) > 1:
		return fmt.Errorf("unexpected path %q", path)
	case t.topology == Cluster:
		return fmt.Errorf("a cluster has no database number")
	}
	db, err := strconv.Atoi(parts[0])
	if err != nil || db < 0 {
		return fmt.Errorf("bad database number %q", parts[0])
	}
	t.db = db
	return nil
}

func (t *target) setQuery(raw string) error {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return fmt.Errorf("bad query: %w", err)
	}
	for k := range q {
		switch {
		case t.topology == Sentinel && k == "sentinel_username":
			t.sentinelUsername = q.Get(k)
		case t.topology == Sentinel && k == "sentinel_password":
			t.sentinelPassword = q.Get(k)
		case t.topology != Cluster && k == "wait":
			n, err := strconv.Atoi(q.Get(k))
			if err != nil || n < 0 || n > maxWait {
				return fmt.Errorf("wait=%q: want a number of replicas from 0 to %d", q.Get(k), maxWait)
			}
			t.wait = n
		case t.topology != Cluster && k == "wait-timeout":
			d, err := time.ParseDuration(q.Get(k))
			if err != nil || d <= 0 {
				return fmt.Errorf("wait-timeout=%q: want a positive duration such as 500ms or 2s", q.Get(k))
			}
			t.waitTimeout = d
		case k == "layout":
			l, err := parseLayout(q.Get(k))
			if err != nil {
				return err
			}
			t.layout = l
		case strings.HasPrefix(k, "tls-"):
			if err := t.setTLS(k, q.Get(k)); err != nil {
				return err
			}
		case k == "values":
			switch q.Get(k) {
			case "json":
				t.anyValues = false
			case "any":
				t.anyValues = true
			default:
				return fmt.Errorf("values=%q: want json or any", q.Get(k))
			}
		case t.topology == Cluster && (k == "wait" || k == "wait-timeout"):
			return fmt.Errorf("%s is not supported on redis+cluster:// (a batch's writes go to several masters; see docs/redis.md)", k)
		default:
			return fmt.Errorf("unknown parameter %q", k)
		}
	}
	if t.waitTimeout != 0 && t.wait == 0 {
		return fmt.Errorf("wait-timeout without wait")
	}
	if t.anyValues && t.layout != LayoutWow {
		return fmt.Errorf("values=any applies only with layout=wow (the sidecar's own layout takes any bytes)")
	}
	return t.loadClientCert(q.Get("tls-cert-file"), q.Get("tls-key-file"))
}

// setTLS reads a TLS parameter, as redis-cli's --cacert, --sni (and, in
// loadClientCert, --cert and --key):
//
//	tls-ca-file=PATH      PEM certificates of the CAs that sign the servers'
//	                      (instead of the system's)
//	tls-server-name=NAME  the name the servers' certificates must carry
//	                      (instead of each address's host), also sent as SNI
//	tls-cert-file=PATH    the client certificate (mTLS: tls-auth-clients),
//	tls-key-file=PATH     and its key, both or neither
//
// The same settings apply to every node: the Sentinels and the master they
// name, a Cluster's nodes. The files are read once, at start.
func (t *target) setTLS(k, v string) error {
	if t.tls == nil {
		return fmt.Errorf("%s needs a TLS URL (rediss://, rediss+sentinel://, rediss+cluster://)", k)
	}
	if v == "" {
		return fmt.Errorf("%s is empty", k)
	}
	switch k {
	case "tls-ca-file":
		pem, err := os.ReadFile(v)
		if err != nil {
			return fmt.Errorf("tls-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("tls-ca-file: no PEM certificate in %s", v)
		}
		t.tls.RootCAs = pool
	case "tls-server-name":
		t.tls.ServerName = v
	case "tls-cert-file", "tls-key-file":
		// loadClientCert, once both are known.
	default:
		return fmt.Errorf("unknown parameter %q (TLS takes tls-ca-file, tls-cert-file, tls-key-file, tls-server-name)", k)
	}
	return nil
}

// loadClientCert loads the client certificate of mTLS, when one is given.
func (t *target) loadClientCert(certFile, keyFile string) error {
	switch {
	case certFile == "" && keyFile == "":
		return nil
	case certFile == "" || keyFile == "":
		return fmt.Errorf("tls-cert-file and tls-key-file go together: give both or neither")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("tls-cert-file, tls-key-file: %w", err)
	}
	t.tls.Certificates = []tls.Certificate{cert}
	return nil
}

// maxWait bounds wait=N: more replicas than any deployment has is a typo.
const maxWait = 100

// hostPort validates one host[:port] and adds the default port.
func hostPort(hp, defPort string) (string, error) {
	if hp == "" {
		return "", fmt.Errorf("empty host")
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		// No port: a bare host name or a bracketed IPv6 address. Only
		// those: "[::1" (no closing bracket) or "::1" (no brackets) was
		// once read as [::1]:6379, a guess at what was meant.
		host, port = hp, defPort
		if inner, ok := strings.CutPrefix(hp, "["); ok {
			if host, ok = strings.CutSuffix(inner, "]"); !ok {
				return "", fmt.Errorf("bad host %q: an IPv6 address is [addr] or [addr]:port", hp)
			}
		} else if strings.Contains(hp, ":") {
			return "", fmt.Errorf("bad host %q: want host:port, or [addr]:port for an IPv6 address", hp)
		}
	}
	if strings.HasPrefix(hp, "[") && !strings.Contains(host, ":") {
		return "", fmt.Errorf("bad host %q: not an IPv6 address in brackets", hp)
	}
	if host == "" || strings.ContainsAny(host, "[]/ #") {
		return "", fmt.Errorf("bad host %q", hp)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("bad port in %q", hp)
	}
	return net.JoinHostPort(host, port), nil
}

// redact hides the passwords of a URL in error messages.
func redact(raw string) string {
	if base, query, ok := strings.Cut(raw, "?"); ok && strings.Contains(strings.ToLower(query), "password") {
		raw = base + "?xxxxx"
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return raw
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return raw
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}
