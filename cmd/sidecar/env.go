package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// envName is the environment variable of a flag: PK_ and its name in upper
// case with underscores (--max-key-bytes: PK_MAX_KEY_BYTES).
func envName(flagName string) string {
	return "PK_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// secretFiles pairs a flag that holds a secret with the flag that names a
// file holding it: a Kubernetes or Docker secret is mounted as a file, and
// a value in a file stays out of `ps`, /proc/PID/environ and the pod spec.
var secretFiles = [][2]string{{"requirepass", "requirepass-file"}, {"backend", "backend-file"}}

// readSecretFiles reads --requirepass-file and --backend-file (or
// PK_REQUIREPASS_FILE, PK_BACKEND_FILE) into the values they stand for. As
// for every setting, a flag wins over the environment: --requirepass with
// PK_REQUIREPASS_FILE in the environment uses the flag. Both forms from the
// same source are refused: which one was meant cannot be told.
func (c *config) readSecretFiles(given, fromEnv map[string]bool) error {
	for _, p := range secretFiles {
		value, file := p[0], p[1]
		path := c.stringFlag(file)
		switch {
		case *path == "":
			continue
		case given[value] && !given[file]:
			continue // the flag wins over PK_…_FILE
		case given[value] || (fromEnv[value] && fromEnv[file]):
			return fmt.Errorf("--%s and --%s are both set (as flags or as %s and %s): set one", value, file, envName(value), envName(file))
		}
		b, err := os.ReadFile(*path)
		if err != nil {
			return fmt.Errorf("--%s: %w", file, err)
		}
		s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if s == "" {
			return fmt.Errorf("--%s: %s is empty", file, *path)
		}
		if strings.ContainsAny(s, "\r\n") {
			return fmt.Errorf("--%s: %s holds more than one line", file, *path)
		}
		*c.stringFlag(value) = s
	}
	return nil
}

// stringFlag is the field of a flag that secretFiles names.
func (c *config) stringFlag(name string) *string {
	switch name {
	case "requirepass":
		return &c.requirePass
	case "requirepass-file":
		return &c.requirePassFile
	case "backend":
		return &c.backendURL
	case "backend-file":
		return &c.backendFile
	}
	panic("no such secret flag: " + name)
}

// unknownEnv returns one warning for each PK_* variable of environ (NAME=value
// pairs, as os.Environ) that names no flag, with the closest name when one
// is a likely typo (PK_BACKNED: did you mean PK_BACKEND?). Such a variable
// would otherwise be ignored without a word. PK_CHECK is told apart: it
// names a flag that the environment does not set.
func unknownEnv(environ []string, flagNames []string) []string {
	known := make([]string, 0, len(flagNames))
	for _, f := range flagNames {
		if f != "check" {
			known = append(known, envName(f))
		}
	}
	var warnings []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "PK_") || slices.Contains(known, name) {
			continue
		}
		if name == "PK_CHECK" {
			warnings = append(warnings, "PK_CHECK is ignored: --check is a flag only (the server would otherwise become a one-shot healthcheck)")
			continue
		}
		w := "unknown environment variable " + name + " ignored"
		if near := closest(name, known); near != "" {
			w += " (did you mean " + near + "?)"
		}
		warnings = append(warnings, w)
	}
	slices.Sort(warnings)
	return warnings
}

// closest is the name of known nearest to name, when it is near enough to
// be a typo: at most a third of its letters apart (a swap counts as one).
func closest(name string, known []string) string {
	best, bestD := "", len(name)/3+1
	for _, k := range known {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and swaps of adjacent letters.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
