// Package commands turns the PK commands' arguments into calls on a store
// (backend.Store, the contract declared in package backend) and the
// store's answers into replies. It does no I/O: the protocol layer
// owns connections and the wire format, the backends own storage.
package commands

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prepkey/prepkey/backend"
)

// Spec describes a command for the table and for COMMAND.
type Spec struct {
	Name string // lower case, as Redis names commands
	// Arity is Redis's: positive is an exact argument count (with the name),
	// negative a minimum.
	Arity int
	Write bool
	// alone: a batch runs this command on its own, between the Runs of
	// the commands around it (a scan is several reads, not an op a Run
	// takes).
	alone bool
	// parse turns arguments into one store call in *op, or returns the
	// error reply. Pointers in and out, not values: see setOp.
	parse func(h *Handler, args [][]byte, op *backend.Op) *Reply
	// reply turns the store's answer into the command's reply, in *r.
	reply func(res *backend.Result, r *Reply)
}

// specs is the one table that maps names to handlers.
var specs = []Spec{
	{Name: "pk.prepare", Arity: -4, Write: true, parse: (*Handler).parsePrepare, reply: replyWrite},
	{Name: "pk.get", Arity: 3, parse: (*Handler).parseGet, reply: replyGet},
	{Name: "pk.getvalue", Arity: 3, parse: (*Handler).parseGet, reply: replyGetValue},
	{Name: "pk.rollback", Arity: -3, Write: true, parse: (*Handler).parseRollback, reply: replyWrite},
	{Name: "pk.reprepare", Arity: -4, Write: true, parse: (*Handler).parseReprepare, reply: replyReprepare},
	{Name: "pk.mprepare", Arity: -5, Write: true, parse: (*Handler).parseMPrepare, reply: replyWrite},
	{Name: "pk.scan", Arity: -3, alone: true, parse: (*Handler).parseScan, reply: replyScan},
}

// Specs lists the PK commands.
func Specs() []Spec { return append([]Spec(nil), specs...) }

// Handler runs PK commands against a store.
type Handler struct {
	store  backend.Store
	limits Limits
	now    func() time.Time
	sec    secrets
	names  namespaces
	// argCheck is the store layout's own check of a command's store call
	// (backend.Info.ArgCheck); nil when the layout takes what the contract
	// allows.
	argCheck func(op *backend.Op) error
}

// New returns a Handler. now is the sidecar's clock, used only to reject
// absolute expiry times already past; nil means time.Now.
func New(store backend.Store, limits Limits, now func() time.Time) *Handler {
	if now == nil {
		now = time.Now
	}
	h := &Handler{store: store, limits: limits, now: now}
	h.argCheck = store.Info().ArgCheck
	return h
}

// Info is what the store declares of itself (backend.Store.Info): the
// server takes its one deadline from it.
func (h *Handler) Info() backend.Info { return h.store.Info() }

// Do runs the PK command in args (args[0] is its name, in any case). ok is
// false when args[0] names no PK command, so the caller can try its own.
func (h *Handler) Do(ctx context.Context, args [][]byte) (r Reply, ok bool) {
	spec := h.lookup(args[0])
	if spec == nil {
		return Reply{}, false
	}
	var op backend.Op
	if refused := h.parse(spec, args, &op); refused != nil {
		return *refused, true
	}
	res := h.exec(ctx, op)
	finish(spec, &res, &r)
	return r, true
}

// finish turns a store result into spec's reply; a store failure is
// -UNAVAILABLE, whatever the command, but a store's refusal of the
// arguments (backend.Refusal) is that error.
func finish(spec *Spec, res *backend.Result, r *Reply) {
	if res.Err == nil {
		spec.reply(res, r)
		return
	}
	*r = failed(res.Err)
}

// failed is the reply to a store error.
func failed(err error) Reply {
	if e, ok := err.(*replyError); ok {
		return e.code.Reply()
	}
	if r, ok := errors.AsType[*backend.Refusal](err); ok {
		return refused(r)
	}
	return unavailable(err)
}

// parse checks arity and parses args for spec into *op, and has the
// store's layout check the call (backend.Info.ArgCheck), if it has one; it
// returns the reply refusing them, or nil. *op is the caller's: passed to
// spec.parse, a function value, it escapes, so the callers on the path of
// every command pass one that lives on the heap already (the connection's,
// a batch's Ops).
func (h *Handler) parse(spec *Spec, args [][]byte, op *backend.Op) *Reply {
	if !spec.arityOK(len(args)) {
		return refuse(wrongArgs(spec.Name))
	}
	if r := spec.parse(h, args, op); r != nil {
		return r
	}
	if h.argCheck != nil {
		if err := h.argCheck(op); err != nil {
			return refuse(refused(err))
		}
	}
	return nil
}

// refuse is r, as parse returns a refusal: on the heap, so that a command
// that is answered pays nothing for the reply it did not get.
func refuse(r Reply) *Reply { return &r }

// arityOK reports whether n arguments (the name's included) are as many
// as the command takes.
func (spec *Spec) arityOK(n int) bool {
	return (spec.Arity <= 0 || n == spec.Arity) && n >= -spec.Arity
}

// exec makes one store call: a scan (backend.Store.Scan, scan.go) or one op
// alone (backend.Store.RunOne).
func (h *Handler) exec(ctx context.Context, op backend.Op) backend.Result {
	if op.Kind == backend.OpScan {
		return h.scan(ctx, op)
	}
	return h.store.RunOne(ctx, op)
}

// lookup finds a command by name, in any case, without allocating or
// hashing: every PK command's name begins "pk.", which the other commands'
// names do not, and the seven are compared by length first. A map of the
// lower-cased name cost about 250 instructions a lookup, and a PK.PREPARE on
// redis:// is looked up twice (IsPK on the loop, then ParseBatch).
func (h *Handler) lookup(name []byte) *Spec {
	if len(name) < 4 || name[0]|0x20 != 'p' || name[1]|0x20 != 'k' || name[2] != '.' {
		return nil
	}
	for i := range specs {
		if s := &specs[i]; len(s.Name) == len(name) && asciiLowerEqual(name, s.Name) {
			return s
		}
	}
	return nil
}

// asciiLowerEqual reports whether b, its letters A-Z lowered, is lower
// (which has no upper-case letter): Redis's command names are ASCII, and
// bytes.EqualFold would also take Unicode's folds ("\u212a", the Kelvin
// sign, for k).
func asciiLowerEqual(b []byte, lower string) bool {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func (h *Handler) nowMs() int64 { return h.now().UnixMilli() }

// checkName validates the namespace and the key, in that order, so that a
// bad request is refused before the store sees it; nil when both are good.
// (Not variadic: the keys' slice was a copy per key, a call of memmove on
// WebAssembly: setOp.)
func (h *Handler) checkName(ns, key []byte) *Reply {
	if !validNamespace(ns) {
		return refuse(ErrNamespace.Reply())
	}
	return h.limits.checkKey(key)
}

// unavailable reports a store failure. It is never a :0: the command may or
// may not have taken effect, and the client must check before retrying.
// refused is the reply to arguments a store's layout cannot take
// (backend.Refusal, or a backend.Info.ArgCheck error): its text, which starts
// with ERR, as the whole line.
func refused(err error) Reply {
	return Reply{Kind: Error, Err: ErrRefused, Text: oneLine(err.Error())}
}

func unavailable(err error) Reply {
	return ErrUnavailable.Replyf(oneLine(err.Error()))
}

// Unavailable is the reply to a command the store did not answer in time
// (package protocol bounds every store call by the backend timeout).
func Unavailable(err error) Reply { return unavailable(err) }

// UnknownCommand is Redis's reply to a command nobody knows.
func UnknownCommand(args [][]byte) Reply {
	var list []byte
	for _, a := range args[1:] {
		if len(list) >= 128 {
			break
		}
		room := 128 - len(list)
		if len(a) > room {
			a = a[:room]
		}
		list = fmt.Appendf(list, "'%s' ", a)
	}
	name := args[0]
	if len(name) > 128 {
		name = name[:128]
	}
	return Reply{Kind: Error, Err: ErrUnknownCommand, Text: oneLine(ErrUnknownCommand.Linef(name, list))}
}
