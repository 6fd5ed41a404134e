package e2e

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"
)

// The linearizability checks: clients race PK commands over a few keys
// through the sidecar, the history of calls and replies is recorded, and
// porcupine decides whether one order of atomic commands explains it (the
// model is in lin_model_test.go). Faults are injected in the middle of a
// history; a command they cut has an unknown outcome.
//
// PK_LIN_SEED=n replays the histories of a run (each test prints its seed);
// PK_LIN_LONG=1 (make test-long) runs longer histories, more of them.

// linConfig shapes one history.
type linConfig struct {
	clients, keys, ops int
	moves              bool    // key changes in the mix
	blocks             bool    // MULTI … EXEC blocks in the mix (atomic backends)
	composed           bool    // key changes are composed (split for the check)
	cut                float64 // share of commands whose connection the client cuts before the reply
	// owners, when set, is how many clients change existing records: key k
	// is updated and deleted (REPREPARE, ROLLBACK, key changes) only by
	// client k%owners, the others PREPARE and read. For a backend whose
	// updates of an existing record are not atomic (FerretDB).
	owners  int
	timeout time.Duration
}

// linSeed is the run's seed: PK_LIN_SEED, or a new one, printed either way.
func linSeed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv("PK_LIN_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "PK_LIN_SEED")
		t.Logf("seed %d (from PK_LIN_SEED)", n)
		return n
	}
	n := uint64(time.Now().UnixNano())
	t.Logf("seed %d (replay: PK_LIN_SEED=%d go test -run '%s' ./cmd/sidecar/)", n, n, t.Name())
	return n
}

func linLong() bool { return os.Getenv("PK_LIN_LONG") != "" }

// linRounds is how many histories a test checks: more with PK_LIN_LONG.
func linRounds(short, long int) int {
	if linLong() {
		return long
	}
	return short
}

// linHarness records one history against the sidecar at addr.
type linHarness struct {
	t    *testing.T
	cfg  linConfig
	ns   string
	keys []string
	t0   time.Time
	addr atomic.Pointer[string]

	next     atomic.Int64 // op indexes handed out
	values   atomic.Int64 // unique values
	clientID atomic.Int64 // porcupine client ids: a new one after an unknown outcome
	unknowns atomic.Int64

	mu      sync.Mutex
	ops     []porcupine.Operation
	healthy chan struct{} // closed while no fault is under way
	faults  map[int64]linFault
	outDir  string // where a failed check writes; empty: linOutputDir
	// horizons are times (since t0) after which no command called before
	// them can take effect: the process that could run it is dead (a
	// killed sidecar with an embedded store).
	horizons []int64
}

// horizon records that no command called so far can take effect from now
// on: call it once the process that runs commands is dead.
func (h *linHarness) horizon() {
	h.mu.Lock()
	h.horizons = append(h.horizons, time.Since(h.t0).Nanoseconds())
	h.mu.Unlock()
}

// writes reports whether in may change a record.
func (in linIn) writes() bool {
	switch in.Kind {
	case linGet, linGetValue:
		return false
	case linExec:
		return slices.ContainsFunc(in.Block, linIn.writes)
	}
	return true
}

// linFault is injected by the client that draws op index at.
type linFault struct {
	name string
	at   int
	run  func(h *linHarness)
}

func newLinHarness(t *testing.T, addr string, cfg linConfig, faults ...linFault) *linHarness {
	h := &linHarness{t: t, cfg: cfg, ns: fmt.Sprintf("lin%d", time.Now().UnixNano()), healthy: make(chan struct{}), faults: map[int64]linFault{}}
	close(h.healthy)
	for i := range cfg.keys {
		h.keys = append(h.keys, fmt.Sprintf("k%d", i))
	}
	h.setAddr(addr)
	for _, f := range faults {
		h.faults[int64(f.at)] = f
	}
	if h.cfg.timeout == 0 {
		h.cfg.timeout = 10 * time.Second
	}
	return h
}

func (h *linHarness) setAddr(a string) { h.addr.Store(&a) }

// waitUnknown waits until a command had an unknown outcome after from: the
// fault has been felt.
func (h *linHarness) waitUnknown(from int64) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for h.unknowns.Load() <= from {
		if time.Now().After(deadline) {
			h.t.Errorf("no command met the fault within 30s")
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// fault runs f, holding back clients that meet it until it is over.
func (h *linHarness) fault(f linFault) {
	h.t.Logf("fault at op %d: %s", f.at, f.name)
	h.mu.Lock()
	h.healthy = make(chan struct{})
	h.mu.Unlock()
	f.run(h)
	h.mu.Lock()
	close(h.healthy)
	h.mu.Unlock()
}

// run records a history, checks it, and on failure writes porcupine's
// visualization and fails the test with its path.
func (h *linHarness) run(seed uint64) {
	h.t.Helper()
	h.record(seed)
	if res, path := h.verdict(); res != porcupine.Ok {
		h.t.Errorf("history is not linearizable (%s); visualization: %s", res, path)
	}
}

// record runs the clients until the history has its commands.
func (h *linHarness) record(seed uint64) {
	h.t0 = time.Now()
	var wg sync.WaitGroup
	for c := range h.cfg.clients {
		wg.Go(func() { h.client(c, rand.New(rand.NewPCG(seed, uint64(c)))) })
	}
	wg.Wait()
}

// verdict checks the history; when it is not linearizable (or the check
// did not finish) it writes porcupine's visualization and returns its path.
func (h *linHarness) verdict() (porcupine.CheckResult, string) {
	t := h.t
	t.Helper()
	end := time.Since(h.t0).Nanoseconds() + 1
	history := make([]porcupine.Operation, 0, len(h.ops))
	unknown := 0
	for _, op := range h.ops {
		if op.Output.(linOut).Unknown {
			unknown++
			if !op.Input.(linIn).writes() {
				continue // a read whose reply is unknown constrains nothing
			}
			// it may take effect at any point up to the end, or up to the
			// first horizon after its call
			op.Return = end
			for _, hz := range h.horizons {
				if hz >= op.Call {
					op.Return = hz
					break
				}
			}
		}
		history = append(history, op)
	}
	partition := h.cfg.composed || !h.cfg.moves
	if h.cfg.composed {
		history = splitMoves(history)
	}
	model := linModel(h.keys, partition)
	began := time.Now()
	limit := time.Minute
	if linLong() {
		limit = 10 * time.Minute
	}
	res, info := porcupine.CheckOperationsVerbose(model, history, limit)
	t.Logf("%d commands (%d with unknown outcome) from %d clients over %d keys: %s in %v",
		len(h.ops), unknown, h.cfg.clients, len(h.keys), res, time.Since(began).Round(time.Millisecond))
	if res == porcupine.Ok {
		return res, ""
	}
	if partition { // name the keys whose own history fails
		for _, part := range model.Partition(history) {
			if porcupine.CheckOperationsTimeout(linModel(h.keys, false), part, 10*time.Second) != porcupine.Ok {
				t.Logf("the history of key %s is not linearizable", h.keys[part[0].Input.(linIn).Key])
			}
		}
	}
	dir := h.outDir
	if dir == "" {
		dir = linOutputDir(t)
	}
	path := filepath.Join(dir, "linearizability.html")
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		t.Errorf("writing the visualization: %v", err)
	}
	// and the history as text, one command a line in call order, for grep
	sorted := slices.Clone(history)
	slices.SortStableFunc(sorted, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	var txt strings.Builder
	for _, op := range sorted {
		fmt.Fprintf(&txt, "%12d %12d c%-3d %s\n", op.Call, op.Return, op.ClientId, describeLin(h.keys, op.Input.(linIn), op.Output.(linOut)))
	}
	if err := os.WriteFile(filepath.Join(dir, "history.txt"), []byte(txt.String()), 0o644); err != nil {
		t.Errorf("writing the history: %v", err)
	}
	// and as JSON, for PK_LIN_RECHECK (TestLinearizableRecheck)
	saved := linSaved{Keys: h.keys, Partition: partition}
	for _, op := range history {
		saved.Ops = append(saved.Ops, linSavedOp{op.ClientId, op.Call, op.Return, op.Input.(linIn), op.Output.(linOut)})
	}
	if b, err := json.Marshal(saved); err != nil || os.WriteFile(filepath.Join(dir, "history.json"), b, 0o644) != nil {
		t.Errorf("writing history.json: %v", err)
	}
	return res, path
}

// linSaved is a checked history as history.json keeps it.
type linSaved struct {
	Keys      []string
	Partition bool
	Ops       []linSavedOp
}

type linSavedOp struct {
	Client       int
	Call, Return int64
	In           linIn
	Out          linOut
}

// TestLinearizableRecheck checks a history.json written by a failed check
// again, with a longer time limit: PK_LIN_RECHECK=path/history.json.
func TestLinearizableRecheck(t *testing.T) {
	path := os.Getenv("PK_LIN_RECHECK")
	if path == "" {
		t.Skip("PK_LIN_RECHECK is unset")
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var saved linSaved
	require.NoError(t, json.Unmarshal(b, &saved))
	var history []porcupine.Operation
	for _, op := range saved.Ops {
		history = append(history, porcupine.Operation{ClientId: op.Client, Call: op.Call, Return: op.Return, Input: op.In, Output: op.Out})
	}
	began := time.Now()
	res := porcupine.CheckOperationsTimeout(linModel(saved.Keys, saved.Partition), history, 30*time.Minute)
	t.Logf("%s in %v", res, time.Since(began))
}

// linOutputDir is the test's output directory: go test -artifacts keeps it
// (under -outputdir); without that flag a directory under TMPDIR that is
// not removed, so the file can be opened after the run.
func linOutputDir(t *testing.T) string {
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		return t.ArtifactDir()
	}
	dir, err := os.MkdirTemp("", "prepkey-lin-"+strings.ReplaceAll(t.Name(), "/", "_")+"-")
	require.NoError(t, err)
	return dir
}

// client runs commands until the history has its ops.
func (h *linHarness) client(c int, rng *rand.Rand) {
	id := int(h.clientID.Add(1) - 1)
	var lc *linConn
	defer func() {
		if lc != nil {
			lc.nc.Close()
		}
	}()
	known := map[int]string{} // the last value seen for each key
	for {
		i := h.next.Add(1) - 1
		if i >= int64(h.cfg.ops) {
			return
		}
		if f, ok := h.faults[i]; ok {
			h.fault(f)
			continue
		}
		if lc == nil {
			lc = h.dial()
			if lc == nil {
				return
			}
		}
		in, args := h.pick(c, rng, known)
		call := time.Since(h.t0).Nanoseconds()
		out, ok := lc.do(args, in, h.cfg.timeout, rng.Float64() < h.cfg.cut)
		ret := time.Since(h.t0).Nanoseconds()
		if !ok { // the connection is gone
			lc.nc.Close()
			lc = nil
		}
		h.mu.Lock()
		h.ops = append(h.ops, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
		h.mu.Unlock()
		learn(known, in, out)
		if out.Unknown {
			h.unknowns.Add(1)
			// A new client id: this one's command is still open.
			id = int(h.clientID.Add(1) - 1)
			h.mu.Lock()
			healthy := h.healthy
			h.mu.Unlock()
			<-healthy
			if lc == nil {
				lc = h.dial()
				if lc == nil {
					return
				}
			}
			if !h.probe(lc) {
				return
			}
		}
	}
}

// learn keeps what a client knows of each key's value, for IFEQ.
func learn(known map[int]string, in linIn, out linOut) {
	switch {
	case in.Kind == linExec && len(out.Block) == len(in.Block):
		for i, sub := range in.Block {
			learn(known, sub, out.Block[i])
		}
	case out.Unknown || out.Err != "":
	case (in.Kind == linGet || in.Kind == linGetValue) && !out.Nil:
		known[in.Key] = out.Value
	case (in.Kind == linPrepare || in.Kind == linReprepare || in.Kind == linMove) && out.Int == 1:
		known[in.Key] = in.Value
	case in.Kind == linMPrepare && out.Int == 1:
		for i, k := range in.Keys {
			known[k] = in.Values[i]
		}
	}
}

// dial connects to the sidecar, waiting while it restarts.
func (h *linHarness) dial() *linConn {
	deadline := time.Now().Add(30 * time.Second)
	for {
		nc, err := net.DialTimeout("tcp", *h.addr.Load(), time.Second)
		if err == nil {
			return &linConn{nc: nc, rd: bufio.NewReader(nc)}
		}
		if time.Now().After(deadline) {
			h.t.Errorf("the sidecar did not accept connections within 30s: %v", err)
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// probe waits until the backend answers again (a read of a key outside the
// history), so a client meets each fault about once instead of filling
// the history with commands of unknown outcome.
func (h *linHarness) probe(lc *linConn) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, ok := lc.do([]string{"PK.GET", h.ns + "probe", "p"}, linIn{Kind: linGet}, h.cfg.timeout, false)
		if ok && !out.Unknown && out.Err == "" {
			return true
		}
		if !ok {
			lc.nc.Close()
			if n := h.dial(); n != nil {
				*lc = *n
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Errorf("the backend did not answer within 30s after a fault")
	return false
}

// farTTL is a PXAT time far beyond any history: no record expires while
// the checks run, and the ttlAt that PK.GETVALUE answers is known exactly.
func farTTL(rng *rand.Rand) int64 {
	return time.Now().Add(30*24*time.Hour).UnixMilli() + rng.Int64N(1_000_000)
}

// pick draws a command: a mix of writes that conflict (a few keys, values
// clients have seen) and reads that observe them.
func (h *linHarness) pick(c int, rng *rand.Rand, known map[int]string) (linIn, []string) {
	if h.cfg.blocks && rng.IntN(10) == 0 {
		// MULTI, 2 to 4 commands, EXEC: sent as one pipeline
		in := linIn{Kind: linExec}
		args := []string{"MULTI"}
		for range 2 + rng.IntN(3) {
			sub, subArgs := h.pickOne(c, rng, known)
			in.Block = append(in.Block, sub)
			args = append(args, "\x00")
			args = append(args, subArgs...)
		}
		return in, append(args, "\x00", "EXEC")
	}
	return h.pickOne(c, rng, known)
}

// pickOne draws one PK command.
func (h *linHarness) pickOne(c int, rng *rand.Rand, known map[int]string) (linIn, []string) {
	key := rng.IntN(len(h.keys))
	r := rng.IntN(100)
	if !h.cfg.moves && r >= 90 {
		r = rng.IntN(90)
	}
	if o := h.cfg.owners; o > 0 {
		switch {
		case c >= o: // PREPARE and reads only
			r = rng.IntN(55)
		case r >= 90 && (len(h.keys)-c+o-1)/o < 2: // no two keys of its own
			r = rng.IntN(90)
		}
		if r >= 55 { // a change of an existing record: the owner's keys
			key = c + o*rng.IntN((len(h.keys)-c+o-1)/o)
		}
	}
	value := fmt.Sprintf("v%d", h.values.Add(1))
	cond := func(k int) string {
		if v, ok := known[k]; ok && rng.IntN(4) > 0 {
			return v
		}
		return fmt.Sprintf("v%d", 1+rng.Int64N(h.values.Load()))
	}
	ttl := func(in *linIn, args []string, keep bool) []string {
		switch r := rng.IntN(10); {
		case r < 5:
		case keep && r < 7:
			in.TTL = linKeepTTL
			args = append(args, "KEEPTTL")
		default:
			in.TTL = farTTL(rng)
			args = append(args, "PXAT", strconv.FormatInt(in.TTL, 10))
		}
		return args
	}
	switch {
	case r < 5 && h.cfg.owners == 0:
		// MPREPARE of 2 or 3 keys (its undo on a taken key would change a
		// record of another owner: not with owners)
		in := linIn{Kind: linMPrepare}
		args := []string{"PK.MPREPARE", ""}
		for _, k := range rng.Perm(len(h.keys))[:2+rng.IntN(min(2, len(h.keys)-1))] {
			v := fmt.Sprintf("v%d", h.values.Add(1))
			in.Keys, in.Values = append(in.Keys, k), append(in.Values, v)
			args = append(args, h.ns, h.keys[k], v)
		}
		args[1] = strconv.Itoa(len(in.Keys))
		in.Key = in.Keys[0]
		return in, ttl(&in, args, false)
	case r < 30:
		in := linIn{Kind: linPrepare, Key: key, Value: value}
		return in, ttl(&in, []string{"PK.PREPARE", h.ns, h.keys[key], value}, false)
	case r < 42:
		return linIn{Kind: linGet, Key: key}, []string{"PK.GET", h.ns, h.keys[key]}
	case r < 55:
		return linIn{Kind: linGetValue, Key: key}, []string{"PK.GETVALUE", h.ns, h.keys[key]}
	case r < 70:
		in := linIn{Kind: linRollback, Key: key}
		args := []string{"PK.ROLLBACK", h.ns, h.keys[key]}
		if rng.IntN(3) > 0 {
			in.Cond, in.Cond2 = cond(key), true
			args = append(args, "IFEQ", in.Cond)
		}
		return in, args
	case r < 90:
		in := linIn{Kind: linReprepare, Key: key, Value: value}
		args := []string{"PK.REPREPARE", h.ns, h.keys[key], value}
		if rng.IntN(4) > 0 {
			in.Cond, in.Cond2 = cond(key), true
			args = append(args, "IFEQ", in.Cond)
		}
		return in, ttl(&in, args, true)
	default:
		old := (key + 1 + rng.IntN(len(h.keys)-1)) % len(h.keys)
		if o := h.cfg.owners; o > 0 {
			for old == key || old%o != c {
				old = c + o*rng.IntN((len(h.keys)-c+o-1)/o)
			}
		}
		in := linIn{Kind: linMove, Key: key, Value: value, OldKey: old, Cond: cond(old)}
		args := []string{"PK.REPREPARE", h.ns, h.keys[key], value, "FROM", h.keys[old], "IFEQ", in.Cond}
		return in, ttl(&in, args, false)
	}
}

// linConn is one client connection speaking RESP2.
type linConn struct {
	nc net.Conn
	rd *bufio.Reader
}

// do sends one command and reads its reply. ok is false when the
// connection must be dropped (cut, failed or late); the outcome is then
// unknown. With cut the client closes the connection right after sending.
func (c *linConn) do(args []string, in linIn, timeout time.Duration, cut bool) (out linOut, ok bool) {
	_ = c.nc.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c.nc, respMany(args)); err != nil {
		return linOut{Unknown: true}, false
	}
	if cut {
		return linOut{Unknown: true}, false
	}
	out, err := readLinReply(c.rd, in)
	if errors.Is(err, errProtocol) { // a reply no command may give: never legal
		return linOut{Err: err.Error()}, false
	}
	if err != nil {
		return linOut{Unknown: true}, false
	}
	return out, true
}

// respMany encodes args as RESP requests: one, or several separated by
// "\x00" (a MULTI block, sent as one pipeline).
func respMany(args []string) string {
	var b strings.Builder
	from := 0
	for i, a := range args {
		if a == "\x00" {
			b.WriteString(resp(args[from:i]...))
			from = i + 1
		}
	}
	b.WriteString(resp(args[from:]...))
	return b.String()
}

var errProtocol = errors.New("unexpected reply")

// readLinReply reads the reply to in as the model's output; for a block,
// MULTI's +OK, a +QUEUED per command, then EXEC's array (or its error).
func readLinReply(rd *bufio.Reader, in linIn) (linOut, error) {
	if in.Kind != linExec {
		return readOneReply(rd, in)
	}
	var queueErr string
	for i := range 1 + len(in.Block) {
		line, err := readLine(rd)
		if err != nil {
			return linOut{}, err
		}
		switch {
		case i == 0 && line == "+OK", i > 0 && line == "+QUEUED":
		case strings.HasPrefix(line, "-"):
			queueErr = line[1:]
		default:
			return linOut{}, fmt.Errorf("%w: %q", errProtocol, line)
		}
	}
	line, err := readLine(rd)
	if err != nil {
		return linOut{}, err
	}
	switch {
	case strings.HasPrefix(line, "-UNAVAILABLE"):
		return linOut{Unknown: true}, nil
	case strings.HasPrefix(line, "-"):
		return linOut{Err: line[1:]}, nil
	case queueErr != "":
		return linOut{}, fmt.Errorf("%w: EXEC answered %q after %q", errProtocol, line, queueErr)
	case line != "*"+strconv.Itoa(len(in.Block)):
		return linOut{}, fmt.Errorf("%w: %q", errProtocol, line)
	}
	out := linOut{Block: make([]linOut, len(in.Block))}
	for i, sub := range in.Block {
		if out.Block[i], err = readOneReply(rd, sub); err != nil {
			return linOut{}, err
		}
		if out.Block[i].Unknown { // one -UNAVAILABLE inside: not what EXEC answers
			return linOut{}, fmt.Errorf("%w: -UNAVAILABLE inside EXEC's array", errProtocol)
		}
	}
	return out, nil
}

// readOneReply reads one RESP2 reply as the model's output.
func readOneReply(rd *bufio.Reader, in linIn) (linOut, error) {
	line, err := readLine(rd)
	if err != nil {
		return linOut{}, err
	}
	switch line[0] {
	case '-':
		switch msg := line[1:]; {
		case strings.HasPrefix(msg, "UNAVAILABLE"):
			return linOut{Unknown: true}, nil
		case strings.HasPrefix(msg, "MISMATCH"):
			return linOut{Mismatch: true}, nil
		default:
			return linOut{Err: msg}, nil
		}
	case ':':
		n, err := strconv.ParseInt(line[1:], 10, 64)
		return linOut{Int: n}, err
	case '$':
		s, isNil, err := readBulk(rd, line)
		return linOut{Value: s, Nil: isNil}, err
	case '*':
		if line == "*-1" {
			return linOut{Nil: true}, nil
		}
		if line != "*2" || in.Kind != linGetValue {
			return linOut{}, fmt.Errorf("%w: %q", errProtocol, line)
		}
		bulk, err := readLine(rd)
		if err != nil {
			return linOut{}, err
		}
		v, _, err := readBulk(rd, bulk)
		if err != nil {
			return linOut{}, err
		}
		ttlLine, err := readLine(rd)
		if err != nil {
			return linOut{}, err
		}
		if ttlLine[0] != ':' {
			return linOut{}, fmt.Errorf("%w: %q", errProtocol, ttlLine)
		}
		ttl, err := strconv.ParseInt(ttlLine[1:], 10, 64)
		return linOut{Value: v, TTL: ttl}, err
	}
	return linOut{}, fmt.Errorf("%w: %q", errProtocol, line)
}

func readLine(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errProtocol
	}
	return line, nil
}

func readBulk(rd *bufio.Reader, head string) (string, bool, error) {
	if head[0] != '$' {
		return "", false, fmt.Errorf("%w: %q", errProtocol, head)
	}
	n, err := strconv.Atoi(head[1:])
	if err != nil {
		return "", false, err
	}
	if n < 0 {
		return "", true, nil
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(rd, b); err != nil {
		return "", false, err
	}
	return string(b[:n]), false, nil
}
