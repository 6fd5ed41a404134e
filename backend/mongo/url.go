package mongo

import (
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
