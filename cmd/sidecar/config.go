package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"
)

// config is everything the sidecar is told at start.
type config struct {
	listen         string
	backendURL     string
	requirePass    string
	retention      time.Duration
	backendTimeout time.Duration
	minFreeDisk    byteSize
	redisKeyPrefix string
	maxKeyBytes    int
	maxValueBytes  int
	maxClients     int
	maxTxMemory    byteSize
	eventLoops     int
	idleTimeout    int
	logFormat      string
	logLevel       string
	adminListen    string
	adminMaxConns  int
	fileCacheMB    int
	checkOnly      bool
	pidFile        string
	showVersion    bool
}

// errHelp is returned for --help, which is not a failure.
var errHelp = flag.ErrHelp

// parseConfig reads flags, then PK_<NAME> environment variables for every
// flag not given (a flag wins over the environment), then checks values.
// Every error is one line that names the problem.
func parseConfig(args []string, getenv func(string) string, usage io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("sidecar", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.listen, "listen", defaultListen, "`address` to serve RESP on: host:port, unix:/path/to.sock, or an inherited listening socket: fd:N, fd:auto (systemd's LISTEN_FDS; on wasip1 the first preopened socket)")
	fs.StringVar(&c.backendURL, "backend", "file:./prepkey-data", "`URL` of the store that keeps reservations: memory:, file:DIR, redis://…, rediss://…, redis+sentinel://…, redis+cluster://…, mongodb://…, mongodb+srv://…")
	fs.StringVar(&c.requirePass, "requirepass", "", "`password` clients must give with AUTH (empty: no AUTH)")
	fs.DurationVar(&c.retention, "expired-retention", 24*time.Hour, "how long an expired record is kept as evidence before it is deleted (0: at expiry)")
	fs.DurationVar(&c.backendTimeout, "backend-timeout", 2*time.Second, "bound on one backend call; past it the client gets -UNAVAILABLE")
	c.minFreeDisk = 64 << 20
	fs.Var(&c.minFreeDisk, "min-free-disk", "free space kept on the file: store's disk: below it writes get -UNAVAILABLE disk full, reads go on (bytes, or with KB, MB, GB, KiB, MiB, GiB; 0: no reserve)")
	fs.StringVar(&c.redisKeyPrefix, "redis-key-prefix", "pk:", "prefix of every Redis key the sidecar writes (redis backends)")
	fs.IntVar(&c.maxKeyBytes, "max-key-bytes", 1024, "largest key in bytes")
	fs.IntVar(&c.maxValueBytes, "max-value-bytes", 65536, "largest value in bytes")
	fs.IntVar(&c.maxClients, "max-clients", 10000, "most client connections at once")
	// 64 MiB: eight connections at the per-transaction bound (8 MiB) at
	// once, or thousands with the few small commands transactions hold in
	// use. The heap grows past what is held (GOGC 400 off memory:): 300
	// connections queuing 7.5 MiB each peaked at 520 MB RSS on file: with
	// 64 MiB, 1.4 GB with 256 MiB (docs/benchmarks.md, N3).
	c.maxTxMemory = 64 << 20
	fs.Var(&c.maxTxMemory, "max-tx-memory", "most memory the queues of open transactions (MULTI) hold together, on all connections; a command queued past it gets -OOM and its transaction is discarded (bytes, or with KB, MB, GB, KiB, MiB, GiB; 0: no bound but each transaction's own)")
	fs.IntVar(&c.eventLoops, "event-loops", 1, "event loops (threads) serving client connections; as Redis, one serves most loads")
	fs.IntVar(&c.idleTimeout, "timeout", 0, "close a client connection idle this many `seconds` (0: never), as Redis's timeout")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.IntVar(&c.fileCacheMB, "file-cache-mb", 8, "block cache of the file: store in MiB; the default suits a sidecar, raise it for stores of millions of records")
	fs.StringVar(&c.adminListen, "admin-listen", "", "`host:port` to serve HTTP on for operators: GET /metrics, /healthz, /readyz (empty: no HTTP port)")
	fs.IntVar(&c.adminMaxConns, "admin-max-clients", 64, "most connections the --admin-listen port serves at once; more wait to be accepted, so that probes cannot take the descriptors of RESP clients")
	fs.StringVar(&c.pidFile, "pidfile", "", "`path` of a file to write the sidecar's pid to, removed at exit; the sidecar refuses to start while it names another live process (empty: none)")
	fs.BoolVar(&c.showVersion, "version", false, "print the version, commit and Go version, and exit (also -v)")
	fs.BoolVar(&c.showVersion, "v", false, "print the version and exit")
	fs.BoolVar(&c.checkOnly, "check", false, "check that the sidecar at --listen answers PING (with --requirepass), exit 0 if so, 1 if not: a container healthcheck")
	// The flag package prints the usage itself on -help and on every bad
	// flag: it is silenced, and printed here for -help only, once. A bad
	// flag is the one-line error run prints.
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(usage, "Usage: sidecar [flags]\n\nprepkey serves PK.* reservation commands over the Redis protocol.\nEvery flag can also be set as PK_<NAME> in the environment (e.g. PK_MAX_KEY_BYTES); a flag wins.\n\nFlags:\n")
			fs.SetOutput(usage)
			fs.PrintDefaults()
			return c, errHelp
		}
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.showVersion {
		return c, nil // before the environment: its values do not matter
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := "PK_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v := getenv(name)
		if given[f.Name] || v == "" || envErr != nil || f.Name == "version" || f.Name == "v" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			envErr = fmt.Errorf("invalid value %q for %s: %v", v, name, err)
		}
	})
	if envErr != nil {
		return c, envErr
	}
	return c, c.check()
}

func (c config) check() error {
	switch {
	case c.maxKeyBytes < 1:
		return fmt.Errorf("--max-key-bytes must be at least 1, got %d", c.maxKeyBytes)
	case c.maxValueBytes < 0:
		return fmt.Errorf("--max-value-bytes must not be negative, got %d", c.maxValueBytes)
	case c.fileCacheMB < 1:
		return fmt.Errorf("--file-cache-mb must be at least 1, got %d", c.fileCacheMB)
	case c.maxClients < 1:
		return fmt.Errorf("--max-clients must be at least 1, got %d", c.maxClients)
	case c.adminMaxConns < 1:
		return fmt.Errorf("--admin-max-clients must be at least 1, got %d", c.adminMaxConns)
	case c.eventLoops < 1 || c.eventLoops > 256:
		return fmt.Errorf("--event-loops must be between 1 and 256, got %d", c.eventLoops)
	case c.idleTimeout < 0:
		return fmt.Errorf("--timeout must not be negative, got %d", c.idleTimeout)
	case c.retention < 0:
		return fmt.Errorf("--expired-retention must not be negative, got %s", c.retention)
	case c.backendTimeout <= 0:
		return fmt.Errorf("--backend-timeout must be positive, got %s", c.backendTimeout)
	case c.logFormat != "text" && c.logFormat != "json":
		return fmt.Errorf("--log-format must be text or json, got %q", c.logFormat)
	case c.listen == "" || c.listen == "unix:":
		return errors.New("--listen must name an address")
	case c.adminListen != "" && c.adminListen == c.listen && !strings.HasSuffix(c.listen, ":0"):
		return errors.New("--admin-listen must differ from --listen: the RESP port never serves HTTP")
	}
	if _, err := c.level(); err != nil {
		return err
	}
	return nil
}

func (c config) level() (slog.Level, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		return lvl, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", c.logLevel)
	}
	return lvl, nil
}

// byteSize is a flag of bytes: a number, optionally followed by a unit
// (B, KB, MB, GB, TB in powers of 1000; KiB, MiB, GiB, TiB in powers of
// 1024; case-insensitive).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return fmt.Errorf("want bytes, e.g. 64MiB, got %q", s)
	}
	mult := map[string]int64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}[unit]
	if mult == 0 {
		return fmt.Errorf("unknown unit %q in %q (want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", unit, s)
	}
	if n > math.MaxInt64/mult {
		return fmt.Errorf("%q is too large", s)
	}
	*b = byteSize(n * mult)
	return nil
}
