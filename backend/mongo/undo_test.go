package mongo

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestUndoKeepsAnotherClientsChange: the undo of a composed command's
// reservation deletes the record only while it holds what the command
// wrote; a REPREPARE … KEEPTTL by another client in between (which changes
// the value alone) makes the record that client's, and it stays. In both
// layouts, for PK.MPREPARE and the key change. (Found by
// TestLinearizableMongo once its histories were no longer restricted.)
func TestUndoKeepsAnotherClientsChange(t *testing.T) {
	for _, layout := range []string{"prepkey", "wow"} {
		t.Run(layout, func(t *testing.T) {
			s := openTest(t, withLayout(t, serverURL(t), layout), Config{SweepInterval: -1})
			ctx, calls := t.Context(), backend.Calls{Runner: s}
			keep := backend.Expiry{Kind: backend.KeepTTL}
			prepare := func(key, value string) {
				t.Helper()
				ok, err := calls.Prepare(ctx, "ns", []byte(key), []byte(value), backend.Expiry{})
				require.NoError(t, err)
				require.True(t, ok, "prepare %s", key)
			}
			requireValue := func(key, value string) {
				t.Helper()
				rec, found, err := calls.Get(ctx, "ns", []byte(key))
				require.NoError(t, err)
				require.True(t, found, "%s is gone: the undo deleted another client's record", key)
				require.Equal(t, value, string(rec.Value), key)
			}
			// change runs another client's REPREPARE KEEPTTL of key when
			// the composed command is about to run step.
			var changeErr error
			change := func(step backend.Step, key, value string) {
				s.fault = func(st backend.Step) error {
					if st == step {
						var ok bool
						ok, changeErr = calls.Reprepare(ctx, "ns", []byte(key), []byte(value), backend.Cond{}, keep)
						if changeErr == nil && !ok {
							changeErr = backend.ErrInjected // not changed: the test proves nothing
						}
					}
					return nil
				}
				t.Cleanup(func() { s.fault = nil })
			}

			// MPREPARE a b: a reserved, changed by another client, b taken.
			prepare("b", `"taken"`)
			change(backend.Step{Name: "reserve", Index: 1}, "a", `"changed"`)
			ok, err := calls.MPrepare(ctx, []backend.Entry{{NS: "ns", Key: []byte("a"), Value: []byte(`"mine"`)}, {NS: "ns", Key: []byte("b"), Value: []byte(`"mine"`)}}, backend.Expiry{})
			require.NoError(t, changeErr)
			require.NoError(t, err)
			require.False(t, ok)
			requireValue("a", `"changed"`)
			requireValue("b", `"taken"`)

			// MOVE n from o, whose value does not match: n reserved,
			// changed by another client, the release of o finds no match.
			prepare("o", `"other"`)
			change(backend.Step{Name: "release"}, "n", `"changed"`)
			res, err := calls.Move(ctx, "ns", []byte("n"), []byte(`"mine"`), []byte("o"), []byte(`"mine"`), backend.Expiry{})
			require.NoError(t, changeErr)
			require.NoError(t, err)
			require.Equal(t, backend.OldKeyMismatch, res)
			requireValue("n", `"changed"`)
			requireValue("o", `"other"`)
		})
	}
}
