package admin

// Which series /metrics shows. A histogram is 25 series, and a counter by
// command and outcome is 7 per command: shown for every command, used or
// not, and every outcome, possible or not, they made about 800 series per
// sidecar, most of them zeros that could never move (pk.get answering
// MISMATCH, PING answering UNAVAILABLE). A series is shown when it has a
// value, and a counter also, at 0 from the start, when its command can
// have that outcome, so that rate() and increase() over it work from the
// first scrape; a histogram appears with its first observation (a
// quantile of nothing is nothing).

// canHave reports whether command can answer with outcome (the outcome
// names of stats.Outcome). Any other combination that happens all the
// same is shown too (Collect shows every count above 0): this only
// decides which zeros are shown.
func canHave(command, outcome string) bool {
	switch command {
	case "pk.prepare", "pk.mprepare", "pk.rollback":
		return outcome == "1" || outcome == "0" || outcome == "error" || outcome == "unavailable"
	case "pk.reprepare":
		return outcome == "1" || outcome == "0" || outcome == "mismatch" || outcome == "error" || outcome == "unavailable"
	case "pk.get", "pk.getvalue":
		return outcome == "ok" || outcome == "nil" || outcome == "error" || outcome == "unavailable"
	case "pk.scan":
		return outcome == "ok" || outcome == "error" || outcome == "unavailable"
	case "unknown":
		return outcome == "error"
	}
	// A connection command (PING, AUTH, INFO, MULTI, …): its reply, or an
	// error (arity, NOAUTH).
	return outcome == "ok" || outcome == "error"
}
