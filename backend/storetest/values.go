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
func wrapValues(s Store, m *ValueMap) Store {
	vs := &valueStore{Store: s, m: m}
	if ex, ok := s.(execer); ok {
		return &valueExecStore{valueStore: vs, ex: ex}
	}
	return vs
}

// valueStore maps values around a store. After each call it overwrites
// the mapped arguments it passed, as the sidecar reuses its read buffer,
// so that a store keeping an argument without copying it still fails
// ArgumentsCopied.
type valueStore struct {
	Store
	m *ValueMap
}

type valueExecStore struct {
	*valueStore
	ex execer
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

func (s *valueStore) Prepare(ctx context.Context, ns string, key, value []byte, exp backend.Expiry) (bool, error) {
	v := s.in(value)
	defer scribble(v)
	return s.Store.Prepare(ctx, ns, key, v, exp)
}

func (s *valueStore) Get(ctx context.Context, ns string, key []byte) (backend.Record, bool, error) {
	rec, ok, err := s.Store.Get(ctx, ns, key)
	if err != nil || !ok {
		return rec, ok, err
	}
	rec, err = s.out(rec)
	return rec, err == nil, err
}

func (s *valueStore) Rollback(ctx context.Context, ns string, key []byte, ifeq backend.Cond) (bool, error) {
	c := s.cond(ifeq)
	defer scribble(c.Value)
	return s.Store.Rollback(ctx, ns, key, c)
}

func (s *valueStore) Reprepare(ctx context.Context, ns string, key, value []byte, ifeq backend.Cond, exp backend.Expiry) (bool, error) {
	v, c := s.in(value), s.cond(ifeq)
	defer scribble(v, c.Value)
	return s.Store.Reprepare(ctx, ns, key, v, c, exp)
}

func (s *valueStore) Move(ctx context.Context, ns string, newKey, newValue, oldKey, oldValue []byte, exp backend.Expiry) (backend.MoveResult, error) {
	nv, ov := s.in(newValue), s.in(oldValue)
	defer scribble(nv, ov)
	return s.Store.Move(ctx, ns, newKey, nv, oldKey, ov, exp)
}

func (s *valueStore) entries(entries []backend.Entry) []backend.Entry {
	out := make([]backend.Entry, len(entries))
	for i, e := range entries {
		out[i] = backend.Entry{NS: e.NS, Key: e.Key, Value: s.in(e.Value)}
	}
	return out
}

func (s *valueStore) MPrepare(ctx context.Context, entries []backend.Entry, exp backend.Expiry) (bool, error) {
	mapped := s.entries(entries)
	defer func() {
		for _, e := range mapped {
			scribble(e.Value)
		}
	}()
	return s.Store.MPrepare(ctx, mapped, exp)
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

// Exec maps the values of a transaction's ops and of their results.
func (s *valueExecStore) Exec(ctx context.Context, ops []backend.Op, res []backend.Result) error {
	mapped := make([]backend.Op, len(ops))
	for i, op := range ops {
		op.Value, op.OldValue = s.in(op.Value), s.in(op.OldValue)
		op.Cond = s.cond(op.Cond)
		op.Entries = s.entries(op.Entries)
		mapped[i] = op
	}
	if err := s.ex.Exec(ctx, mapped, res); err != nil {
		return err
	}
	for i := range res {
		if res[i].Err != nil || !res[i].Found {
			continue
		}
		rec, err := s.out(res[i].Record)
		if err != nil {
			res[i].Err = err
			continue
		}
		res[i].Record = rec
	}
	return nil
}
