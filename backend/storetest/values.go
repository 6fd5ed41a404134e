package storetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/prepkey/prepkey/backend"
)

// ValueMap is a one-to-one map between the suite's values (any bytes) and
// the values a store takes, for stores that take only some values (MongoDB
// in layout=wow takes JSON texts). The suite keeps its cases as written:
// the store under test is wrapped so that every value going in is mapped
// by In and every value coming out by Out, through every call (IFEQ
// conditions, key changes, MPREPARE entries, scans, transactions).
type ValueMap struct {
	In  func([]byte) []byte
	Out func([]byte) ([]byte, error)
}

// JSONValues maps every value to a JSON text standing for it: a JSON
// string literal when the value is UTF-8, else {"base64":"…"}. Two values
// map to two texts whose JSON differs, so comparisons keep their outcome.
var JSONValues = ValueMap{In: jsonIn, Out: jsonOut}

func jsonIn(v []byte) []byte {
	if utf8.Valid(v) {
		out, _ := json.Marshal(string(v)) // a string always marshals
		return out
	}
	out, _ := json.Marshal(map[string]string{"base64": base64.StdEncoding.EncodeToString(v)})
	return out
}

func jsonOut(v []byte) ([]byte, error) {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return []byte(s), nil
	}
	var b struct {
		Base64 *string `json:"base64"`
	}
	if err := json.Unmarshal(v, &b); err != nil || b.Base64 == nil {
		return nil, fmt.Errorf("value %q is not one the suite stored", v)
	}
	return base64.StdEncoding.DecodeString(*b.Base64)
}

// wrapValues returns s with its values mapped by m.
func wrapValues(s backend.Store, m *ValueMap) backend.Store { return &valueStore{Store: s, m: m} }

// valueStore maps values around a store: those of every op going into Run
// and those of every record coming out of Run and Scan. After each call it
// overwrites the mapped arguments it passed, as the sidecar reuses its read
// buffer, so that a store keeping an argument without copying it still
// fails ArgumentsCopied.
type valueStore struct {
	backend.Store
	m *ValueMap
}

func (s *valueStore) in(v []byte) []byte { return s.m.In(v) }

func (s *valueStore) cond(c backend.Cond) backend.Cond {
	if !c.Set {
		return c
	}
	return backend.IfEq(s.in(c.Value))
}

func scribble(bs ...[]byte) {
	for _, b := range bs {
		for i := range b {
			b[i] = '#'
		}
	}
}

func (s *valueStore) out(rec backend.Record) (backend.Record, error) {
	v, err := s.m.Out(rec.Value)
	if err != nil {
		return backend.Record{}, err
	}
	rec.Value = v
	return rec, nil
}

func (s *valueStore) entries(entries []backend.Entry) []backend.Entry {
	out := make([]backend.Entry, len(entries))
	for i, e := range entries {
		out[i] = backend.Entry{NS: e.NS, Key: e.Key, Value: s.in(e.Value)}
	}
	return out
}

// op maps the values of op. Every value field is mapped whatever the
// kind: a kind ignores those it does not take.
func (s *valueStore) op(op backend.Op) backend.Op {
	op.Value, op.OldValue = s.in(op.Value), s.in(op.OldValue)
	op.Cond = s.cond(op.Cond)
	op.Entries = s.entries(op.Entries)
	return op
}

// scribbleOp overwrites the mapped values of op once the store answered.
func scribbleOp(op backend.Op) {
	scribble(op.Value, op.OldValue, op.Cond.Value)
	for _, e := range op.Entries {
		scribble(e.Value)
	}
}

// result maps the value of the record in r.
func (s *valueStore) result(r backend.Result) backend.Result {
	if r.Err != nil || !r.Found {
		return r
	}
	rec, err := s.out(r.Record)
	if err != nil {
		return backend.Result{Err: err}
	}
	r.Record = rec
	return r
}

// Run maps the values of the ops and of the records in their results.
func (s *valueStore) Run(ctx context.Context, ops []backend.Op, res []backend.Result, iso backend.Isolation) error {
	mapped := make([]backend.Op, len(ops))
	for i, op := range ops {
		mapped[i] = s.op(op)
	}
	defer func() {
		for _, op := range mapped {
			scribbleOp(op)
		}
	}()
	if err := s.Store.Run(ctx, mapped, res, iso); err != nil {
		return err
	}
	for i := range ops {
		res[i] = s.result(res[i])
	}
	return nil
}

// RunOne maps the values of op and of the record in its result.
func (s *valueStore) RunOne(ctx context.Context, op backend.Op) backend.Result {
	mapped := s.op(op)
	defer scribbleOp(mapped)
	return s.result(s.Store.RunOne(ctx, mapped))
}

func (s *valueStore) Scan(ctx context.Context, ns string, pos []byte, count int) (backend.Page, error) {
	page, err := s.Store.Scan(ctx, ns, pos, count)
	if err != nil {
		return page, err
	}
	for i := range page.Records {
		if page.Records[i].Record, err = s.out(page.Records[i].Record); err != nil {
			return backend.Page{}, err
		}
	}
	return page, nil
}

// Info is the store's, with its layout's argument check (ArgCheck) run on
// the mapped values: the command layer checks an op before it reaches Run,
// on the values the suite wrote, which only the mapping makes the store's
// (layout=wow takes JSON; the suite writes any bytes).
func (s *valueStore) Info() backend.Info {
	info := s.Store.Info()
	if check := info.ArgCheck; check != nil {
		info.ArgCheck = func(op *backend.Op) error {
			mapped := s.op(*op)
			return check(&mapped)
		}
	}
	return info
}

// Submit maps the values of the ops and, once the store finished the
// submission, of the records in its results, as Run does: without its own
// Submit the promoted one would take the suite's values to the store
// unmapped. The store gets a submission of its own (the caller's may be
// watched already: changing its Done then raced with its deadline), which
// shares the caller's results and finishes the caller's as it finishes.
func (s *valueStore) Submit(sub *backend.Submission) {
	ops := sub.Ops
	mapped := make([]backend.Op, len(ops))
	for i, op := range ops {
		mapped[i] = s.op(op)
		if keep := op.Keep; keep != nil {
			mapped[i].Keep = func(r backend.ScanRecord) bool {
				rec, err := s.out(r.Record)
				if err != nil {
					return true // kept, and its mapping fails the result
				}
				r.Record = rec
				return keep(r)
			}
		}
	}
	in := &backend.Submission{Ops: mapped, Res: sub.Res, Isolation: sub.Isolation, Timeout: sub.Timeout, Loop: sub.Loop}
	in.Done = func(in *backend.Submission, how backend.Completion) {
		if how == backend.Dropped {
			return // the store's finish after its own deadline: answered already
		}
		if how == backend.Late {
			// The store armed a deadline of its own (an AtOnce store
			// taking megabytes elsewhere), and it answered: the store may
			// still read the mapped ops, which stay.
			sub.LateErr = in.LateErr
			sub.Finish(how)
			return
		}
		sub.Err = in.Err
		for i := range ops {
			if ops[i].Kind != backend.OpScan {
				sub.Res[i] = s.result(sub.Res[i])
				continue
			}
			if p := sub.Res[i].Page; p != nil {
				for j := range p.Records {
					rec, err := s.out(p.Records[j].Record)
					if err != nil {
						sub.Res[i] = backend.Result{Err: err}
						break
					}
					p.Records[j].Record = rec
				}
			}
		}
		for _, op := range mapped {
			scribbleOp(op)
		}
		sub.Finish(how)
	}
	s.Store.Submit(in)
}
