package mongo

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/prepkey/prepkey/backend"
)

// In layout=wow a value is the JSON text a Wow service's Jackson writes, and
// MongoDB holds it as the BSON that JSON stands for (docs/mongo.md, "Wow
// layout"). The conversion is written here rather than taken from the
// driver's extended-JSON reader, because that reader gives {"$oid": …},
// {"$date": …} and their kind a meaning, and a client's plain JSON must stay
// plain; and because the way back must be Jackson's compact style, in the
// stored field order.

// Replies to a command whose arguments layout=wow cannot store in MongoDB
// (the UTF-8 ones, shared with the Redis store, are package backend's).
const (
	errWowNotJSON    = "ERR value is not valid JSON (layout=wow)"
	errWowBSONPrefix = "ERR value cannot be stored in MongoDB (layout=wow): "
	errWowStored     = "ERR stored value is not JSON (layout=wow): "
)

// wowMaxDepth bounds the nesting of a value's arrays and objects: MongoDB
// refuses documents nested deeper than 100 levels, and the record around
// the value is one more.
const wowMaxDepth = 64

// wowMaxBSON bounds a value's BSON size below MongoDB's 16 MiB document
// limit, leaving room for the record's other fields.
const wowMaxBSON = 16<<20 - 4096

func refuseBSON(format string, args ...any) error {
	return &backend.Refusal{Text: errWowBSONPrefix + fmt.Sprintf(format, args...)}
}

// errNotJSON is the refusal the Redis store's layout=wow answers too.
var errNotJSON = backend.ErrValueNotJSON

// jsonToBSON parses the JSON text src into the BSON value it stands for:
// an object becomes an embedded document with its fields in the same
// order, a string a string, a whole number (no fraction, no exponent) an
// Int32 when it fits and else an Int64, any other number a Decimal128 of
// exactly its digits and exponent (as Wow's Jackson, reading floats as
// BigDecimal, and the Java driver's BigDecimal codec write it), and
// arrays, booleans and null themselves. What BSON or MongoDB cannot hold
// as given is refused (a *backend.Refusal), never changed: a field name
// starting with '$', holding '.' or NUL, a repeated field name, an integer
// beyond 64 bits, a number beyond a Decimal128, an unpaired surrogate.
func jsonToBSON(src []byte) (bson.RawValue, error) {
	if !utf8.Valid(src) {
		return bson.RawValue{}, errNotJSON
	}
	p := jsonParser{src: src}
	p.skipSpace()
	idx, doc := bsoncore.AppendDocumentStart(nil)
	doc, err := p.element(doc, "v", 0)
	if err != nil {
		return bson.RawValue{}, err
	}
	p.skipSpace()
	if p.i != len(src) {
		return bson.RawValue{}, errNotJSON
	}
	doc, err = bsoncore.AppendDocumentEnd(doc, idx)
	if err != nil {
		return bson.RawValue{}, err
	}
	if len(doc) > wowMaxBSON {
		return bson.RawValue{}, refuseBSON("larger than MongoDB's 16 MiB document limit as BSON")
	}
	return bson.Raw(doc).Lookup("v"), nil
}

type jsonParser struct {
	src []byte
	i   int
}

func (p *jsonParser) skipSpace() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// element parses the value at p.i and appends it to dst as the element
// named key.
func (p *jsonParser) element(dst []byte, key string, depth int) ([]byte, error) {
	if p.i >= len(p.src) {
		return nil, errNotJSON
	}
	switch c := p.src[p.i]; {
	case c == '{':
		if depth >= wowMaxDepth {
			return nil, refuseBSON("nested deeper than %d levels", wowMaxDepth)
		}
		idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
		dst, err := p.object(dst, depth+1)
		if err != nil {
			return nil, err
		}
		return bsoncore.AppendDocumentEnd(dst, idx)
	case c == '[':
		if depth >= wowMaxDepth {
			return nil, refuseBSON("nested deeper than %d levels", wowMaxDepth)
		}
		idx, dst := bsoncore.AppendArrayElementStart(dst, key)
		dst, err := p.array(dst, depth+1)
		if err != nil {
			return nil, err
		}
		return bsoncore.AppendArrayEnd(dst, idx)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return bsoncore.AppendStringElement(dst, key, s), nil
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number(dst, key)
	case p.literal("true"):
		return bsoncore.AppendBooleanElement(dst, key, true), nil
	case p.literal("false"):
		return bsoncore.AppendBooleanElement(dst, key, false), nil
	case p.literal("null"):
		return bsoncore.AppendNullElement(dst, key), nil
	}
	return nil, errNotJSON
}

func (p *jsonParser) literal(word string) bool {
	if !bytes.HasPrefix(p.src[p.i:], []byte(word)) {
		return false
	}
	p.i += len(word)
	return true
}

// object parses the members of an object after p.i's '{'.
func (p *jsonParser) object(dst []byte, depth int) ([]byte, error) {
	p.i++ // '{'
	p.skipSpace()
	if p.i < len(p.src) && p.src[p.i] == '}' {
		p.i++
		return dst, nil
	}
	var seen map[string]struct{}
	for {
		p.skipSpace()
		if p.i >= len(p.src) || p.src[p.i] != '"' {
			return nil, errNotJSON
		}
		name, err := p.str()
		if err != nil {
			return nil, err
		}
		if err := checkFieldName(name); err != nil {
			return nil, err
		}
		if seen == nil {
			seen = make(map[string]struct{})
		}
		if _, dup := seen[name]; dup {
			return nil, refuseBSON("duplicate field name %s", quoteName(name))
		}
		seen[name] = struct{}{}
		p.skipSpace()
		if p.i >= len(p.src) || p.src[p.i] != ':' {
			return nil, errNotJSON
		}
		p.i++
		p.skipSpace()
		if dst, err = p.element(dst, name, depth); err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.i >= len(p.src) {
			return nil, errNotJSON
		}
		switch p.src[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return dst, nil
		default:
			return nil, errNotJSON
		}
	}
}

// checkFieldName refuses the names MongoDB does not store as plain fields
// everywhere (a leading '$' is an operator, a '.' a path in updates and
// queries) and those BSON cannot hold (a name is NUL-terminated).
func checkFieldName(name string) error {
	switch {
	case strings.HasPrefix(name, "$"):
		return refuseBSON("field name %s starts with '$'", quoteName(name))
	case strings.Contains(name, "."):
		return refuseBSON("field name %s contains '.'", quoteName(name))
	case strings.Contains(name, "\x00"):
		return refuseBSON("field name %s contains NUL", quoteName(name))
	}
	return nil
}

// quoteName quotes a field name for an error reply: on one line, and short.
func quoteName(name string) string {
	if len(name) > 40 {
		cut := 40
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "…"
	}
	return strconv.Quote(name)
}

// array parses the elements of an array after p.i's '['; BSON names them
// "0", "1", ….
func (p *jsonParser) array(dst []byte, depth int) ([]byte, error) {
	p.i++ // '['
	p.skipSpace()
	if p.i < len(p.src) && p.src[p.i] == ']' {
		p.i++
		return dst, nil
	}
	for n := 0; ; n++ {
		p.skipSpace()
		var err error
		if dst, err = p.element(dst, strconv.Itoa(n), depth); err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.i >= len(p.src) {
			return nil, errNotJSON
		}
		switch p.src[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return dst, nil
		default:
			return nil, errNotJSON
		}
	}
}

// str parses the string at p.i's '"'. src is valid UTF-8 (checked once),
// so only escapes and control characters need care here.
func (p *jsonParser) str() (string, error) {
	p.i++ // '"'
	start := p.i
	for p.i < len(p.src) { // fast path: no escapes
		c := p.src[p.i]
		if c == '"' {
			s := string(p.src[start:p.i])
			p.i++
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", errNotJSON
		}
		p.i++
	}
	buf := append([]byte(nil), p.src[start:p.i]...)
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == '"':
			p.i++
			return string(buf), nil
		case c < 0x20:
			return "", errNotJSON
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		p.i++ // '\\'
		if p.i >= len(p.src) {
			return "", errNotJSON
		}
		e := p.src[p.i]
		p.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, err := p.unicodeEscape()
			if err != nil {
				return "", err
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", errNotJSON
		}
	}
	return "", errNotJSON
}

// unicodeEscape reads the XXXX of a \uXXXX escape (and a second one for a
// surrogate pair). An unpaired surrogate is valid JSON text but no
// character: UTF-8, and so BSON, cannot hold it.
func (p *jsonParser) unicodeEscape() (rune, error) {
	r, ok := p.hex4()
	if !ok {
		return 0, errNotJSON
	}
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	if r < 0xDC00 && bytes.HasPrefix(p.src[p.i:], []byte(`\u`)) {
		save := p.i
		p.i += 2
		if r2, ok := p.hex4(); ok {
			if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
				return c, nil
			}
		}
		p.i = save
	}
	return 0, refuseBSON(`a string holds an unpaired surrogate \u%04x`, r)
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.i+4 > len(p.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.src[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(v), true
}

// number parses a JSON number: digits alone are an integer (Int32 when it
// fits, else Int64; beyond 64 bits refused rather than rounded), anything
// with a fraction or an exponent (1.0 and 1e3 included) a Decimal128 with
// the text's own coefficient and exponent: "9.99" is 999×10⁻², "1.0E7"
// 10×10⁶, "-0.0" a negative zero. That is what Wow stores for a Kotlin
// Double (Jackson writes it with Double.toString, reads it back as a
// BigDecimal under USE_BIG_DECIMAL_FOR_FLOATS, and the driver encodes a
// BigDecimal as Decimal128), and MongoDB compares a Decimal128 9.99 and a
// Double 9.99 as different numbers, so a Double here would never match
// Wow's record. A number Decimal128 cannot hold exactly (more than 34
// significant digits, an exponent beyond ±6143) is refused, as the Java
// driver refuses it.
func (p *jsonParser) number(dst []byte, key string) ([]byte, error) {
	start := p.i
	if p.src[p.i] == '-' {
		p.i++
	}
	first := p.i
	if !p.digits() {
		return nil, errNotJSON
	}
	if p.src[first] == '0' && p.i-first > 1 { // "01" is not JSON; "0", "0.5" are
		return nil, errNotJSON
	}
	whole := true
	if p.i < len(p.src) && p.src[p.i] == '.' {
		whole = false
		p.i++
		if !p.digits() {
			return nil, errNotJSON
		}
	}
	if p.i < len(p.src) && (p.src[p.i] == 'e' || p.src[p.i] == 'E') {
		whole = false
		p.i++
		if p.i < len(p.src) && (p.src[p.i] == '+' || p.src[p.i] == '-') {
			p.i++
		}
		if !p.digits() {
			return nil, errNotJSON
		}
	}
	text := string(p.src[start:p.i])
	if whole {
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, refuseBSON("integer %s is outside the 64-bit range", shortNumber(text))
		}
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			return bsoncore.AppendInt32Element(dst, key, int32(n)), nil
		}
		return bsoncore.AppendInt64Element(dst, key, n), nil
	}
	d, err := bson.ParseDecimal128(text)
	if err != nil {
		return nil, refuseBSON("number %s has no exact Decimal128 form (at most 34 significant digits, exponent within ±6143)", shortNumber(text))
	}
	high, low := d.GetBytes()
	return bsoncore.AppendDecimal128Element(dst, key, high, low), nil
}

func (p *jsonParser) digits() bool {
	start := p.i
	for p.i < len(p.src) && '0' <= p.src[p.i] && p.src[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

func shortNumber(text string) string {
	if len(text) > 40 {
		return text[:40] + "…"
	}
	return text
}

// unreadable is why a stored value has no plain JSON form.
type unreadable struct{ why string }

func (u *unreadable) Error() string { return u.why }

// bsonToJSON appends the compact JSON of a stored value, in Jackson's style:
// no spaces, fields in stored order, strings escaped only where JSON
// requires (\" \\ \b \f \n \r \t, other control characters as \u00XX),
// non-ASCII as is, doubles as Java's Double.toString writes them,
// decimals as appendWowDecimal does. A value holding anything JSON has no
// form for (an ObjectId, a date, binary, a decimal NaN or infinity, a
// double NaN, a string that is not UTF-8, …) is an *unreadable error,
// unless extJSON is set: then that part is written as MongoDB's canonical
// Extended JSON (PK.SCAN shows every record that way, so that a scan never
// stops at one odd record).
func bsonToJSON(dst []byte, v bsoncore.Value, extJSON bool) ([]byte, error) {
	return appendJSONValue(dst, v, extJSON, "value")
}

func appendJSONValue(dst []byte, v bsoncore.Value, extJSON bool, path string) ([]byte, error) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		doc, ok := v.DocumentOK()
		if !ok {
			return nil, &unreadable{"malformed document at " + path}
		}
		elems, err := doc.Elements()
		if err != nil {
			return nil, &unreadable{"malformed document at " + path}
		}
		dst = append(dst, '{')
		for i, e := range elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			name := e.Key()
			if !utf8.ValidString(name) {
				return nil, &unreadable{"a field name that is not UTF-8 at " + path}
			}
			dst = appendJSONString(dst, name)
			dst = append(dst, ':')
			if dst, err = appendJSONValue(dst, e.Value(), extJSON, path+"."+name); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case bsoncore.TypeArray:
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, &unreadable{"malformed array at " + path}
		}
		vals, err := arr.Values()
		if err != nil {
			return nil, &unreadable{"malformed array at " + path}
		}
		dst = append(dst, '[')
		for i, e := range vals {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendJSONValue(dst, e, extJSON, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case bsoncore.TypeString:
		s, ok := v.StringValueOK()
		if ok && utf8.ValidString(s) {
			return appendJSONString(dst, s), nil
		}
	case bsoncore.TypeInt32:
		if n, ok := v.Int32OK(); ok {
			return strconv.AppendInt(dst, int64(n), 10), nil
		}
	case bsoncore.TypeInt64:
		if n, ok := v.Int64OK(); ok {
			return strconv.AppendInt(dst, n, 10), nil
		}
	case bsoncore.TypeDouble:
		if f, ok := v.DoubleOK(); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return appendJavaDouble(dst, f), nil
		}
	case bsoncore.TypeDecimal128:
		if high, low, ok := v.Decimal128OK(); ok {
			if out, ok := appendWowDecimal(dst, bson.NewDecimal128(high, low)); ok {
				return out, nil
			}
		}
	case bsoncore.TypeBoolean:
		if b, ok := v.BooleanOK(); ok {
			return strconv.AppendBool(dst, b), nil
		}
	case bsoncore.TypeNull:
		return append(dst, "null"...), nil
	}
	if extJSON {
		if ext, ok := canonicalExtJSON(v); ok {
			return append(dst, ext...), nil
		}
	}
	return nil, &unreadable{fmt.Sprintf("a BSON %s at %s", v.Type, path)}
}

// canonicalExtJSON is the driver's canonical Extended JSON of one value.
func canonicalExtJSON(v bsoncore.Value) ([]byte, bool) {
	doc := bsoncore.BuildDocument(nil, bsoncore.AppendValueElement(nil, "v", v))
	out, err := bson.MarshalExtJSON(bson.Raw(doc), true, false)
	if err != nil {
		return nil, false
	}
	inner, ok := bytes.CutPrefix(out, []byte(`{"v":`))
	if !ok || len(inner) == 0 || inner[len(inner)-1] != '}' {
		return nil, false
	}
	return inner[:len(inner)-1], true
}

const hexUpper = "0123456789ABCDEF"

// appendJSONString quotes s as Jackson does by default.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexUpper[c>>4], hexUpper[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendJavaDouble writes f as Java's Double.toString (JDK 19 and later,
// the shortest digits that read back as f): plain decimal with at least one
// fraction digit for 1e-3 <= |f| < 1e7 ("100.0", "0.001"), else
// scientific with a capital E ("1.0E7", "1.234E-5").
func appendJavaDouble(dst []byte, f float64) []byte {
	if f == 0 {
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest digits d1.d2d3…e±X; where one digit would do, Java takes
	// the two-digit decimal closest to f (4.9E-324, not 5e-324), and then
	// writes it without trailing zeros.
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	if !strings.Contains(sci, ".") {
		if two := strconv.FormatFloat(f, 'e', 1, 64); mustParse(two) == f {
			sci = two
		}
	}
	mant, expText, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	if trimmed := strings.TrimRight(digits, "0"); trimmed != "" {
		digits = trimmed
	}
	if f >= 1e-3 && f < 1e7 {
		if exp >= 0 {
			intLen := exp + 1
			for len(digits) < intLen {
				digits += "0"
			}
			frac := digits[intLen:]
			if frac == "" {
				frac = "0"
			}
			dst = append(dst, digits[:intLen]...)
			dst = append(dst, '.')
			return append(dst, frac...)
		}
		dst = append(dst, "0."...)
		dst = append(dst, strings.Repeat("0", -exp-1)...)
		return append(dst, digits...)
	}
	frac := digits[1:]
	if frac == "" {
		frac = "0"
	}
	dst = append(dst, digits[0], '.')
	dst = append(dst, frac...)
	dst = append(dst, 'E')
	return strconv.AppendInt(dst, int64(exp), 10)
}

func mustParse(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// appendWowDecimal writes a stored Decimal128 as the JSON a Wow service
// gives back for it: Wow reads the record's value into a Kotlin object, and
// a Decimal128 there lands in a Double field (what a JSON fraction stands
// for), which Jackson writes with Double.toString: Decimal128 9.99 is
// "9.99", 1.0E+7 is "1.0E7", 5 is "5.0". Where the decimal holds more than
// a double can (0.1000000000000000000001, 1E+400), the double's text would
// be another number, so the decimal's own exact digits are written instead
// (still JSON; what a BigDecimal field would hold): the sidecar never
// changes a stored number silently. NaN and the infinities have no JSON.
func appendWowDecimal(dst []byte, d bson.Decimal128) ([]byte, bool) {
	if d.IsNaN() || d.IsInf() != 0 {
		return nil, false
	}
	text := d.String()
	if f, err := strconv.ParseFloat(text, 64); err == nil && !math.IsInf(f, 0) {
		java := appendJavaDouble(nil, f)
		if sameDecimal(string(java), text) {
			return append(dst, java...), true
		}
	}
	// The driver writes the decimal in the spec's form ("1.0E+7",
	// "0.0001000", "-0"), which is valid JSON as it is.
	return append(dst, text...), true
}

// sameDecimal reports whether two decimal texts (digits, an optional '.',
// an optional exponent) stand for the same number; the sign of a zero
// counts, so that -0.0 is not written back as 0.0.
func sameDecimal(a, b string) bool {
	an, ad, ae := normDecimal(a)
	bn, bd, be := normDecimal(b)
	return an == bn && ad == bd && (ad == "" || ae == be)
}

// normDecimal splits a decimal text into its sign, its significant digits
// (no leading or trailing zeros; "" for zero) and the exponent of the last
// of them.
func normDecimal(s string) (neg bool, digits string, exp int) {
	if neg = strings.HasPrefix(s, "-"); neg {
		s = s[1:]
	}
	mant, expText, found := strings.Cut(strings.ToUpper(s), "E")
	if found {
		exp, _ = strconv.Atoi(expText)
	}
	if whole, frac, ok := strings.Cut(mant, "."); ok {
		mant = whole + frac
		exp -= len(frac)
	}
	mant = strings.TrimLeft(mant, "0")
	trimmed := strings.TrimRight(mant, "0")
	exp += len(mant) - len(trimmed)
	return neg, trimmed, exp
}
