package client_test

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/client"
)

// The Go counterparts of clients/testdata/jackson.json's Kotlin classes.
type (
	jUser struct {
		UserID string `json:"userId"`
		Name   string `json:"name"`
	}
	jPrice struct {
		Sku    string  `json:"sku"`
		Amount float64 `json:"amount"`
	}
	jD struct {
		X float64 `json:"x"`
	}
	jN struct {
		I int32 `json:"i"`
		L int64 `json:"l"`
	}
	jB struct {
		OK   bool    `json:"ok"`
		Note *string `json:"note"`
	}
	jS struct {
		S string `json:"s"`
	}
	jLine struct {
		Sku string `json:"sku"`
		Qty int    `json:"qty"`
	}
	jOrder struct {
		ID    string  `json:"id"`
		Lines []jLine `json:"lines"`
		Total float64 `json:"total"`
	}
	jE struct {
		Tags  []string          `json:"tags"`
		Attrs map[string]string `json:"attrs"`
	}
)

// encodeAs encodes v with the default codec of its own type.
func encodeAs[T any](v T) ([]byte, error) { return client.JSON[T]().Encode(v) }

// TestJSONCodecJackson: the default codec writes every case of
// clients/testdata/jackson.json (the bytes Jackson writes for those Kotlin
// values, shared with the Python and Node helpers) byte for byte, and
// reads them back to the same value.
func TestJSONCodecJackson(t *testing.T) {
	var file struct {
		Cases []struct{ Name, Kotlin, Expected string }
	}
	raw, err := os.ReadFile("../clients/testdata/jackson.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &file))

	// Variables, not constants: Go folds 0.1 + 0.2 to exactly 0.3.
	a, b := 0.1, 0.2
	values := map[string]any{
		"strings":              jUser{"42", "Zoë"},
		"top-level string":     "abc",
		"double fraction":      jPrice{"A-1", 9.99},
		"double whole":         jD{100.0},
		"double 1e7":           jD{1.0e7},
		"double below 1e7":     jD{1234567.0},
		"double above 1e7":     jD{12345678.9},
		"double 1e-3":          jD{0.001},
		"double below 1e-3":    jD{1.0e-4},
		"double negative zero": jD{math.Copysign(0, -1)},
		"double shortest":      jD{a + b},
		"double large":         jD{1.0e21},
		"double negative":      jD{-2.5e-8},
		"int and long":         jN{-5, 9007199254740993},
		"boolean and null":     jB{true, nil},
		"escapes":              jS{"a\"b\\c\n\t\r\b\f\x01\x1f</script>&'\x7f\u2028😀"},
		"nested":               jOrder{"o1", []jLine{{"a", 2}, {"b", 1}}, 19.5},
		"empty collections":    jE{[]string{}, map[string]string{}},
	}
	require.Len(t, file.Cases, len(values), "a case of jackson.json without its Go value, or the reverse")
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			v, ok := values[c.Name]
			require.True(t, ok, "no Go value for %q (%s)", c.Name, c.Kotlin)
			got, err := encodeAs(v)
			require.NoError(t, err)
			require.Equal(t, c.Expected, string(got), "Kotlin: %s", c.Kotlin)
			// Decoding is encoding/json's: the same value back.
			back := decodeLike(t, v, got)
			require.Equal(t, v, back)
		})
	}
}

// decodeLike decodes b with the default codec of v's dynamic type.
func decodeLike(t *testing.T, v any, b []byte) any {
	t.Helper()
	var (
		out any
		err error
	)
	switch v.(type) {
	case jUser:
		out, err = client.JSON[jUser]().Decode(b)
	case string:
		out, err = client.JSON[string]().Decode(b)
	case jPrice:
		out, err = client.JSON[jPrice]().Decode(b)
	case jD:
		out, err = client.JSON[jD]().Decode(b)
	case jN:
		out, err = client.JSON[jN]().Decode(b)
	case jB:
		out, err = client.JSON[jB]().Decode(b)
	case jS:
		out, err = client.JSON[jS]().Decode(b)
	case jOrder:
		out, err = client.JSON[jOrder]().Decode(b)
	case jE:
		out, err = client.JSON[jE]().Decode(b)
	default:
		t.Fatalf("no decoder for %T", v)
	}
	require.NoError(t, err)
	return out
}

// TestJSONCodecGo: how Go's own types are written (the choices JSON's doc
// names), where jackson.json has no case.
func TestJSONCodecGo(t *testing.T) {
	type embedded struct {
		A int `json:"a"`
	}
	type tagged struct {
		embedded
		Skip     string `json:"-"`
		Untagged int
		Opt      string `json:"opt,omitempty"`
		private  int
	}
	when := time.Date(2026, 12, 3, 22, 5, 0, 120_000_000, time.UTC)
	note := "n"
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"float32 as Float.toString", struct{ F float32 }{0.1}, `{"F":0.1}`},
		{"float32 large", struct{ F float32 }{1.5e10}, `{"F":1.5E10}`},
		{"smallest double", jD{math.SmallestNonzeroFloat64}, `{"x":4.9E-324}`},
		{"smallest float32", struct{ F float32 }{math.SmallestNonzeroFloat32}, `{"F":1.4E-45}`},
		{"largest double", jD{math.MaxFloat64}, `{"x":1.7976931348623157E308}`},
		{"9999999.0 and 1e-3 bounds", []float64{9999999.0, 0.0009999}, `[9999999.0,9.999E-4]`},
		{"integers", []any{uint64(math.MaxUint64), int8(-8), int64(math.MinInt64)}, `[18446744073709551615,-8,-9223372036854775808]`},
		{"map keys sorted", map[string]int{"b": 2, "a": 1, "é": 3}, `{"a":1,"b":2,"é":3}`},
		{"integer map keys as strings", map[int]bool{10: true, 9: false}, `{"10":true,"9":false}`},
		{"nil slice and map: null", jE{}, `{"tags":null,"attrs":null}`},
		{"a set pointer", jB{false, &note}, `{"ok":false,"note":"n"}`},
		{"bytes as base64", struct{ B []byte }{[]byte("hi?")}, `{"B":"aGk/"}`},
		{"tags, embedded, omitempty, unexported", tagged{embedded{1}, "x", 2, "", 3}, `{"a":1,"Untagged":2}`},
		{"time.Time: RFC 3339", struct{ At time.Time }{when}, `{"At":"2026-12-03T22:05:00.12Z"}`},
		{"json.RawMessage compacted", json.RawMessage(`{ "a" : [1, 2] }`), `{"a":[1,2]}`},
		{"not UTF-8: U+FFFD", "a\xffb", "\"a\uFFFDb\""},
		{"U+2029 and DEL raw", "\u2029\x7f", "\"\u2029\x7f\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := encodeAs(c.v)
			require.NoError(t, err)
			require.Equal(t, c.want, string(got))
		})
	}

	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := encodeAs(jD{f})
		require.ErrorContains(t, err, "has no JSON form")
	}
	_, err := encodeAs(struct{ C chan int }{})
	require.ErrorContains(t, err, "unsupported type chan int")
	_, err = client.JSON[jD]().Decode([]byte(`{"x":"1"}`))
	require.ErrorContains(t, err, "prepkey: decoding client_test.jD")
}

// TestJSONCodecRoundTrip: every finite double goes through Java's form and
// back to the same bits (the shortest digits read back exactly).
func TestJSONCodecRoundTrip(t *testing.T) {
	codec := client.JSON[float64]()
	for _, f := range []float64{1, -1, 0.5, 1e-3, 9.999999e6, 1e7, 123456.789, 5e-324, 1e300, 3.141592653589793, 1.0 / 3} {
		b, err := codec.Encode(f)
		require.NoError(t, err)
		require.True(t, strings.Contains(string(b), "."), "%s has a fraction digit", b)
		back, err := codec.Decode(b)
		require.NoError(t, err)
		require.Equal(t, math.Float64bits(f), math.Float64bits(back), "%v -> %s", f, b)
	}
}
