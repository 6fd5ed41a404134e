package e2e

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The sequential specification of the PK commands, for porcupine: what one
// namespace of linKeys keys may answer when every command is one atomic
// step. It judges histories recorded through the binary (lin_test.go).
//
// What the model leaves out, and why:
//   - Expiry. Every TTL in the histories is an absolute time (PXAT) far
//     beyond the history, or forever, so no record expires while it runs
//     and "live" is "present"; the model still checks each ttlAt that
//     PK.GETVALUE answers, and KEEPTTL. EX/PX count from the backend's
//     clock, which the model cannot read, so the histories do not use them.
//   - Retention and the sweep: nothing expires, so there is nothing to
//     sweep.
//
// A command answered -UNAVAILABLE, or whose connection was cut, or that got
// no reply, has an unknown outcome: it may have taken effect at any point
// from its call to the end of the history, or never. It is given the end of
// the history as its return time, and the model lets it step to both
// states (nondeterministic model).

// linKeys bounds the key space of one history (3 to 5 keys are used).
const linKeys = 5

type linKind uint8

const (
	linPrepare linKind = iota + 1
	linGet
	linGetValue
	linRollback
	linReprepare
	linMove
	linMPrepare
	linExec // MULTI … EXEC: Block runs as one atomic step
)

// linTTL is the TTL option of a write: forever (0), an absolute time, or
// KEEPTTL (REPREPARE only).
const linKeepTTL int64 = -2

// linIn is one command of a history.
type linIn struct {
	Kind   linKind
	Key    int    // index into the history's keys; the new key of a move
	Value  string // PREPARE, REPREPARE, move: the value written
	Cond   string // IFEQ value, when CondSet
	Cond2  bool   // CondSet
	TTL    int64  // 0 forever, a PXAT time, or linKeepTTL
	OldKey int    // move
	Keys   []int  // MPREPARE: the keys, with Values
	Values []string
	Block  []linIn // EXEC: the queued commands, in order
}

// linOut is its reply.
type linOut struct {
	Unknown  bool // -UNAVAILABLE, cut, or no reply: may or may not have run
	Any      bool // ran, but its reply is not known (a composed step)
	Int      int64
	Mismatch bool // -MISMATCH
	Nil      bool
	Value    string
	TTL      int64 // GETVALUE: -1 forever
	Err      string
	Block    []linOut // EXEC: each queued command's reply
}

type linRec struct {
	set bool
	val string
	ttl int64 // 0 forever
}

// linState is the records of the history's keys.
type linState [linKeys]linRec

func (st linState) hash() uint64 {
	h := fnv.New64a()
	for _, r := range st {
		fmt.Fprintf(h, "%t|%s|%d;", r.set, r.val, r.ttl)
	}
	return h.Sum64()
}

// linStep applies in to st and reports the reply an atomic store gives.
func linStep(st linState, in linIn) (linState, linOut) {
	switch in.Kind {
	case linPrepare:
		if st[in.Key].set {
			return st, linOut{Int: 0}
		}
		st[in.Key] = linRec{set: true, val: in.Value, ttl: in.TTL}
		return st, linOut{Int: 1}
	case linGet:
		if !st[in.Key].set {
			return st, linOut{Nil: true}
		}
		return st, linOut{Value: st[in.Key].val}
	case linGetValue:
		r := st[in.Key]
		if !r.set {
			return st, linOut{Nil: true}
		}
		ttl := r.ttl
		if ttl == 0 {
			ttl = -1
		}
		return st, linOut{Value: r.val, TTL: ttl}
	case linRollback:
		r := st[in.Key]
		if !r.set || (in.Cond2 && r.val != in.Cond) {
			return st, linOut{Int: 0}
		}
		st[in.Key] = linRec{}
		return st, linOut{Int: 1}
	case linReprepare:
		r := st[in.Key]
		if !r.set || (in.Cond2 && r.val != in.Cond) {
			return st, linOut{Int: 0}
		}
		ttl := in.TTL
		if ttl == linKeepTTL {
			ttl = r.ttl
		}
		st[in.Key] = linRec{set: true, val: in.Value, ttl: ttl}
		return st, linOut{Int: 1}
	case linMove:
		if st[in.Key].set {
			return st, linOut{Int: 0}
		}
		if o := st[in.OldKey]; !o.set || o.val != in.Cond {
			return st, linOut{Mismatch: true}
		}
		st[in.OldKey] = linRec{}
		st[in.Key] = linRec{set: true, val: in.Value, ttl: in.TTL}
		return st, linOut{Int: 1}
	case linExec:
		out := linOut{Block: make([]linOut, len(in.Block))}
		for i, sub := range in.Block {
			st, out.Block[i] = linStep(st, sub)
		}
		return st, out
	case linMPrepare:
		for _, k := range in.Keys {
			if st[k].set {
				return st, linOut{Int: 0}
			}
		}
		for i, k := range in.Keys {
			st[k] = linRec{set: true, val: in.Values[i], ttl: in.TTL}
		}
		return st, linOut{Int: 1}
	}
	panic(fmt.Sprintf("unknown kind %d", in.Kind))
}

func (o linOut) equal(p linOut) bool {
	if o.Int != p.Int || o.Mismatch != p.Mismatch || o.Nil != p.Nil || o.Value != p.Value || o.TTL != p.TTL ||
		o.Err != p.Err || o.Unknown != p.Unknown || len(o.Block) != len(p.Block) || (o.Block == nil) != (p.Block == nil) {
		return false
	}
	for i := range o.Block {
		if !o.Block[i].equal(p.Block[i]) {
			return false
		}
	}
	return true
}

// linModel is the PK commands as a porcupine model. partition splits a
// history by key; it is valid only for histories in which no command
// touches two keys (composed key changes are split into their steps
// first, see splitMoves).
func linModel(keys []string, partition bool) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{linState{}} },
		Step: func(state, input, output interface{}) []interface{} {
			st, in, out := state.(linState), input.(linIn), output.(linOut)
			next, want := linStep(st, in)
			switch {
			case out.Unknown:
				if next == st {
					return []interface{}{st}
				}
				return []interface{}{st, next} // it ran, or it never did
			case out.Any || out.equal(want):
				return []interface{}{next}
			}
			return nil
		},
		Equal: func(a, b interface{}) bool { return a.(linState) == b.(linState) },
		Hash:  func(s interface{}) uint64 { return s.(linState).hash() },
		DescribeOperation: func(input, output interface{}) string {
			return describeLin(keys, input.(linIn), output.(linOut))
		},
		DescribeState: func(state interface{}) string {
			st := state.(linState)
			var parts []string
			for i, r := range st[:len(keys)] {
				if r.set {
					parts = append(parts, fmt.Sprintf("%s=%s@%d", keys[i], r.val, r.ttl))
				}
			}
			return "{" + strings.Join(parts, " ") + "}"
		},
	}
	if partition {
		nm.Partition = func(h []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[int][]porcupine.Operation{}
			for _, op := range h {
				if in := op.Input.(linIn); in.Kind == linExec || in.Kind == linMove || in.Kind == linMPrepare {
					panic("a history with commands on several keys cannot be partitioned by key")
				}
				k := op.Input.(linIn).Key
				byKey[k] = append(byKey[k], op)
			}
			var ks []int
			for k := range byKey {
				ks = append(ks, k)
			}
			sort.Ints(ks)
			var out [][]porcupine.Operation
			for _, k := range ks {
				out = append(out, byKey[k])
			}
			return out
		}
	}
	return nm.ToModel()
}

func describeLin(keys []string, in linIn, out linOut) string {
	var b strings.Builder
	ttl := func() {
		switch in.TTL {
		case 0:
		case linKeepTTL:
			b.WriteString(" KEEPTTL")
		default:
			fmt.Fprintf(&b, " PXAT %d", in.TTL)
		}
	}
	cond := func() {
		if in.Cond2 {
			fmt.Fprintf(&b, " IFEQ %s", in.Cond)
		}
	}
	switch in.Kind {
	case linPrepare:
		fmt.Fprintf(&b, "PREPARE %s %s", keys[in.Key], in.Value)
		ttl()
	case linGet:
		fmt.Fprintf(&b, "GET %s", keys[in.Key])
	case linGetValue:
		fmt.Fprintf(&b, "GETVALUE %s", keys[in.Key])
	case linRollback:
		fmt.Fprintf(&b, "ROLLBACK %s", keys[in.Key])
		cond()
	case linReprepare:
		fmt.Fprintf(&b, "REPREPARE %s %s", keys[in.Key], in.Value)
		cond()
		ttl()
	case linMove:
		fmt.Fprintf(&b, "REPREPARE %s %s FROM %s IFEQ %s", keys[in.Key], in.Value, keys[in.OldKey], in.Cond)
		ttl()
	case linExec:
		b.WriteString("MULTI")
		for i, sub := range in.Block {
			var o linOut
			if i < len(out.Block) {
				o = out.Block[i]
			} else {
				o = linOut{Any: true}
			}
			b.WriteString("; " + describeLin(keys, sub, o))
		}
		b.WriteString("; EXEC")
	case linMPrepare:
		fmt.Fprintf(&b, "MPREPARE")
		for i, k := range in.Keys {
			fmt.Fprintf(&b, " %s %s", keys[k], in.Values[i])
		}
		ttl()
	}
	b.WriteString(" -> ")
	switch {
	case out.Unknown:
		b.WriteString("unknown")
	case out.Any:
		b.WriteString("(any)")
	case out.Err != "":
		b.WriteString("-" + out.Err)
	case out.Mismatch:
		b.WriteString("-MISMATCH")
	case out.Nil:
		b.WriteString("nil")
	case in.Kind == linGetValue:
		fmt.Fprintf(&b, "[%s %d]", out.Value, out.TTL)
	case in.Kind == linGet:
		b.WriteString(out.Value)
	case in.Kind == linExec:
		b.WriteString("(the replies above)")
	default:
		fmt.Fprintf(&b, ":%d", out.Int)
	}
	return b.String()
}

// splitMoves replaces each key change by the steps a composed one takes
// (Redis Cluster across slots, MongoDB): reserve the new key, then release
// the old one (ROLLBACK … IFEQ), and on a mismatch undo the reservation.
// Each step is atomic on its own key and happens within the command's
// interval, but other clients may see the steps apart; so for these
// backends the checker holds the key change to what composition promises:
//   - :1: the new key was reserved (PREPARE answered :1) and the old one
//     released (ROLLBACK IFEQ answered :1);
//   - :0: the reservation found the new key taken, and nothing else ran;
//   - -MISMATCH: the new key was reserved, the release found no match, and
//     the reservation was undone (a ROLLBACK of the new key IFEQ the new
//     value, whose own answer is not known: another client may have
//     changed the record in between, and then it must stay);
//   - unknown: each of the three steps may or may not have run.
//
// What it cannot hold: the order of the steps within the command (each key
// is judged on its own).
//
// PK.MPREPARE is split the same way: :1 is a PREPARE of each key that
// answered :1; :0 is, for each key, a PREPARE whose answer is not known
// (it may have found the key taken, reserved it, or not run) and an undo
// (ROLLBACK IFEQ its value, answer not known); unknown is each of those
// unknown. That :0 had at least one key taken is not held.
func splitMoves(h []porcupine.Operation) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range h {
		in, res := op.Input.(linIn), op.Output.(linOut)
		step := func(in linIn, res linOut) {
			o := op
			o.Input, o.Output = in, res
			out = append(out, o)
		}
		if in.Kind == linMPrepare {
			// one key after the other, each undone (while it holds this
			// command's value) when a later one was taken
			for i, k := range in.Keys {
				reserve := linIn{Kind: linPrepare, Key: k, Value: in.Values[i], TTL: in.TTL}
				undo := linIn{Kind: linRollback, Key: k, Cond: in.Values[i], Cond2: true}
				switch {
				case res.Unknown:
					step(reserve, res)
					step(undo, res)
				case res.Err != "":
					step(reserve, res)
				case res.Int == 1:
					step(reserve, linOut{Int: 1})
				default: // :0: tried or not, taken or reserved and undone
					step(reserve, linOut{Any: true})
					step(undo, linOut{Any: true})
				}
			}
			continue
		}
		if in.Kind != linMove {
			out = append(out, op)
			continue
		}
		reserve := linIn{Kind: linPrepare, Key: in.Key, Value: in.Value, TTL: in.TTL}
		release := linIn{Kind: linRollback, Key: in.OldKey, Cond: in.Cond, Cond2: true}
		undo := linIn{Kind: linRollback, Key: in.Key, Cond: in.Value, Cond2: true}
		switch {
		case res.Unknown:
			step(reserve, res)
			step(release, res)
			step(undo, res)
		case res.Err != "":
			step(reserve, res) // judged as the error it is: never legal
		case res.Int == 1:
			step(reserve, linOut{Int: 1})
			step(release, linOut{Int: 1})
		case res.Mismatch:
			step(reserve, linOut{Int: 1})
			step(release, linOut{Int: 0})
			step(undo, linOut{Any: true})
		default:
			step(reserve, linOut{Int: 0})
		}
	}
	return out
}
