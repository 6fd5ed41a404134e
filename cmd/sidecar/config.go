package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
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
	// maxClientsMemory is --max-clients-memory; clientsMemoryGiven says
	// whether it was given (else defaultClientsMemory; 0 given is off).
	maxClientsMemory   byteSize
	clientsMemoryGiven bool
	eventLoops         int
	idleTimeout        time.Duration
	logFormat          string
	logLevel           string
	adminListen        string
	adminMaxConns      int
	fileCacheMB        int
	checkOnly          bool
	pidFile            string
	showVersion        bool
	// Secrets read from files (--requirepass-file, --backend-file), and
	// --protected-mode: env.go, protect.go.
	requirePassFile string
	backendFile     string
	protectedMode   string
	// flagNames are the flags' names, for the warning about PK_*
	// variables that name none (env.go).
	flagNames []string
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
	c.retention, c.backendTimeout = 24*time.Hour, 2*time.Second
	fs.Var((*duration)(&c.retention), "expired-retention", "how long (a `duration`) an expired record is kept as evidence before it is deleted (0: at expiry)")
	fs.Var((*duration)(&c.backendTimeout), "backend-timeout", "bound on one backend call (a `duration`); past it the client gets -UNAVAILABLE")
	c.minFreeDisk = 64 << 20
	fs.Var(&c.minFreeDisk, "min-free-disk", "free space kept on the file: store's disk: below it writes get -UNAVAILABLE disk full, reads go on (a `size`: bytes, or with KB, MB, GB, KiB, MiB, GiB; 0: no reserve)")
	fs.StringVar(&c.redisKeyPrefix, "redis-key-prefix", "pk:", "prefix of every Redis key the sidecar writes (redis backends)")
	c.maxKeyBytes, c.maxValueBytes = 1024, 65536
	fs.Var((*intBytes)(&c.maxKeyBytes), "max-key-bytes", "largest key (a `size`: bytes, or with a unit as --min-free-disk)")
	fs.Var((*intBytes)(&c.maxValueBytes), "max-value-bytes", "largest value (a `size`: bytes, or with a unit as --min-free-disk)")
	fs.IntVar(&c.maxClients, "max-clients", 10000, "most client connections at once")
	// 64 MiB: eight connections at the per-transaction bound (8 MiB) at
	// once, or thousands with the few small commands transactions hold in
	// use. The heap grows past what is held (GOGC 400 off memory:): 300
	// connections queuing 7.5 MiB each peaked at 520 MB RSS on file: with
	// 64 MiB, 1.4 GB with 256 MiB (docs/benchmarks.md, N3).
	c.maxTxMemory = 64 << 20
	fs.Var(&c.maxTxMemory, "max-tx-memory", "most memory the queues of open transactions (MULTI) hold together, on all connections; a command queued past it gets -OOM and its transaction is discarded (a `size`: bytes, or with KB, MB, GB, KiB, MiB, GiB; 0: no bound but each transaction's own)")
	fs.Var(&c.maxClientsMemory, "max-clients-memory", "most memory all client connections hold together in buffers (unread replies, input not yet served); past it the connection holding the most is closed, as Redis's maxmemory-clients (a `size`: bytes, or with KB, MB, GB, KiB, MiB, GiB; 0: no bound but each connection's own; default: half of GOMEMLIMIT when set, else 512MiB)")
	fs.IntVar(&c.eventLoops, "event-loops", 1, "event loops (threads) serving client connections; as Redis, one serves most loads")
	fs.Var((*seconds)(&c.idleTimeout), "timeout", "close a client connection idle this long: a `duration` (300s, 5m) or, as Redis's timeout, a number of seconds (0: never)")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.IntVar(&c.fileCacheMB, "file-cache-mb", 8, "block cache of the file: store in MiB; the default suits a sidecar, raise it for stores of millions of records")
	fs.StringVar(&c.adminListen, "admin-listen", "", "`host:port` to serve HTTP on for operators: GET /metrics, /healthz, /readyz (empty: no HTTP port)")
	fs.IntVar(&c.adminMaxConns, "admin-max-clients", 64, "most connections the --admin-listen port serves at once; more wait to be accepted, so that probes cannot take the descriptors of RESP clients")
	fs.BoolVar(&c.checkOnly, "check", false, "check that the sidecar at --listen answers PING (with --requirepass), exit 0 if so, 1 if not: a container healthcheck (a flag only: PK_CHECK is ignored)")
	fs.StringVar(&c.requirePassFile, "requirepass-file", "", "`file` holding --requirepass (one trailing newline is dropped): a mounted secret")
	fs.StringVar(&c.backendFile, "backend-file", "", "`file` holding --backend, for a URL that carries a password: a mounted secret")
	fs.StringVar(&c.protectedMode, "protected-mode", "yes", "`yes|no`: yes refuses to listen on an address other than loopback without --requirepass, no allows it (as Redis's protected-mode)")
	fs.StringVar(&c.pidFile, "pidfile", "", "`path` of a file to write the sidecar's pid to, removed at exit; the sidecar refuses to start while it names another live process (empty: none)")
	fs.BoolVar(&c.showVersion, "version", false, "print the version, commit and Go version, and exit (also -v)")
	fs.BoolVar(&c.showVersion, "v", false, "print the version and exit")
	// The flag package prints the usage itself on -help and on every bad
	// flag: it is silenced, and printed here for -help only, once. A bad
	// flag is the one-line error run prints.
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(usage, "Usage: sidecar [flags]\n\nprepkey serves PK.* reservation commands over the Redis protocol.\nEvery flag but --check can also be set as PK_<NAME> in the environment (e.g. PK_MAX_KEY_BYTES); a flag wins.\n\nFlags:\n")
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
	fromEnv := map[string]bool{}
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		c.flagNames = append(c.flagNames, f.Name)
		name := envName(f.Name)
		v := getenv(name)
		// --check is a flag only: PK_CHECK=true in a container's
		// environment, meant for its healthcheck, would turn the server
		// itself into a one-shot probe. --version likewise.
		if given[f.Name] || v == "" || envErr != nil || f.Name == "check" || f.Name == "version" || f.Name == "v" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			envErr = fmt.Errorf("invalid value %q for %s: %v", v, name, err)
		}
		fromEnv[f.Name] = true
	})
	if envErr != nil {
		return c, envErr
	}
	if err := c.readSecretFiles(given, fromEnv); err != nil {
		return c, err
	}
	c.clientsMemoryGiven = given["max-clients-memory"] || getenv("PK_MAX_CLIENTS_MEMORY") != ""
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
		return fmt.Errorf("--timeout must not be negative, got %s", formatDuration(c.idleTimeout))
	case c.protectedMode != "yes" && c.protectedMode != "no":
		return fmt.Errorf("--protected-mode must be yes or no, got %q", c.protectedMode)
	case c.retention < 0:
		return fmt.Errorf("--expired-retention must not be negative, got %s", formatDuration(c.retention))
	case c.backendTimeout <= 0:
		return fmt.Errorf("--backend-timeout must be positive, got %s", formatDuration(c.backendTimeout))
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
