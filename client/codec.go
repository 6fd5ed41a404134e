package client

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Codec turns a Key's values into a record's bytes and back.
type Codec[T any] interface {
	Encode(v T) ([]byte, error)
	Decode(b []byte) (T, error)
}

// JSON returns the default Codec: JSON written byte for byte as Jackson
// (Wow's JsonSerializer) writes the Kotlin data class a Go struct mirrors,
// so that an IFEQ (RollbackIfEq, IfEq, ChangeKey) matches a record Wow wrote
// on the same Redis (layout=wow), and Wow's IFEQ matches ours. Decoding is
// encoding/json's.
//
// What it writes, and how Go types map to Kotlin ones:
//
//   - compact: no space or newline anywhere;
//   - a struct's fields in declaration order, as a data class's constructor
//     properties (Jackson's order): name them with encoding/json's tags
//     (`json:"userId"`), skip with `json:"-"`; omitempty is honoured when
//     given, as Jackson's @JsonInclude(NON_EMPTY) would be, but a Kotlin
//     class without that annotation writes its nulls, so leave it out to
//     match. Embedded structs without a tag are flattened, as
//     encoding/json does (without its rules for conflicting names);
//   - nil pointers, interfaces, slices and maps as null, as encoding/json:
//     a Kotlin List that is never null is an empty (non-nil) slice here;
//   - float64 as Java's Double.toString (shortest digits that read back the
//     same; plain with at least one fraction digit when 1e-3 <= |x| < 1e7,
//     else d.dddE[-]n: 100.0, 1.0E7, 1.0E-4, -0.0), float32 as
//     Float.toString; NaN and infinities are an error (Jackson writes them
//     as strings encoding/json cannot read back);
//   - integers as their digits; bool as true/false; []byte as base64 (both
//     write it so);
//   - strings escaping only " \ and the controls below 0x20 (\b \t \n \f \r,
//     the others \u00XX in upper-case hex): no HTML escaping, and DEL,
//     U+2028, U+2029 and every non-ASCII rune raw UTF-8; a byte that is not
//     UTF-8 is written as U+FFFD, as encoding/json does;
//   - a map's keys sorted (by their string form, as encoding/json): Go maps
//     have no order, while a Kotlin LinkedHashMap writes its insertion
//     order, so a map of more than one key matches Wow's bytes only when
//     Wow's map was in sorted order too;
//   - a json.Marshaler's own output, compacted; an encoding.TextMarshaler as
//     a string. time.Time is a json.Marshaler: RFC 3339 with the fewest
//     fraction digits, where Jackson 3 writes an Instant's fraction in groups
//     of three: a value compared with IFEQ should carry epoch milliseconds
//     (an int64) rather than a time.Time.
func JSON[T any]() Codec[T] { return jsonCodec[T]{} }

type jsonCodec[T any] struct{}

func (jsonCodec[T]) Encode(v T) ([]byte, error) {
	var e jacksonEncoder
	if err := e.value(reflect.ValueOf(&v).Elem()); err != nil {
		return nil, fmt.Errorf("prepkey: encoding %T: %w", v, err)
	}
	return e.buf, nil
}

func (jsonCodec[T]) Decode(b []byte) (T, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("prepkey: decoding %T: %w", v, err)
	}
	return v, nil
}

// jacksonEncoder writes Go values as Jackson writes their Kotlin
// counterparts (see JSON).
type jacksonEncoder struct {
	buf []byte
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

func (e *jacksonEncoder) value(v reflect.Value) error {
	if !v.IsValid() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	t := v.Type()
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && v.CanAddr() &&
		!t.Implements(jsonMarshalerType) && !t.Implements(textMarshalerType) &&
		(reflect.PointerTo(t).Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)) {
		v = v.Addr() // a method on the pointer, called as encoding/json does
		t = v.Type()
	}
	if t.Implements(jsonMarshalerType) {
		if (t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface) && v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		b, err := v.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return err
		}
		var out bytes.Buffer
		if err := json.Compact(&out, b); err != nil {
			return fmt.Errorf("%s's MarshalJSON: %w", t, err)
		}
		e.buf = append(e.buf, out.Bytes()...)
		return nil
	}
	if t.Implements(textMarshalerType) {
		if (t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface) && v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return err
		}
		e.string(string(b))
		return nil
	}
	switch t.Kind() {
	case reflect.Bool:
		e.buf = strconv.AppendBool(e.buf, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
	case reflect.Float32:
		return e.float(v.Float(), 32)
	case reflect.Float64:
		return e.float(v.Float(), 64)
	case reflect.String:
		if t == reflect.TypeFor[json.Number]() {
			n := v.String()
			if n == "" {
				n = "0"
			}
			e.buf = append(e.buf, n...)
			return nil
		}
		e.string(v.String())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.value(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		if t.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(t.Elem()).Implements(jsonMarshalerType) {
			e.buf = append(e.buf, '"')
			e.buf = base64.StdEncoding.AppendEncode(e.buf, v.Bytes())
			e.buf = append(e.buf, '"')
			return nil
		}
		return e.array(v)
	case reflect.Array:
		return e.array(v)
	case reflect.Map:
		return e.mapValue(v)
	case reflect.Struct:
		return e.structValue(v)
	default:
		return fmt.Errorf("unsupported type %s", t)
	}
	return nil
}

func (e *jacksonEncoder) array(v reflect.Value) error {
	e.buf = append(e.buf, '[')
	for i := range v.Len() {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.value(v.Index(i)); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	return nil
}

func (e *jacksonEncoder) mapValue(v reflect.Value) error {
	if v.IsNil() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	type entry struct {
		key string
		v   reflect.Value
	}
	entries := make([]entry, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		k, err := mapKey(it.Key())
		if err != nil {
			return err
		}
		entries = append(entries, entry{k, it.Value()})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	e.buf = append(e.buf, '{')
	for i, en := range entries {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.string(en.key)
		e.buf = append(e.buf, ':')
		if err := e.value(en.v); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// mapKey is a map key's string form, as encoding/json's: a string, a
// TextMarshaler's text, or an integer's digits.
func mapKey(k reflect.Value) (string, error) {
	if k.Kind() == reflect.String {
		return k.String(), nil
	}
	if tm, ok := k.Interface().(encoding.TextMarshaler); ok {
		if k.Kind() == reflect.Pointer && k.IsNil() {
			return "", nil
		}
		b, err := tm.MarshalText()
		return string(b), err
	}
	switch k.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(k.Uint(), 10), nil
	}
	return "", fmt.Errorf("unsupported map key type %s", k.Type())
}

func (e *jacksonEncoder) structValue(v reflect.Value) error {
	e.buf = append(e.buf, '{')
	first := true
	if err := e.fields(v, &first); err != nil {
		return err
	}
	e.buf = append(e.buf, '}')
	return nil
}

// fields writes v's exported fields in declaration order, an untagged
// embedded struct's in its place.
func (e *jacksonEncoder) fields(v reflect.Value, first *bool) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := v.Field(i)
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if fv.Kind() == reflect.Pointer {
					if fv.IsNil() {
						continue
					}
					fv = fv.Elem()
				}
				if err := e.fields(fv, first); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if !hasTag || name == "" {
			name = f.Name
		}
		if slices.Contains(strings.Split(opts, ","), "omitempty") && isEmpty(fv) {
			continue
		}
		if !*first {
			e.buf = append(e.buf, ',')
		}
		*first = false
		e.string(name)
		e.buf = append(e.buf, ':')
		if err := e.value(fv); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	return nil
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// float writes f as Java's Double.toString (bits 64) or Float.toString
// (bits 32): the shortest digits that read back as f (see the one-digit
// case below); plain with at least
// one fraction digit when 1e-3 <= |f| < 1e7, else d.ddd with at least one
// fraction digit, E and the exponent.
func (e *jacksonEncoder) float(f float64, bits int) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%v has no JSON form", f)
	}
	if math.Signbit(f) {
		e.buf = append(e.buf, '-')
		f = -f
	}
	if f == 0 {
		e.buf = append(e.buf, "0.0"...)
		return nil
	}
	// d.ddddde±XX: the shortest digits and the decimal exponent.
	s := strconv.FormatFloat(f, 'e', -1, bits)
	mant, expText, _ := strings.Cut(s, "e")
	digits := strings.Replace(mant, ".", "", 1)
	if len(digits) == 1 {
		// Java (Double.toString since JDK 19) picks, when one digit would
		// do, the closest to f of the decimals of one or two digits that
		// read back as f: 4.9E-324 for the smallest double, where the
		// shortest is 5e-324.
		two := strconv.FormatFloat(f, 'e', 1, bits)
		if back, err := strconv.ParseFloat(two, bits); err == nil && back == f {
			mant2, exp2, _ := strings.Cut(two, "e")
			if d := strings.TrimSuffix(strings.Replace(mant2, ".", "", 1), "0"); d != digits || exp2 != expText {
				digits, expText = d, exp2
			}
		}
	}
	exp, err := strconv.Atoi(expText)
	if err != nil {
		return err
	}
	if 1e-3 <= f && f < 1e7 {
		switch {
		case exp >= 0: // digits[:exp+1] . the rest (at least one digit)
			intPart := digits
			frac := ""
			if len(digits) > exp+1 {
				intPart, frac = digits[:exp+1], digits[exp+1:]
			} else {
				intPart += strings.Repeat("0", exp+1-len(digits))
			}
			if frac == "" {
				frac = "0"
			}
			e.buf = append(e.buf, intPart...)
			e.buf = append(e.buf, '.')
			e.buf = append(e.buf, frac...)
		default: // 0.00ddd
			e.buf = append(e.buf, "0."...)
			e.buf = append(e.buf, strings.Repeat("0", -exp-1)...)
			e.buf = append(e.buf, digits...)
		}
		return nil
	}
	e.buf = append(e.buf, digits[0], '.')
	if len(digits) > 1 {
		e.buf = append(e.buf, digits[1:]...)
	} else {
		e.buf = append(e.buf, '0')
	}
	e.buf = append(e.buf, 'E')
	e.buf = strconv.AppendInt(e.buf, int64(exp), 10)
	return nil
}

// string writes s quoted as Jackson does: only " and \ and the controls
// below 0x20 escaped; a byte that is not UTF-8 as U+FFFD.
func (e *jacksonEncoder) string(s string) {
	const hex = "0123456789ABCDEF"
	e.buf = append(e.buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"', c == '\\':
				e.buf = append(e.buf, '\\', c)
			case c == '\b':
				e.buf = append(e.buf, '\\', 'b')
			case c == '\t':
				e.buf = append(e.buf, '\\', 't')
			case c == '\n':
				e.buf = append(e.buf, '\\', 'n')
			case c == '\f':
				e.buf = append(e.buf, '\\', 'f')
			case c == '\r':
				e.buf = append(e.buf, '\\', 'r')
			case c < 0x20:
				e.buf = append(e.buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			default:
				e.buf = append(e.buf, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			e.buf = utf8.AppendRune(e.buf, utf8.RuneError)
		} else {
			e.buf = append(e.buf, s[i:i+size]...)
		}
		i += size
	}
	e.buf = append(e.buf, '"')
}
