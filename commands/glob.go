package commands

import "math/bits"

// A glob is a MATCH pattern compiled once per PK.SCAN call. It matches as
// Redis's stringmatchlen does (the MATCH of SCAN and KEYS): '*' any run of
// bytes, '?' one byte, '[...]' a class ('^' negates, 'a-z' ranges, '\'
// escapes, an unterminated class ends with the pattern), '\' escapes any
// byte elsewhere; bytes compare unsigned (Redis compares ranges as C
// chars, signed on x86: only a range spanning 0x7f and 0x80 differs).
// redisGlobMatch, the port of util.c this replaces, is the reference its
// tests hold it to.
//
// Why compiled (issue 23): that port re-reads the pattern for every byte
// it tests, so a class of 4096 bytes ('*[bbb...]') cost 4096 steps per
// byte of every key, 4.7 s for one page of 1000 keys of 1 KiB, on the
// event loop for memory:. Here every element of the pattern but '*' is a
// unit that takes exactly one byte, from a set of bytes fixed by the
// pattern; the '*'s cut the units into segments of fixed length. A key
// matches when the first segment is its prefix, the last its suffix, and
// the others occur in order in between, each taken at its leftmost place:
// with segments of fixed length, leftmost is never worse, so no
// backtracking is needed (this is the whole of stringmatchlen's meaning;
// its guard against many '*' only bounded its backtracking). A middle
// segment is found with the bit-parallel Shift-And search, one step of
// at most ceil(length/64)+1 words per byte of the key, whatever its
// classes hold. A key thus costs at most len(key) times that for the
// longest middle segment, plus one step per segment: cost, from which
// parseScan bounds a page's keys (matchBudget).
type glob struct {
	empty bool // the pattern is empty: only an empty key matches
	// never: more than maxStarNesting '*' (runs of '*' count once) before
	// the end. stringmatchlen gives up past that nesting, so Redis's MATCH
	// takes no key at all; neither does this.
	never bool
	stars bool // at least one '*'
	units int  // units in the pattern, in order: bit u is unit u
	words int  // ceil(units/64)
	// rows[c*words:][:words] has bit u set when unit u takes byte c.
	rows       []uint64
	head, tail int      // units before the first '*', after the last
	mids       [][2]int // the units [from, to) of each segment between '*'s
	need       int      // units in mids
	span       int      // words of the state of the longest middle segment
	state      []uint64 // Shift-And's state, reused key after key
}

// maxStarNesting is stringmatchlen's nesting limit (Redis 7.0's util.c:
// "if (nesting > 1000) return 0", one level per '*').
const maxStarNesting = 1000

// byteSet is a set of bytes, bit c of word c/64.
type byteSet [4]uint64

func (b *byteSet) add(c byte) { b[c>>6] |= 1 << (c & 63) }

func compileGlob(p []byte) *glob {
	g := &glob{empty: len(p) == 0}
	var (
		sets    []byteSet
		bounds  []int // units before each run of '*'
		trailed bool  // the pattern ends with '*'
	)
	for i := 0; i < len(p); i++ {
		var set byteSet
		switch p[i] {
		case '*':
			for i+1 < len(p) && p[i+1] == '*' {
				i++
			}
			bounds = append(bounds, len(sets))
			trailed = i == len(p)-1
			continue
		case '?':
			set = byteSet{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
		case '[':
			i++
			not := i < len(p) && p[i] == '^'
			if not {
				i++
			}
			for ; i < len(p) && p[i] != ']'; i++ {
				switch {
				case p[i] == '\\' && len(p)-i >= 2:
					i++
					set.add(p[i])
				case len(p)-i >= 3 && p[i+1] == '-':
					lo, hi := p[i], p[i+2]
					if lo > hi {
						lo, hi = hi, lo
					}
					for c := int(lo); c <= int(hi); c++ {
						set.add(byte(c))
					}
					i += 2
				default:
					set.add(p[i])
				}
			}
			if not {
				for w := range set {
					set[w] = ^set[w]
				}
			}
			// i is at the ']', or past the end of an unterminated class.
		case '\\':
			if len(p)-i >= 2 {
				i++
			}
			set.add(p[i])
		default:
			set.add(p[i])
		}
		sets = append(sets, set)
	}
	g.units = len(sets)
	g.words = (g.units + 63) / 64
	g.rows = make([]uint64, 256*g.words)
	// A unit taking more than half the bytes ('?', '[^a]') is set in every
	// row, then cleared in the rows of the bytes it does not take: so
	// compiling costs at most 128 bit steps per unit, not 256.
	dense := make([]uint64, g.words)
	for u, set := range sets {
		n := bits.OnesCount64(set[0]) + bits.OnesCount64(set[1]) + bits.OnesCount64(set[2]) + bits.OnesCount64(set[3])
		if n > 128 {
			dense[u/64] |= 1 << (u % 64)
		}
	}
	for c := range 256 {
		row := g.rows[c*g.words:][:g.words]
		copy(row, dense)
	}
	for u, set := range sets {
		bit := uint64(1) << (u % 64)
		invert := uint64(0)
		if dense[u/64]&bit != 0 {
			invert = ^uint64(0)
		}
		for w, x := range set {
			for x ^= invert; x != 0; x &= x - 1 {
				c := w*64 + bits.TrailingZeros64(x)
				g.rows[c*g.words+u/64] ^= bit
			}
		}
	}
	if len(bounds) == 0 {
		return g
	}
	g.stars = true
	nesting := len(bounds)
	if trailed {
		nesting--
	}
	g.never = nesting > maxStarNesting
	g.head = bounds[0]
	g.tail = g.units - bounds[len(bounds)-1]
	for k := 1; k < len(bounds); k++ {
		from, to := bounds[k-1], bounds[k]
		if from == to {
			continue
		}
		g.mids = append(g.mids, [2]int{from, to})
		g.need += to - from
		g.span = max(g.span, (to-1)/64-from/64+1)
	}
	g.state = make([]uint64, g.span)
	return g
}

// match reports whether key matches the pattern.
func (g *glob) match(key []byte) bool {
	if len(key) == 0 {
		return g.empty // stringmatchlen: an empty string matches only itself
	}
	if g.never {
		return false
	}
	if !g.stars {
		return len(key) == g.units && g.at(key, 0)
	}
	if g.head+g.need+g.tail > len(key) {
		return false
	}
	if !g.at(key[:g.head], 0) || !g.at(key[len(key)-g.tail:], g.units-g.tail) {
		return false
	}
	rest, need := key[g.head:len(key)-g.tail], g.need
	for _, m := range g.mids {
		end := g.find(rest, m[0], m[1], need)
		if end < 0 {
			return false
		}
		rest, need = rest[end:], need-(m[1]-m[0])
	}
	return true
}

// at reports whether the units from unit from on take s's bytes.
func (g *glob) at(s []byte, from int) bool {
	for i, c := range s {
		u := from + i
		if g.rows[int(c)*g.words+u/64]&(1<<(u%64)) == 0 {
			return false
		}
	}
	return true
}

// find returns where the leftmost match in s of the segment of units
// [from, to) ends, or -1; need is the units this segment and the ones after
// it take, so the search stops where they could no longer fit. Shift-And:
// bit u of the state is set when units from..u take the bytes ending here.
func (g *glob) find(s []byte, from, to, need int) int {
	first, last := from/64, (to-1)/64
	d := g.state[:last-first+1]
	clear(d)
	start, end := uint64(1)<<(from%64), uint64(1)<<((to-1)%64)
	top := len(d) - 1
	keep := end | (end - 1) // the state's last word holds no unit after the segment's
	stop := len(s) - need + (to - from)
	if top == 0 { // one word: most segments
		x := uint64(0)
		for i := 0; i < stop; i++ {
			x = (x<<1 | start) & g.rows[int(s[i])*g.words+first] & keep
			if x&end != 0 {
				return i + 1
			}
		}
		return -1
	}
	for i := 0; i < stop; i++ {
		row := g.rows[int(s[i])*g.words+first:]
		carry := start
		for w, x := range d {
			d[w] = (x<<1 | carry) & row[w]
			carry = x >> 63
		}
		d[top] &= keep
		if d[top]&end != 0 {
			return i + 1
		}
	}
	return -1
}

// cost bounds the word steps match takes on a key of keyBytes bytes: each
// byte is tested once, by an anchored unit or by one Shift-And step of at
// most span words (a segment longer than the key is never searched), and
// each segment costs one more.
func (g *glob) cost(keyBytes int) int {
	return keyBytes*max(1, min(g.span, keyBytes/64+2)) + len(g.mids) + 1
}

// globMatch reports whether s matches the pattern p.
func globMatch(p, s []byte) bool { return compileGlob(p).match(s) }
