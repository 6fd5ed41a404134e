package commands

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prepkey/prepkey/backend"
)

// PK.SCAN name cursor [MATCH pattern] [COUNT count] [LIVE | EXPIRED]
//
// Options are read left to right and the first bad one answers, as Redis
// does: a COUNT that is not an integer is Redis's "not an integer" error,
// one outside 1-1000 a syntax error. Then the namespace, then the cursor's
// form; its authenticity needs the store's secret, so it is checked when
// the scan runs (exec), still before the store reads a record.
func (h *Handler) parseScan(args [][]byte, op *backend.Op) *Reply {
	var (
		match    []byte
		hasMatch bool
		count    = int64(backend.DefaultScanCount)
		hasCount bool
		only     byte // 'l' LIVE, 'e' EXPIRED
	)
	opts := args[3:]
	for i := 0; i < len(opts); i++ {
		w := opts[i]
		switch {
		case bytes.EqualFold(w, []byte("MATCH")) && !hasMatch && i+1 < len(opts):
			i++
			match, hasMatch = opts[i], true
		case bytes.EqualFold(w, []byte("COUNT")) && !hasCount && i+1 < len(opts):
			i++
			n, ok := parseInt(opts[i])
			if !ok {
				return refuse(ErrNotInteger.Reply())
			}
			if n < 1 || n > backend.MaxScanCount {
				return refuse(ErrSyntax.Reply())
			}
			count, hasCount = n, true
		case bytes.EqualFold(w, []byte("LIVE")) && only == 0:
			only = 'l'
		case bytes.EqualFold(w, []byte("EXPIRED")) && only == 0:
			only = 'e'
		default:
			return refuse(ErrSyntax.Reply())
		}
	}
	ns, cursor := args[1], args[2]
	if !validNamespace(ns) {
		return refuse(ErrNamespace.Reply())
	}
	if hasMatch && len(match) > h.maxPatternBytes() {
		return refuse(ErrPatternTooLarge.Replyf(h.maxPatternBytes()))
	}
	if string(cursor) == "0" {
		cursor = nil
	} else if _, ok := decodeCursor(cursor); !ok {
		return refuse(ErrInvalidCursor.Reply())
	}
	var g *glob
	if hasMatch {
		g = compileGlob(match)
		count = int64(matchCount(int(count), g.cost(h.limits.MaxKeyBytes)))
	}
	keep := func(backend.ScanRecord) bool { return true }
	if hasMatch || only != 0 {
		keep = func(r backend.ScanRecord) bool {
			return (only == 0 || r.Live == (only == 'l')) && (g == nil || g.match(r.Key))
		}
	}
	h.setOp(op, backend.OpScan, ns, cursor, nil)
	op.Count, op.Keep = int(count), keep
	return nil
}

// maxPatternBytes bounds a MATCH pattern: the size of the longest key
// written with every byte escaped, twice over. Compiling one takes 32
// bytes and up to 256 steps per byte of it, once per call (compileGlob).
func (h *Handler) maxPatternBytes() int { return 4 * h.limits.MaxKeyBytes }

// matchBudget bounds the word steps of matching one page's keys, so that
// one PK.SCAN call's pattern work is bounded whatever the pattern, the
// keyspace or the backend: at most 3.7 ms on this project's test machine,
// loaded (TestGlobBudget, docs/benchmarks.md N2); on memory: it is spent on
// the event loop. Half of it would halve COUNT for any pattern with a
// segment across a 64-unit boundary of the state. A pattern whose worst case over keys of max-key-bytes would pass
// it reads fewer records per page than COUNT asks (matchCount): COUNT is a
// hint, and a page may hold fewer, as Redis's SCAN's may. With 1 KiB keys,
// a pattern whose runs between two '*' are short (a class, however long,
// is one unit) keeps COUNT up to about 1000; one with a run of 1024 units
// reads 120 records a page.
const matchBudget = 1 << 21

// matchCount is the records a page with MATCH reads for COUNT count, when
// matching one costs at most cost steps: at least one.
func matchCount(count, cost int) int { return max(1, min(count, matchBudget/cost)) }

// Cursors. A cursor is base64url (no padding) of
//
//	version(1) | position | tag(16)
//
// where position is the store's Page.Next and tag the first 16 bytes of
// HMAC-SHA256(secret, "pk.scan" | len(ns) | ns | position). The secret is
// the store's (backend.Store.Secret): kept by the backend, so a cursor is good on
// any sidecar of that backend and across restarts, and a cursor changed by
// a client, made up, or handed out for another namespace fails the tag and
// is "invalid cursor" before the store is asked for a record.
const (
	cursorVersion = 1
	cursorTagSize = 16
)

var cursorEncoding = base64.RawURLEncoding

// decodeCursor splits a cursor's form into its position and the rest; it
// does not check the tag.
func decodeCursor(c []byte) ([]byte, bool) {
	raw := make([]byte, cursorEncoding.DecodedLen(len(c)))
	n, err := cursorEncoding.Decode(raw, c)
	if err != nil || n < 1+cursorTagSize || raw[0] != cursorVersion {
		return nil, false
	}
	return raw[:n], true
}

func cursorTag(secret []byte, ns string, pos []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("pk.scan"))
	m.Write([]byte{byte(len(ns))})
	m.Write([]byte(ns))
	m.Write(pos)
	return m.Sum(nil)[:cursorTagSize]
}

func encodeCursor(secret []byte, ns string, pos []byte) []byte {
	raw := make([]byte, 0, 1+len(pos)+cursorTagSize)
	raw = append(raw, cursorVersion)
	raw = append(raw, pos...)
	raw = append(raw, cursorTag(secret, ns, pos)...)
	out := make([]byte, cursorEncoding.EncodedLen(len(raw)))
	cursorEncoding.Encode(out, raw)
	return out
}

// openCursor returns the position of a cursor this store's sidecars
// handed out for ns.
func openCursor(secret []byte, ns string, c []byte) ([]byte, bool) {
	raw, ok := decodeCursor(c)
	if !ok {
		return nil, false
	}
	pos, tag := raw[1:len(raw)-cursorTagSize], raw[len(raw)-cursorTagSize:]
	if !hmac.Equal(tag, cursorTag(secret, ns, pos)) {
		return nil, false
	}
	return pos, true
}

// replyError is a failure that is the client's, found only when the
// command runs (an invalid cursor): finish answers it as is, not as
// -UNAVAILABLE.
type replyError struct{ code ErrCode }

func (e *replyError) Error() string { return e.code.Line() }

var errCursor = &replyError{ErrInvalidCursor}

// secrets caches the store's secret after the first read. ready is the
// key once read, for the event loop (cachedSecret), which must not wait
// on mu while another goroutine reads the secret from the store.
type secrets struct {
	mu    sync.Mutex
	key   []byte
	ready atomic.Pointer[[]byte]
}

func (h *Handler) secret(ctx context.Context) ([]byte, error) {
	if k := h.sec.ready.Load(); k != nil {
		return *k, nil
	}
	h.sec.mu.Lock()
	defer h.sec.mu.Unlock()
	if h.sec.key != nil {
		return h.sec.key, nil
	}
	k, err := h.store.Secret(ctx)
	if err != nil {
		return nil, err
	}
	if len(k) < backend.SecretBytes {
		return nil, fmt.Errorf("store secret of %d bytes", len(k))
	}
	h.sec.key = k
	h.sec.ready.Store(&k)
	return k, nil
}

// scan runs one page of PK.SCAN for a command alone (Do): it loads the
// secret, opens the cursor, reads from the store through backend.ScanOp
// (the store's Scan, filtered) and seals the next cursor (sealScan: "0"
// when done), as a submission's scan is (Parsed.OpenScans, Parsed.Answer).
func (h *Handler) scan(ctx context.Context, op backend.Op) backend.Result {
	if err := h.LoadSecret(ctx); err != nil {
		return backend.Result{Err: err}
	}
	if !h.openScan(&op) {
		return backend.Result{Err: errCursor}
	}
	res := backend.ScanOp(ctx, h.store, &op)
	h.sealScan(&op, &res)
	return res
}

// replyScan answers PK.SCAN: [cursor, [[key, value, ttlAt], ...]].
//
// A result with no page (a store outside the contract) is answered as an
// empty page.
func replyScan(res *backend.Result, r *Reply) {
	if res.Page == nil {
		r.set(ScanPage, 0, nil)
		return
	}
	r.set(ScanPage, 0, res.Page.Next)
	r.Records = res.Page.Records
}
