package commands

// parseInt reads b as Redis's string2ll does, which is what Redis applies
// to every integer argument (EX, COUNT, numkeys...): an optional '-', then
// digits with no leading zero (but "0" itself), nothing else, within int64.
// So "+5", "007", "-0", " 5" and "5 " are not integers, where
// strconv.ParseInt took the first three. Every integer argument of a PK
// command is read here, so they all accept the same strings.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 { // 20: len("-9223372036854775808")
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1)/10 || v*10 > 1<<64-1-d {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true // -(1<<63) wraps to itself: MinInt64
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// numeral reports whether b is an optional sign and digits only: a number
// a person would call an integer, which parseInt may still refuse ("+5",
// "007") or find out of range.
func numeral(b []byte) bool {
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// overflows reports whether b is written as parseInt reads integers but
// is too large for int64.
func overflows(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	return len(b) > 0 && b[0] >= '1' && b[0] <= '9' && numeral(b)
}

// ParseInt reads b as Redis's string2ll does (parseInt), for the
// connection commands that Redis reads so too: HELLO's protover and
// SELECT's index. "+3" and "03" are not integers there either.
func ParseInt(b []byte) (int64, bool) { return parseInt(b) }
