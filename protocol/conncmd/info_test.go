package conncmd

import (
	"context"
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/protocol/resp"
	"github.com/prepkey/prepkey/protocol/stats"
)

// fakeConn is a connection for the handlers, without a socket.
type fakeConn struct {
	out    resp.Writer
	authed bool
	quit   bool
	cl     Client
}

func (c *fakeConn) Out() *resp.Writer     { return &c.out }
func (c *fakeConn) Authed() bool          { return c.authed }
func (c *fakeConn) Authenticate()         { c.authed = true }
func (c *fakeConn) Client() Client        { return c.cl }
func (c *fakeConn) SetMeta(f func(*Meta)) { f(&c.cl.Meta) }
func (c *fakeConn) Quit()                 { c.quit = true }

// fakeServer is a server for the handlers; it counts the backend's pings.
type fakeServer struct {
	info  ServerInfo
	peers []Peer
	pings int
	down  error
}

func (s *fakeServer) Clients() []Peer  { return s.peers }
func (s *fakeServer) Info() ServerInfo { return s.info }
func (s *fakeServer) PingBackend(context.Context) error {
	s.pings++
	return s.down
}

func TestInfoText(t *testing.T) {
	f := infoFacts{
		ServerInfo: ServerInfo{Stats: stats.Snapshot{
			ConnectedClients: 3, MaxClients: 100, TxQueuedBytes: 64, MaxTxMemory: 1 << 20,
			ConnectionsTotal: 9, RejectedTotal: 1, CommandsProcessed: 42,
			Commands: []stats.CommandStats{
				{Name: "ping", Outcomes: [stats.NumOutcomes]uint64{stats.OutcomeOK: 4}, Latency: stats.Hist{Sum: 10_000}},
				{Name: "pk.get", Outcomes: [stats.NumOutcomes]uint64{stats.OutcomeOK: 2, stats.OutcomeError: 1, stats.OutcomeUnavailable: 1}, Latency: stats.Hist{Sum: 9_000}},
				{Name: "echo"},
				{Name: "unknown", Outcomes: [stats.NumOutcomes]uint64{stats.OutcomeError: 5}},
			},
			Errors:  map[string]uint64{"UNAVAILABLE": 1, "ERR": 6},
			Uptime:  3*24*time.Hour + time.Second,
			Backend: "memory", Version: "1.2.3",
			ClientsMemory: 2048, MaxClientsMemory: 1 << 29, EvictedClients: 2,
		}, Listen: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6380}},
		runID: "r1", pid: 77, heap: 1000, rss: 4096, cpuUser: 1.5, cpuSys: 0.25,
		backendErr: errors.New("down\r\nfor now"),
	}
	server := "# Server\r\nredis_version:7.2.0\r\nprepkey_version:1.2.3\r\nredis_mode:standalone\r\nos:" + runtime.GOOS +
		"\r\narch_bits:64\r\nprocess_id:77\r\nrun_id:r1\r\ntcp_port:6380\r\nuptime_in_seconds:259201\r\nuptime_in_days:3\r\n"
	require.Equal(t, server, infoText(askedSections(argv("info", "SERVER")), f))
	require.Equal(t, "# Commandstats\r\n"+
		"cmdstat_ping:calls=4,usec=10,usec_per_call=2.50,rejected_calls=0,failed_calls=0\r\n"+
		"cmdstat_pk.get:calls=3,usec=9,usec_per_call=3.00,rejected_calls=1,failed_calls=1\r\n"+
		"\r\n# Backend\r\nbackend:memory\r\nbackend_ready:0\r\nbackend_error:down  for now\r\n",
		infoText(askedSections(argv("info", "commandstats", "backend")), f))

	rest := "\r\n# Clients\r\nconnected_clients:3\r\nmaxclients:100\r\nblocked_clients:0\r\ntx_queued_bytes:64\r\nmax_tx_memory:1048576\r\n" +
		"\r\n# Memory\r\nused_memory:1000\r\nused_memory_rss:4096\r\nmem_clients_normal:2048\r\nmaxmemory_clients:536870912\r\n" +
		"\r\n# Persistence\r\nloading:0\r\n" +
		"\r\n# Stats\r\ntotal_connections_received:9\r\ntotal_commands_processed:42\r\nrejected_connections:1\r\nevicted_clients:2\r\ntotal_error_replies:7\r\n" +
		"\r\n# Replication\r\nrole:master\r\nconnected_slaves:0\r\n" +
		"\r\n# CPU\r\nused_cpu_sys:0.250000\r\nused_cpu_user:1.500000\r\n"
	tail := "\r\n# Errorstats\r\nerrorstat_ERR:count=6\r\nerrorstat_UNAVAILABLE:count=1\r\n" +
		"\r\n# Backend\r\nbackend:memory\r\nbackend_ready:0\r\nbackend_error:down  for now\r\n" +
		"\r\n# Keyspace\r\n"
	byDefault := server + rest + tail
	require.Equal(t, byDefault, infoText(askedSections(argv("info")), f))
	require.Equal(t, byDefault, infoText(askedSections(argv("info", "default")), f))
	all := server + rest + "\r\n# Commandstats\r\n" +
		"cmdstat_ping:calls=4,usec=10,usec_per_call=2.50,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_pk.get:calls=3,usec=9,usec_per_call=3.00,rejected_calls=1,failed_calls=1\r\n" + tail
	require.Equal(t, all, infoText(askedSections(argv("info", "all")), f))
	require.Equal(t, all, infoText(askedSections(argv("info", "everything")), f))
	require.Equal(t, "", infoText(askedSections(argv("info", "nosuchsection")), f))

	f.backendErr = nil
	require.Equal(t, "# Backend\r\nbackend:memory\r\nbackend_ready:1\r\n", infoText(askedSections(argv("info", "backend")), f))
}

// TestInfoPingsOnlyForBackend: the backend's ping, which may wait on it, is
// sent only when the Backend section is shown.
func TestInfoPingsOnlyForBackend(t *testing.T) {
	srv := &fakeServer{}
	tb := New(srv, "", nil)
	for _, tc := range []struct {
		args  []string
		pings int
	}{
		{[]string{"info", "server", "clients"}, 0},
		{[]string{"info", "commandstats"}, 0},
		{[]string{"info"}, 1},
		{[]string{"info", "Backend"}, 1},
		{[]string{"info", "all"}, 1},
	} {
		srv.pings = 0
		var c fakeConn
		tb.info(&c, argv(tc.args...))
		require.Equal(t, tc.pings, srv.pings, tc.args)
	}
}

func TestTCPPort(t *testing.T) {
	require.Equal(t, "0", tcpPort(nil))
	require.Equal(t, "6379", tcpPort(&net.TCPAddr{IP: net.IPv6loopback, Port: 6379}))
	require.Equal(t, "0", tcpPort(&net.UnixAddr{Name: "/run/p:1.sock", Net: "unix"}))
}
