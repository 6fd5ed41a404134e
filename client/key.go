package client

import (
	"context"
	"time"
)

// Key is one namespace with typed values: Client's methods bound to name,
// each value written and read by a Codec (JSON, Jackson's bytes, unless
// another is given). Wow's PrepareKey<V> is the same thing on the JVM, and
// with the default codec both write the same bytes for the same value, so
// either side's IFEQ matches the other's records.
//
//	usernames := client.NewKey[User](pk, "username", nil)
//	err := usernames.UsingPrepare(ctx, "alice", User{ID: "42"}, signUp, client.TTL(10*time.Minute))
//
// A Key holds no state but its three fields: safe for concurrent use, and
// as many as wanted may share one Client.
type Key[T any] struct {
	pk    *Client
	name  string
	codec Codec[T]
}

// NewKey returns the Key of namespace name over pk, its values written by
// codec (JSON[T]() when nil). An invalid name is refused by each method, as
// Client's methods do (ErrInvalidArgument).
func NewKey[T any](pk *Client, name string, codec Codec[T]) *Key[T] {
	if codec == nil {
		codec = JSON[T]()
	}
	return &Key[T]{pk: pk, name: name, codec: codec}
}

// Name returns the namespace.
func (k *Key[T]) Name() string { return k.name }

// Encode returns value's bytes as the Key writes them: what IFEQ compares.
func (k *Key[T]) Encode(value T) ([]byte, error) { return k.codec.Encode(value) }

// KeyRecord is a Key's record as GetValue returns it.
type KeyRecord[T any] struct {
	Value T
	// ExpiresAt is when the record expires; the zero time when Forever.
	ExpiresAt time.Time
	Forever   bool
}

// Live tells whether the record is live at now (see Record.Live).
func (r KeyRecord[T]) Live(now time.Time) bool { return r.Forever || now.Before(r.ExpiresAt) }

// Prepare is Client.Prepare with value encoded. An encoding error is
// returned before anything is sent.
func (k *Key[T]) Prepare(ctx context.Context, key string, value T, exp ...Expiry) (bool, error) {
	b, err := k.codec.Encode(value)
	if err != nil {
		return false, err
	}
	return k.pk.Prepare(ctx, k.name, key, b, exp...)
}

// Get is Client.Get with the value decoded; a value the codec cannot read
// is an error (and ok false).
func (k *Key[T]) Get(ctx context.Context, key string) (value T, ok bool, err error) {
	b, ok, err := k.pk.Get(ctx, k.name, key)
	if err != nil || !ok {
		return value, false, err
	}
	if value, err = k.codec.Decode(b); err != nil {
		return value, false, err
	}
	return value, true, nil
}

// GetValue is Client.GetValue with the value decoded.
func (k *Key[T]) GetValue(ctx context.Context, key string) (rec KeyRecord[T], ok bool, err error) {
	raw, ok, err := k.pk.GetValue(ctx, k.name, key)
	if err != nil || !ok {
		return rec, false, err
	}
	v, err := k.codec.Decode(raw.Value)
	if err != nil {
		return rec, false, err
	}
	return KeyRecord[T]{Value: v, ExpiresAt: raw.ExpiresAt, Forever: raw.Forever}, true, nil
}

// Rollback is Client.Rollback: key's record deleted whatever its value.
func (k *Key[T]) Rollback(ctx context.Context, key string) (bool, error) {
	return k.pk.Rollback(ctx, k.name, key)
}

// RollbackIfEq is Client.RollbackIfEq with value encoded: key's record
// deleted if it holds exactly value's bytes.
func (k *Key[T]) RollbackIfEq(ctx context.Context, key string, value T) (bool, error) {
	b, err := k.codec.Encode(value)
	if err != nil {
		return false, err
	}
	return k.pk.RollbackIfEq(ctx, k.name, key, b)
}

// IfEq is the IfEq option of Reprepare with current encoded; an encoding
// error is returned by Reprepare before anything is sent.
func (k *Key[T]) IfEq(current T) ReprepareOption {
	b, err := k.codec.Encode(current)
	return keyIfEq{b: b, err: err}
}

type keyIfEq struct {
	b   []byte
	err error
}

func (o keyIfEq) applyReprepare(r *reprepareArgs) {
	if o.err != nil {
		r.err = o.err
		return
	}
	r.ifEq = append(r.ifEq, o.b)
}

// Reprepare is Client.Reprepare with value encoded; options as there (IfEq
// from k.IfEq, or client.IfEq with bytes).
func (k *Key[T]) Reprepare(ctx context.Context, key string, value T, opts ...ReprepareOption) (bool, error) {
	b, err := k.codec.Encode(value)
	if err != nil {
		return false, err
	}
	return k.pk.Reprepare(ctx, k.name, key, b, opts...)
}

// ChangeKey is Client.ChangeKey with both values encoded.
func (k *Key[T]) ChangeKey(ctx context.Context, oldKey string, oldValue T, newKey string, newValue T, exp ...Expiry) (bool, error) {
	oldB, err := k.codec.Encode(oldValue)
	if err != nil {
		return false, err
	}
	newB, err := k.codec.Encode(newValue)
	if err != nil {
		return false, err
	}
	return k.pk.ChangeKey(ctx, k.name, oldKey, oldB, newKey, newB, exp...)
}

// UsingPrepare is Client.UsingPrepare with value encoded: the rollback's
// IFEQ and the rule that tells a resent prepare's reservation as ours
// compare these bytes, so value should identify the writer (a command id),
// not only the key's owner.
func (k *Key[T]) UsingPrepare(ctx context.Context, key string, value T,
	fn func(ctx context.Context, prepared bool) error, exp ...Expiry) error {
	b, err := k.codec.Encode(value)
	if err != nil {
		return err
	}
	return k.pk.UsingPrepare(ctx, k.name, key, b, fn, exp...)
}
