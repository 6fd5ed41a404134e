package resp

// Parse reads the request at the front of b in the same pass that checks
// its framing, when b holds all of it and it is of the plain form every
// client sends: a multibulk request whose length headers are decimal
// digits ended by CRLF, within the limits in force, each argument followed
// by CRLF. Its arguments are slices of b, as redcon's parser makes them
// (ReadCommand); n is its length. The guard's state is left as it is: at
// the next request, which is where the request ends.
//
// ok is false for anything else: a request not all in b, an inline one, a
// header with a sign or of more than maxParseDigits, a limit passed, bad
// framing. The caller then has the guard scan b (Scan) and redcon parse
// it (ReadCommand), which answer every case as before; so a request the
// guard refuses, or one redcon rejects or reads otherwise, is never
// accepted here. Before it, the request was scanned byte by byte by the
// guard, then again by redcon's parser: with strconv.Atoi on each header
// in both, 2,300 of the 9,300 instructions of a PK.PREPARE on memory: at
// pipeline 1 (callgrind; docs/benchmarks.md, "One parse pass").
func (g *FramingGuard) Parse(b []byte, argsbuf [][]byte) (args [][]byte, n int, ok bool) {
	args = argsbuf[:0]
	if g.state != atRequest || len(b) == 0 || b[0] != '*' {
		return args, 0, false
	}
	count, i, ok := parseHeader(b, 1)
	if !ok {
		return args, 0, false
	}
	lim := g.lim()
	if count > lim.MaxArgs {
		return args, 0, false
	}
	req := 0
	for range count {
		if i == len(b) || b[i] != '$' {
			return args, 0, false
		}
		size, at, ok := parseHeader(b, i+1)
		if !ok || size > lim.MaxBulk {
			return args, 0, false
		}
		if req += size; lim.MaxRequest > 0 && req > lim.MaxRequest {
			return args, 0, false
		}
		end := at + size
		if end+2 > len(b) || b[end] != '\r' || b[end+1] != '\n' {
			return args, 0, false
		}
		args = append(args, b[at:end])
		i = end + 2
	}
	return args, i, true
}

// maxParseDigits is the most digits Parse reads in a length header: any
// such number fits an int, and both the guard and redcon read it as this
// value. A longer header (leading zeros) is left to them.
const maxParseDigits = 18

// parseHeader reads the decimal digits of a length header in b from i, and
// its CRLF: it returns their value and where the header ends.
func parseHeader(b []byte, i int) (v, end int, ok bool) {
	start := i
	for ; i < len(b) && b[i]-'0' <= 9; i++ { // (a byte below '0' wraps)
		v = v*10 + int(b[i]-'0')
	}
	if d := i - start; d == 0 || d > maxParseDigits || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, 0, false
	}
	return v, i + 2, true
}
