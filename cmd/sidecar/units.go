package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The flag types of this file read and print sizes and durations in the
// units an operator writes: `--min-free-disk 64MiB`, `--backend-timeout 2s`,
// and --help shows `64MiB` and `24h`, never 67108864 or 24h0m0s.

// byteSize is a flag of bytes: a number, optionally followed by a unit
// (B, KB, MB, GB, TB in powers of 1000; KiB, MiB, GiB, TiB in powers of
// 1024; case-insensitive). It prints in the largest unit that divides it.
type byteSize int64

var sizeUnits = map[string]int64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}

// shownUnits are tried in order by String: binary units first, as the
// defaults are powers of two.
var shownUnits = []struct {
	name string
	mult int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}}

func (b *byteSize) String() string { return formatBytes(int64(*b)) }

func formatBytes(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range shownUnits {
		if n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

func (b *byteSize) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want bytes, e.g. 64MiB, got %q", s)
	}
	mult := sizeUnits[unit]
	if mult == 0 {
		return 0, fmt.Errorf("unknown unit %q in %q (want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", unit, s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}

// intBytes is a byteSize flag kept in an int (--max-key-bytes,
// --max-value-bytes: the code counts them as ints).
type intBytes int

func (b *intBytes) String() string { return formatBytes(int64(*b)) }

func (b *intBytes) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	if n > math.MaxInt32 {
		return fmt.Errorf("%q is too large", s)
	}
	*b = intBytes(n)
	return nil
}

// duration is a flag of a time.Duration that prints without zero units
// (24h, 1m30s, 2s).
type duration time.Duration

func (d *duration) String() string { return formatDuration(time.Duration(*d)) }

func (d *duration) Set(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("want a duration such as 500ms, 2s, 5m or 24h, got %q", s)
	}
	*d = duration(v)
	return nil
}

// formatDuration is time.Duration's String without its trailing zero
// units: 24h0m0s is 24h, 5m0s is 5m; 0 is 0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// seconds is --timeout: a duration (300s, 5m), or a bare number of seconds
// as Redis's `timeout` takes (300).
type seconds time.Duration

func (d *seconds) String() string { return formatDuration(time.Duration(*d)) }

func (d *seconds) Set(s string) error {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > math.MaxInt64/int64(time.Second) || n < math.MinInt64/int64(time.Second) {
			return fmt.Errorf("%q is too large", s)
		}
		*d = seconds(time.Duration(n) * time.Second)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want seconds (300) or a duration (300s, 5m), got %q", s)
	}
	*d = seconds(v)
	return nil
}
