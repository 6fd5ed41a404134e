package commands

import (
	"errors"
	"reflect"
	"testing"

	"github.com/prepkey/prepkey/backend"
)

// fillNonZero sets every field of the struct v points to, nested structs'
// included, to a value that is not zero.
func fillNonZero(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Struct:
			fillNonZero(t, f)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(1)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(1)
		case reflect.String:
			f.SetString("x")
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Func:
			f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value { return nil }))
		case reflect.Interface:
			f.Set(reflect.ValueOf(errors.New("x")))
		default:
			t.Fatalf("fillNonZero: a field of kind %s", f.Kind())
		}
	}
}

// nonZeroFields names the fields of the struct v that are not zero.
func nonZeroFields(v reflect.Value) []string {
	var names []string
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			names = append(names, v.Type().Field(i).Name)
		}
	}
	return names
}

// TestFieldByFieldResets: setOp, Reply.set and Result.Clear reset every
// field of a reused op, reply and result one by one (a struct literal
// assigned is a copy on WebAssembly); a field added to backend.Op,
// backend.Result or Reply and not to them would carry the last command's
// value into the next. This fails until it is added.
func TestFieldByFieldResets(t *testing.T) {
	h := &Handler{}
	var op backend.Op
	fillNonZero(t, reflect.ValueOf(&op).Elem())
	h.setOp(&op, 0, nil, nil, nil)
	if left := nonZeroFields(reflect.ValueOf(op)); left != nil {
		t.Errorf("setOp leaves backend.Op's %v as they were", left)
	}

	var r Reply
	fillNonZero(t, reflect.ValueOf(&r).Elem())
	r.set(0, 0, nil)
	if left := nonZeroFields(reflect.ValueOf(r)); left != nil {
		t.Errorf("Reply.set leaves %v as they were", left)
	}

	var res backend.Result
	fillNonZero(t, reflect.ValueOf(&res).Elem())
	res.Clear()
	if left := nonZeroFields(reflect.ValueOf(res)); left != nil {
		t.Errorf("Result.Clear leaves %v as they were", left)
	}
}
