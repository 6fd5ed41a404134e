package commands

import (
	"math"
	"testing"
)

// parseInt accepts what Redis's string2ll accepts (src/util.c), and only that.
func TestParseIntAsString2ll(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"5", 5, true},
		{"-5", -5, true},
		{"1000", 1000, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false},
		{"99999999999999999999", 0, false},
		{"", 0, false},
		{"-", 0, false},
		{"+5", 0, false},
		{"007", 0, false},
		{"00", 0, false},
		{"-0", 0, false},
		{"-05", 0, false},
		{" 5", 0, false},
		{"5 ", 0, false},
		{"5\x00", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
		{"abc", 0, false},
	} {
		got, ok := parseInt([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
