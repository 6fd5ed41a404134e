package mongo

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// databaseFromURL returns the database named by the path of a MongoDB URL,
// or DefaultDatabase. It follows the driver's own parsing (first '@' ends the
// user info, the hosts end at '/' or '?'), because net/url rejects the
// comma-separated host lists of replica-set URLs. The driver validates the
// rest of the URL; asking it for the database instead would resolve a
// mongodb+srv URL a second time.
func databaseFromURL(raw string) (string, error) {
	rest, ok := strings.CutPrefix(raw, "mongodb://")
	if !ok {
		rest, ok = strings.CutPrefix(raw, "mongodb+srv://")
	}
	if !ok {
		return "", fmt.Errorf(`mongo: invalid URL: scheme must be "mongodb" or "mongodb+srv"`)
	}
	if _, after, found := strings.Cut(rest, "@"); found {
		rest = after
	}
	i := strings.IndexAny(rest, "/?")
	if i < 0 || rest[i] == '?' {
		return DefaultDatabase, nil
	}
	path := rest[i+1:]
	if j := strings.IndexByte(path, '?'); j >= 0 {
		path = path[:j]
	}
	db, err := url.QueryUnescape(path)
	if err != nil {
		return "", fmt.Errorf("mongo: invalid URL: database %q: %w", path, err)
	}
	if db == "" {
		return DefaultDatabase, nil
	}
	// MongoDB's own rules for database names; checked here so that a typo
	// fails at start rather than on every command.
	if len(db) > 63 || strings.ContainsAny(db, "/\\. \"$*<>:|?\x00") {
		return "", fmt.Errorf("mongo: invalid URL: database name %q: at most 63 bytes, none of /\\. \"$*<>:|?", db)
	}
	return db, nil
}

// WithDatabase returns raw with its database (the path) set to db, keeping
// hosts, credentials and options: tests and benchmarks use it to give each
// run a database of its own on a shared server.
func WithDatabase(raw, db string) (string, error) {
	if _, err := databaseFromURL(raw); err != nil {
		return "", err
	}
	scheme, rest, _ := strings.Cut(raw, "://")
	var userinfo string
	if before, after, found := strings.Cut(rest, "@"); found {
		userinfo, rest = before+"@", after
	}
	rest, query, hasQuery := strings.Cut(rest, "?")
	hosts, _, _ := strings.Cut(rest, "/")
	u := scheme + "://" + userinfo + hosts + "/" + url.PathEscape(db)
	if hasQuery {
		u += "?" + query
	}
	if _, err := databaseFromURL(u); err != nil {
		return "", err
	}
	return u, nil
}

// Layout is how the store lays out its records in the database.
type Layout uint8

const (
	// LayoutPrepkey is the sidecar's own layout (the default, and
	// layout=prepkey): collections prepkey_<namespace>, binary keys and
	// values.
	LayoutPrepkey Layout = iota
	// LayoutWow is Wow's PrepareKey layout (layout=wow): collections
	// prepare_<namespace>, string keys, values as the BSON of their JSON,
	// ttlAt a date; see docs/mongo.md.
	LayoutWow
)

func (l Layout) String() string {
	if l == LayoutWow {
		return "wow"
	}
	return "prepkey"
}

// layoutOption is the URL query option that selects the layout. The driver
// would keep it as an unknown option and ignore it, so it is read here and
// removed before the driver sees the URL.
const layoutOption = "layout"

// splitLayout returns the layout named by raw's layout option and raw
// without that option. Options are split as the driver splits them (on '&'
// and ';'); the option's name is case-insensitive as the driver's are, its
// value is not. An unknown value, or the option given twice, is an error,
// so that a typo stops the sidecar at start instead of writing records
// another service never sees.
func splitLayout(raw string) (Layout, string, error) {
	afterHosts := strings.Index(raw, "://")
	if afterHosts < 0 {
		return 0, "", fmt.Errorf(`mongo: invalid URL: scheme must be "mongodb" or "mongodb+srv"`)
	}
	afterHosts += len("://")
	if at := strings.IndexByte(raw[afterHosts:], '@'); at >= 0 {
		afterHosts += at + 1
	}
	q := strings.IndexByte(raw[afterHosts:], '?')
	if q < 0 {
		return LayoutPrepkey, raw, nil
	}
	q += afterHosts
	layout, found := LayoutPrepkey, false
	var kept []string
	for _, pair := range strings.FieldsFunc(raw[q+1:], func(r rune) bool { return r == '&' || r == ';' }) {
		name, value, _ := strings.Cut(pair, "=")
		if n, err := url.QueryUnescape(name); err != nil || !strings.EqualFold(n, layoutOption) {
			kept = append(kept, pair)
			continue
		}
		if found {
			return 0, "", errors.New("mongo: invalid URL: layout is given twice")
		}
		found = true
		v, err := url.QueryUnescape(value)
		if err != nil {
			return 0, "", fmt.Errorf("mongo: invalid URL: layout %q: %w", value, err)
		}
		switch v {
		case "prepkey":
			layout = LayoutPrepkey
		case "wow":
			layout = LayoutWow
		default:
			return 0, "", fmt.Errorf("mongo: invalid URL: unknown layout %q (want wow or prepkey)", v)
		}
	}
	stripped := raw[:q]
	if len(kept) > 0 {
		stripped += "?" + strings.Join(kept, "&")
	}
	return layout, stripped, nil
}
