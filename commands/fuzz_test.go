package commands

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/prepkey/prepkey/backend"
)

// splitArgs turns fuzz input into arguments: they are separated by 0x1f, so
// that the corpus stays readable while NUL, CR and LF remain data.
func splitArgs(in []byte) [][]byte {
	if len(in) == 0 {
		return nil
	}
	return bytes.Split(in, []byte{0x1f})
}

// FuzzDo checks that no input panics the parser and that the store is only
// ever called with arguments that passed every limit.
func FuzzDo(f *testing.F) {
	for _, seed := range []string{
		"PK.PREPARE\x1fns\x1fk\x1fv",
		"pk.prepare\x1fns\x1fk\x1fv\x1fEX\x1f10",
		"PK.PREPARE\x1fns\x1fk\x1fv\x1fPXAT\x1f99999999999999",
		"PK.GET\x1fns\x1fk",
		"PK.GETVALUE\x1fns\x1f\x00\r\n",
		"PK.ROLLBACK\x1fns\x1fk\x1fIFEQ\x1f",
		"PK.REPREPARE\x1fns\x1fk\x1fv\x1fKEEPTTL\x1fIFEQ\x1fo",
		"PK.REPREPARE\x1fns\x1fn\x1fv\x1fFROM\x1fo\x1fIFEQ\x1fx\x1fPX\x1f5",
		"PK.REPREPARE\x1fns\x1fn\x1fv\x1fFROM",
	} {
		f.Add([]byte(seed))
	}
	limits := Limits{MaxKeyBytes: 8, MaxValueBytes: 16}
	f.Fuzz(func(t *testing.T, in []byte) {
		args := splitArgs(in)
		if len(args) == 0 {
			return
		}
		st := &fakeStore{ok: true, move: backend.Moved}
		h := New(st, limits, func() time.Time { return now })
		r, ok := h.Do(context.Background(), args)
		if !ok {
			return
		}
		if r.Kind > Error {
			t.Fatalf("reply kind %d", r.Kind)
		}
		if r.Kind == Error && bytes.ContainsAny([]byte(r.Text), "\r\n") {
			t.Fatalf("error reply spans lines: %q", r.Text)
		}
		for _, c := range st.calls {
			if !validNamespace([]byte(c.ns)) {
				t.Fatalf("store called with namespace %q", c.ns)
			}
			for _, k := range []string{c.key, c.oldKey} {
				if len(k) > limits.MaxKeyBytes {
					t.Fatalf("store called with key of %d bytes", len(k))
				}
			}
			if c.key == "" || (c.op == "move" && (c.oldKey == "" || c.oldKey == c.key)) {
				t.Fatalf("store called with bad keys: %+v", c)
			}
			for _, v := range [][]byte{[]byte(c.value), []byte(c.oldValue), c.cond.Value} {
				if len(v) > limits.MaxValueBytes {
					t.Fatalf("store called with value of %d bytes", len(v))
				}
			}
			if c.exp.Kind == backend.KeepTTL && c.op != "reprepare" {
				t.Fatalf("KEEPTTL reached %s", c.op)
			}
			if c.exp.Kind != backend.NoExpiry && c.exp.Kind != backend.KeepTTL && (c.exp.Millis <= 0 || c.exp.Millis > maxTTLAt) {
				t.Fatalf("expiry out of range: %+v", c.exp)
			}
		}
	})
}
