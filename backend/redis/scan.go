package redis

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/prepkey/prepkey/backend"
)

// Scan implements backend.Store with Redis's SCAN on the namespace's keys
// (MATCH on the namespace's key prefix), then one block.lua get per key
// found, pipelined, which reads the record as PK.GETVALUE does, in either
// layout (a string, or a hash written before it): a key deleted in
// between, or of another type (WRONGTYPE), is skipped. SCAN's TYPE filter
// takes one type, and records are of two until every hash of before has
// been rewritten or has expired. SCAN guarantees that a key present for
// the whole iteration is returned, and may return one twice: so does
// PK.SCAN.
//
// On a Cluster each master is scanned in turn, in the order of the lowest
// slot each serves; the position says which master (by that slot) and its
// SCAN cursor. A resharding or failover during a scan can make the next
// master's cursor meaningless: records may then be missed or repeated
// (docs/redis.md).
//
// A position is "s" + cursor (one node) or "c" + slot (2 bytes) + cursor.
func (s *Store) Scan(ctx context.Context, ns string, pos []byte, count int) (backend.Page, error) {
	ctx, cancel := s.deadlines.bound(ctx)
	defer cancel()
	c, err := s.conn(ctx)
	if err != nil {
		return backend.Page{}, s.fail(ctx, "scan", err)
	}
	if s.target.topology != Cluster {
		cursor, err := parseScanPos(pos, 's', 0)
		if err != nil {
			return backend.Page{}, err
		}
		page, next, err := s.scanNode(ctx, c, c, ns, cursor, count)
		if err != nil {
			return backend.Page{}, err
		}
		if next == 0 {
			page.Done = true
		} else {
			page.Next = strconv.AppendUint([]byte{'s'}, next, 10)
		}
		return page, nil
	}
	return s.scanCluster(ctx, c, ns, pos, count)
}

// parseScanPos reads a position of the given kind: the SCAN cursor, and
// for a Cluster the slot of the master.
func parseScanPos(pos []byte, kind byte, slotBytes int) (uint64, error) {
	if pos == nil {
		return 0, nil
	}
	if len(pos) < 2+slotBytes || pos[0] != kind {
		return 0, fmt.Errorf("redis: scan: position %q of another topology", pos)
	}
	cursor, err := strconv.ParseUint(string(pos[1+slotBytes:]), 10, 64)
	if err != nil || (cursor == 0 && slotBytes == 0) {
		return 0, fmt.Errorf("redis: scan: position %q is not a cursor", pos)
	}
	return cursor, nil
}

// scanNode runs one SCAN on node and reads the records it named through
// c (which routes each read to its slot's node). next is SCAN's cursor,
// 0 when the node is done.
func (s *Store) scanNode(ctx context.Context, c, node rueidis.Client, ns string, cursor uint64, count int) (backend.Page, uint64, error) {
	scan := node.B().Scan().Cursor(cursor).Match(s.keys.scanMatch(ns)).Count(int64(count))
	var cmd rueidis.Completed
	if typ := s.keys.scanType(); typ != "" {
		cmd = scan.Type(typ).Build()
	} else {
		cmd = scan.Build()
	}
	entry, err := node.Do(ctx, cmd).AsScanEntry()
	if err != nil {
		return backend.Page{}, 0, s.fail(ctx, "scan", err)
	}
	page := backend.Page{Records: make([]backend.ScanRecord, 0, len(entry.Elements))}
	if len(entry.Elements) == 0 {
		return page, entry.Cursor, nil
	}
	keys := make([][]byte, 0, len(entry.Elements))
	cmds := make(rueidis.Commands, 0, len(entry.Elements))
	for _, rk := range entry.Elements {
		key, ok := s.keys.parse(ns, rk)
		if !ok {
			continue // not a record of ns (a key of the prefix's own)
		}
		keys = append(keys, key)
		cmds = append(cmds, c.B().Evalsha().Sha1(s.scripts.block.sha).Numkeys(1).Key(rk).Arg(s.retention, "g").Build())
	}
	for i, r := range c.DoMulti(ctx, cmds...) {
		if re, ok := rueidis.IsRedisErr(r.Error()); ok && re.IsNoScript() {
			r = s.scripts.block.Exec(ctx, c, []string{s.keys.recordKey(ns, keys[i])}, []string{s.retention, "g"})
		}
		if err := r.Error(); err != nil {
			return backend.Page{}, 0, s.fail(ctx, "scan", err)
		}
		arr, err := r.ToArray()
		if err != nil || len(arr) != 1 {
			return backend.Page{}, 0, s.fail(ctx, "scan", fmt.Errorf("unexpected reply %v", r))
		}
		var a answer
		a.readMsg(&arr[0])
		got, err := blockResult(OpGet, &a)
		rec, found := got.Record, got.Found
		if re, ok := rueidis.IsRedisErr(err); ok && (strings.HasPrefix(re.Error(), "WRONGTYPE") || strings.HasPrefix(re.Error(), unreadable)) {
			// Someone else's key of another type under the prefix, or
			// (layout=wow) a hash that is not a record the sidecar can
			// read: no record to list.
			continue
		}
		if r := s.refuseTooLarge(ns, keys[i], err); r != nil {
			// A record larger than the store returns (another writer's):
			// left out of the page, as an unreadable one, so that the scan
			// goes on past it; a PK.GET of the key answers the refusal.
			s.log.Warn("scan: record left out", "err", r.Text)
			continue
		}
		if err != nil {
			return backend.Page{}, 0, s.fail(ctx, "scan", err)
		}
		if found {
			page.Records = append(page.Records, backend.ScanRecord{Key: keys[i], Record: rec})
		}
	}
	return page, entry.Cursor, nil
}

// scanCluster scans the master named by pos, or the first one.
func (s *Store) scanCluster(ctx context.Context, c rueidis.Client, ns string, pos []byte, count int) (backend.Page, error) {
	masters, err := s.masters(ctx, c)
	if err != nil {
		return backend.Page{}, err
	}
	at, cursor := uint16(0), uint64(0)
	if pos != nil {
		if cursor, err = parseScanPos(pos, 'c', 2); err != nil {
			return backend.Page{}, err
		}
		at = binary.BigEndian.Uint16(pos[1:3])
	}
	// The master holding slot at now; at a fresh start, the first.
	i := slices.IndexFunc(masters, func(m master) bool { return m.serves(at) })
	if i < 0 {
		return backend.Page{}, s.fail(ctx, "scan", fmt.Errorf("no master serves slot %d", at))
	}
	node, ok := c.Nodes()[masters[i].addr]
	if !ok {
		return backend.Page{}, s.fail(ctx, "scan", fmt.Errorf("master %s is not among the client's nodes", masters[i].addr))
	}
	page, next, err := s.scanNode(ctx, c, node, ns, cursor, count)
	if err != nil {
		return backend.Page{}, err
	}
	if next == 0 {
		// This master is done: the next is the first whose lowest slot is
		// above at, so that the scan always moves on.
		j := slices.IndexFunc(masters, func(m master) bool { return m.first > at })
		if j < 0 {
			page.Done = true
			return page, nil
		}
		at = masters[j].first
	}
	// Cursor 0 here starts the next master: the scan ends only on Done.
	page.Next = strconv.AppendUint(binary.BigEndian.AppendUint16([]byte{'c'}, at), next, 10)
	return page, nil
}

// master is a Cluster master and the slots it serves.
type master struct {
	addr   string
	first  uint16 // its lowest slot
	ranges [][2]uint16
}

func (m master) serves(slot uint16) bool {
	for _, r := range m.ranges {
		if r[0] <= slot && slot <= r[1] {
			return true
		}
	}
	return false
}

// masters reads CLUSTER SLOTS: the masters, ordered by their lowest slot.
func (s *Store) masters(ctx context.Context, c rueidis.Client) ([]master, error) {
	rows, err := c.Do(ctx, c.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return nil, s.fail(ctx, "scan", err)
	}
	byAddr := map[string]*master{}
	for _, row := range rows {
		cols, err := row.ToArray()
		if err != nil || len(cols) < 3 {
			return nil, s.fail(ctx, "scan", fmt.Errorf("CLUSTER SLOTS: unexpected row %v", row))
		}
		lo, err1 := cols[0].AsInt64()
		hi, err2 := cols[1].AsInt64()
		node, err3 := cols[2].ToArray()
		if err := errors.Join(err1, err2, err3); err != nil || len(node) < 2 {
			return nil, s.fail(ctx, "scan", fmt.Errorf("CLUSTER SLOTS: unexpected row %v", row))
		}
		host, err1 := node[0].ToString()
		port, err2 := node[1].AsInt64()
		if err := errors.Join(err1, err2); err != nil {
			return nil, s.fail(ctx, "scan", fmt.Errorf("CLUSTER SLOTS: unexpected row %v", row))
		}
		addr := net.JoinHostPort(host, strconv.FormatInt(port, 10))
		m := byAddr[addr]
		if m == nil {
			m = &master{addr: addr, first: uint16(lo)}
			byAddr[addr] = m
		}
		m.first = min(m.first, uint16(lo))
		m.ranges = append(m.ranges, [2]uint16{uint16(lo), uint16(hi)})
	}
	out := make([]master, 0, len(byAddr))
	for _, m := range byAddr {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b master) int { return int(a.first) - int(b.first) })
	return out, nil
}

// globEscape escapes Redis's glob metacharacters, so that a key prefix
// holding one (--redis-key-prefix is the operator's) matches itself.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// secretKey holds the store's secret. It is outside every record key's
// layout (those go on with "{").
func (s *Store) secretKey() string { return s.keys.secretKey() }

// Secret implements backend.Store: the secret lives in Redis, under the
// key prefix, written once (SET NX) by whichever sidecar comes first, so
// every sidecar of this Redis shares it, across restarts.
func (s *Store) Secret(ctx context.Context) ([]byte, error) {
	ctx, cancel := s.deadlines.bound(ctx)
	defer cancel()
	c, err := s.conn(ctx)
	if err != nil {
		return nil, s.fail(ctx, "secret", err)
	}
	fresh := make([]byte, backend.SecretBytes)
	_, _ = rand.Read(fresh) // crypto/rand.Read never fails (Go 1.24)
	key := s.secretKey()
	rs := c.DoMulti(ctx,
		c.B().Set().Key(key).Value(string(fresh)).Nx().Build(),
		c.B().Get().Key(key).Build(),
	)
	if err := rs[0].Error(); err != nil && !rueidis.IsRedisNil(err) {
		return nil, s.fail(ctx, "secret", err)
	}
	v, err := rs[1].AsBytes()
	if err != nil {
		return nil, s.fail(ctx, "secret", err)
	}
	if len(v) != backend.SecretBytes {
		return nil, s.fail(ctx, "secret", fmt.Errorf("%s holds %d bytes, not a secret", key, len(v)))
	}
	return v, nil
}
