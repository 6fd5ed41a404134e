package commands

// redisGlobMatch is the matcher PK.SCAN used before issue 23, kept as the
// reference the compiled glob (glob.go) is tested against. It reports
// whether s matches the glob pattern p as Redis's stringmatchlen does (the MATCH of SCAN and KEYS): '*' any run of bytes,
// '?' one byte, '[...]' a class ('^' negates, 'a-z' ranges, '\' escapes),
// '\' escapes any byte elsewhere. It is a port of Redis's util.c, with its
// two guards against abusive patterns: a nesting limit, and stopping a '*'
// from trying longer matches once the rest of the pattern matched nowhere,
// which keeps patterns of many '*' polynomial. Bytes compare unsigned (Redis
// compares ranges as C chars, signed on x86: only a range spanning 0x7f and
// 0x80 differs).
func redisGlobMatch(p, s []byte) bool {
	skip := false
	return globFrom(p, s, &skip, 0)
}

func globFrom(p, s []byte, skipLonger *bool, nesting int) bool {
	if nesting > 1000 {
		return false
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if globFrom(p[1:], s, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
				s = s[1:]
			}
			*skipLonger = true
			return false
		case '?':
			s = s[1:]
		case '[':
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for len(p) > 0 && p[0] != ']' { // an unterminated class ends with the pattern
				switch {
				case p[0] == '\\' && len(p) >= 2:
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				case len(p) >= 3 && p[1] == '-':
					lo, hi := p[0], p[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					p = p[2:]
					if lo <= s[0] && s[0] <= hi {
						match = true
					}
				case p[0] == s[0]:
					match = true
				}
				p = p[1:]
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		if len(p) > 0 {
			p = p[1:]
		}
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}
