package mongo

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/prepkey/prepkey/backend"
)

func toJSON(t *testing.T, v bson.RawValue, extJSON bool) (string, error) {
	t.Helper()
	out, err := bsonToJSON(nil, bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}, extJSON)
	return string(out), err
}

// rawOf is the BSON value of x as the driver marshals it.
func rawOf(t *testing.T, x any) bson.RawValue {
	t.Helper()
	doc, err := bson.Marshal(bson.D{{Key: "v", Value: x}})
	require.NoError(t, err)
	return bson.Raw(doc).Lookup("v")
}

// TestJSONToBSON: each JSON form becomes the BSON that WOW-LAYOUT names,
// field order kept, and comes back as Jackson writes it.
func TestJSONToBSON(t *testing.T) {
	for _, tc := range []struct {
		json string
		bson any    // what the value must equal, as the driver marshals it
		back string // the JSON read back; the input when empty
	}{
		{`{"userId":"42","name":"Ann"}`, bson.D{{Key: "userId", Value: "42"}, {Key: "name", Value: "Ann"}}, ""},
		{`{"b":1,"a":2}`, bson.D{{Key: "b", Value: int32(1)}, {Key: "a", Value: int32(2)}}, ""},
		{` { "b" : 1 ,	"a":[ true , false,null ] }` + "\n", bson.D{{Key: "b", Value: int32(1)}, {Key: "a", Value: bson.A{true, false, nil}}}, `{"b":1,"a":[true,false,null]}`},
		{`"abc"`, "abc", ""},
		{`""`, "", ""},
		{`2147483647`, int32(math.MaxInt32), ""},
		{`-2147483648`, int32(math.MinInt32), ""},
		{`2147483648`, int64(math.MaxInt32 + 1), ""},
		{`-9223372036854775808`, int64(math.MinInt64), ""},
		{`9223372036854775807`, int64(math.MaxInt64), ""},
		{`-0`, int32(0), `0`},
		// A fraction or an exponent: a Decimal128 of the text's own
		// coefficient and exponent (what Jackson's BigDecimal and the
		// Java driver store for a Kotlin Double), read back as
		// Double.toString writes the double Wow would read it into.
		{`9.99`, decOf(false, 999, -2), ""},
		{`1.0E7`, decOf(false, 10, 6), ""},
		{`-0.0`, decOf(true, 0, -1), ""},
		{`1.5`, decOf(false, 15, -1), ""},
		{`1.0`, decOf(false, 10, -1), ""},
		{`1e3`, decOf(false, 1, 3), `1000.0`},
		{`1E+3`, decOf(false, 1, 3), `1000.0`},
		{`0.001`, decOf(false, 1, -3), ""},
		{`0.0001`, decOf(false, 1, -4), `1.0E-4`},
		{`1.0E-4`, decOf(false, 10, -5), ""},
		{`1234567.0`, decOf(false, 12345670, -1), ""},
		{`12345678.0`, decOf(false, 123456780, -1), `1.2345678E7`},
		{`-1.25e-7`, decOf(true, 125, -9), `-1.25E-7`},
		{`0.1`, decOf(false, 1, -1), ""},
		{`0.30000000000000004`, decOf(false, 30000000000000004, -17), ""},
		{`4.9E-324`, decOf(false, 49, -325), ""},
		{`1.7976931348623157E308`, decOf(false, 17976931348623157, 292), ""},
		// More than a double holds: the decimal's exact digits come
		// back, never a rounded double.
		{`0.1000000000000000000001`, decOfBig(false, "1000000000000000000001", -22), ""},
		{`123456789.123456789`, decOf(false, 123456789123456789, -9), ""},
		{`1e-400`, decOf(false, 1, -400), `1E-400`},
		{`1e400`, decOf(false, 1, 400), `1E+400`},
		// 36 digits whose last two are zeros fit 34 exactly (the Java
		// driver rounds them away too).
		{`1.00000000000000000000000000000000000`, decOfBig(false, "1000000000000000000000000000000000", -33), `1.0`},
		{`[]`, bson.A{}, ""},
		{`{}`, bson.D{}, ""},
		{`{"a":{"b":{"c":[1,{"d":"e"}]}}}`, bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: bson.D{{Key: "c", Value: bson.A{int32(1), bson.D{{Key: "d", Value: "e"}}}}}}}}}, ""},
		// Escapes: only what JSON requires comes back escaped, the rest
		// as is, like Jackson.
		{`"\u0041\/\"\\\b\f\n\r\t\u0001\u001f\u007f"`, "A/\"\\\b\f\n\r\t\x01\x1f\x7f", `"A/\"\\\b\f\n\r\t\u0001\u001F` + "\x7f" + `"`},
		{`"é😀\u00e9\ud83d\ude00"`, "é😀é😀", `"é😀é😀"`},
		{`"a\u0000b"`, "a\x00b", `"a\u0000b"`},
		{`{"$":1}`, nil, "refused"},
		// Plain JSON stays plain: no extended-JSON meaning.
		{`{"x":{"oid":"5f0000000000000000000000"}}`, bson.D{{Key: "x", Value: bson.D{{Key: "oid", Value: "5f0000000000000000000000"}}}}, ""},
	} {
		t.Run(tc.json, func(t *testing.T) {
			v, err := jsonToBSON([]byte(tc.json))
			if tc.back == "refused" {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			want := rawOf(t, tc.bson)
			require.Equal(t, want.Type, v.Type, "BSON type")
			require.Equal(t, want.Value, v.Value, "BSON bytes")
			back := tc.back
			if back == "" {
				back = tc.json
			}
			got, err := toJSON(t, v, false)
			require.NoError(t, err)
			require.Equal(t, back, got)
			require.True(t, json.Valid([]byte(got)), got)
		})
	}
}

// TestJSONRefused: what is not JSON, and what MongoDB cannot store as
// given, is refused with its reply, never changed.
func TestJSONRefused(t *testing.T) {
	const notJSON = "ERR value is not valid JSON (layout=wow)"
	for _, tc := range []struct{ json, reply string }{
		{``, notJSON},
		{` `, notJSON},
		{`abc`, notJSON},
		{`{"a":1,}`, notJSON},
		{`[1,]`, notJSON},
		{`{"a" 1}`, notJSON},
		{`{a:1}`, notJSON},
		{`'a'`, notJSON},
		{`"a`, notJSON},
		{"\"a\nb\"", notJSON},
		{`"\x"`, notJSON},
		{`"\u12"`, notJSON},
		{`01`, notJSON},
		{`-`, notJSON},
		{`1.`, notJSON},
		{`.5`, notJSON},
		{`1e`, notJSON},
		{`+1`, notJSON},
		{`NaN`, notJSON},
		{`Infinity`, notJSON},
		{`1 2`, notJSON},
		{`{} {}`, notJSON},
		{`tru`, notJSON},
		{`nulll`, notJSON},
		{"\"\xff\"", notJSON},
		{`{"$oid":"5f0000000000000000000000"}`, `ERR value cannot be stored in MongoDB (layout=wow): field name "$oid" starts with '$'`},
		{`{"a":{"$date":1}}`, `ERR value cannot be stored in MongoDB (layout=wow): field name "$date" starts with '$'`},
		{`{"a.b":1}`, `ERR value cannot be stored in MongoDB (layout=wow): field name "a.b" contains '.'`},
		{`{"a\u0000":1}`, `ERR value cannot be stored in MongoDB (layout=wow): field name "a\x00" contains NUL`},
		{`{"a":1,"a":2}`, `ERR value cannot be stored in MongoDB (layout=wow): duplicate field name "a"`},
		{`9223372036854775808`, `ERR value cannot be stored in MongoDB (layout=wow): integer 9223372036854775808 is outside the 64-bit range`},
		{`-9223372036854775809`, `ERR value cannot be stored in MongoDB (layout=wow): integer -9223372036854775809 is outside the 64-bit range`},
		{`1e6145`, `ERR value cannot be stored in MongoDB (layout=wow): number 1e6145 has no exact Decimal128 form (at most 34 significant digits, exponent within ±6143)`},
		{`1.2345678901234567890123456789012345`, `ERR value cannot be stored in MongoDB (layout=wow): number 1.2345678901234567890123456789012345 has no exact Decimal128 form (at most 34 significant digits, exponent within ±6143)`},
		{`"\ud800"`, `ERR value cannot be stored in MongoDB (layout=wow): a string holds an unpaired surrogate \ud800`},
		{`"\udc00\ud800"`, `ERR value cannot be stored in MongoDB (layout=wow): a string holds an unpaired surrogate \udc00`},
		{strings.Repeat("[", 65) + strings.Repeat("]", 65), "ERR value cannot be stored in MongoDB (layout=wow): nested deeper than 64 levels"},
	} {
		t.Run(tc.json, func(t *testing.T) {
			_, err := jsonToBSON([]byte(tc.json))
			var r *backend.Refusal
			require.ErrorAs(t, err, &r)
			require.Equal(t, tc.reply, r.Text)
		})
	}
	// 64 levels are fine.
	_, err := jsonToBSON([]byte(strings.Repeat("[", 64) + strings.Repeat("]", 64)))
	require.NoError(t, err)
}

// FuzzJSONToBSON: whatever the standard library calls valid
// JSON the parser takes (or refuses for a BSON reason, never as "not
// JSON"), and the other way round.
func FuzzJSONToBSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true]}`, `"\ud83d\ude00"`, `-0.0e-0`, `{"a":{"b":1}}`, `[[],{}]`, `1E400`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := jsonToBSON([]byte(s))
		// JSON text is Unicode: the standard library lets invalid UTF-8
		// through inside strings, the store does not.
		valid := json.Valid([]byte(s)) && utf8.ValidString(s)
		if err == nil {
			require.True(t, valid, "took %q", s)
			out, err := toJSON(t, v, false)
			require.NoError(t, err)
			require.True(t, json.Valid([]byte(out)), "wrote %q for %q", out, s)
			// The JSON written converts to BSON that is written the same
			// way again (a fraction's BSON can change on the way, "1e3"
			// is 1E+3 and "1000.0" is 10000E-1, its value cannot).
			again, err := jsonToBSON([]byte(out))
			require.NoError(t, err, "re-reading %q", out)
			out2, err := toJSON(t, again, false)
			require.NoError(t, err)
			require.Equal(t, out, out2, "round trip of %q through %q", s, out)
			return
		}
		r, ok := err.(*backend.Refusal)
		require.True(t, ok, "error %v", err)
		if r.Text == errWowNotJSON {
			require.False(t, valid, "refused valid JSON %q", s)
		}
	})
}

// TestBSONToJSONUnreadable: a stored value with parts JSON has no form for
// is unreadable, or written as canonical Extended JSON when asked (SCAN).
func TestBSONToJSONUnreadable(t *testing.T) {
	oid, err := bson.ObjectIDFromHex("5f0000000000000000000001")
	require.NoError(t, err)
	for _, tc := range []struct {
		value any
		why   string
		ext   string
	}{
		{oid, "a BSON objectID at value", `{"$oid":"5f0000000000000000000001"}`},
		{bson.D{{Key: "a", Value: bson.A{int32(1), bson.DateTime(0)}}}, "a BSON UTC datetime at value.a[1]", `{"a":[1,{"$date":{"$numberLong":"0"}}]}`},
		{bson.Binary{Data: []byte{1}}, "a BSON binary at value", `{"$binary":{"base64":"AQ==","subType":"00"}}`},
		{math.NaN(), "a BSON double at value", `{"$numberDouble":"NaN"}`},
		{math.Inf(1), "a BSON double at value", `{"$numberDouble":"Infinity"}`},
		{bson.NewDecimal128(0x7c00000000000000, 0), "a BSON 128-bit decimal at value", `{"$numberDecimal":"NaN"}`},
		{bson.NewDecimal128(0xf800000000000000, 0), "a BSON 128-bit decimal at value", `{"$numberDecimal":"-Infinity"}`},
	} {
		t.Run(tc.why, func(t *testing.T) {
			v := rawOf(t, tc.value)
			_, err := toJSON(t, v, false)
			require.EqualError(t, err, tc.why)
			got, err := toJSON(t, v, true)
			require.NoError(t, err)
			require.Equal(t, tc.ext, got)
		})
	}
	// A string that is not UTF-8 (BSON does not check) is unreadable too.
	bad := bson.RawValue{Type: bson.TypeString, Value: bsoncore.AppendString(nil, "a\xffb")}
	_, err = toJSON(t, bad, false)
	require.EqualError(t, err, "a BSON string at value")
}

func TestJavaDouble(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{1, "1.0"}, {100, "100.0"}, {0.5, "0.5"}, {0.001, "0.001"}, {9999999, "9999999.0"},
		{1e7, "1.0E7"}, {1.5e300, "1.5E300"}, {1e-4, "1.0E-4"}, {123.456, "123.456"},
		{-2.5, "-2.5"}, {math.MaxFloat64, "1.7976931348623157E308"}, {5e-324, "4.9E-324"},
		{0.30000000000000004, "0.30000000000000004"}, {1e21, "1.0E21"}, {1234567.125, "1234567.125"},
	} {
		require.Equal(t, tc.want, string(appendJavaDouble(nil, tc.f)), "%v", tc.f)
	}
}

// decOf builds a Decimal128 from its parts by the IEEE 754-2008 BID layout
// (sign bit, 14-bit exponent biased by 6176, 113-bit coefficient), not with
// the driver's parser, so that the tests pin the bytes independently of
// the code under test.
func decOf(neg bool, coeff uint64, exp int) bson.Decimal128 {
	return decOfBig(neg, strconv.FormatUint(coeff, 10), exp)
}

func decOfBig(neg bool, coeff string, exp int) bson.Decimal128 {
	c, ok := new(big.Int).SetString(coeff, 10)
	if !ok || c.BitLen() > 113 {
		panic("decOf: coefficient " + coeff)
	}
	low := c.Uint64()
	high := new(big.Int).Rsh(c, 64).Uint64() | uint64(exp+6176)<<49
	if neg {
		high |= 1 << 63
	}
	return bson.NewDecimal128(high, low)
}

// TestDecimalToJSON: a Decimal128 stored by Wow (or anyone) reads back as
// the JSON Wow gives for it, whatever its exponent.
func TestDecimalToJSON(t *testing.T) {
	for _, tc := range []struct {
		d    bson.Decimal128
		want string
	}{
		{decOf(false, 999, -2), "9.99"},
		{decOf(false, 9990, -3), "9.99"}, // same number, another exponent
		{decOf(false, 10, 6), "1.0E7"},
		{decOf(false, 1, 7), "1.0E7"},
		{decOf(false, 5, 0), "5.0"},
		{decOf(false, 0, -1), "0.0"}, // what the Java driver stores for -0.0 (BigDecimal has no negative zero)
		{decOf(true, 0, 0), "-0.0"},
		{decOf(false, 0, 300), "0.0"},
		{decOf(true, 25, -1), "-2.5"},
		{decOf(false, 1, -22), "1.0E-22"},
		{decOfBig(false, "1000000000000000000001", -22), "0.1000000000000000000001"},
		{decOf(false, 1, 6111), "1E+6111"},
		{decOfBig(false, "9999999999999999999999999999999999", -6176), "9.999999999999999999999999999999999E-6143"},
	} {
		v := rawOf(t, tc.d)
		got, err := toJSON(t, v, false)
		require.NoError(t, err, tc.d.String())
		require.Equal(t, tc.want, got, tc.d.String())
		require.True(t, json.Valid([]byte(got)), got)
	}
}
