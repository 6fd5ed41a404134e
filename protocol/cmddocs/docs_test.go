package cmddocs

import "testing"

// TestArgDocsRender checks what redis-cli builds from the PK commands' docs
// (its hint and help line), by the rules of redis-cli 7's cliAddArgument.
func TestArgDocsRender(t *testing.T) {
	for name, want := range map[string]string{
		"pk.prepare":   "name key value [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds]",
		"pk.rollback":  "name key [IFEQ value]",
		"pk.reprepare": "name key value [FROM old-key] [IFEQ current-value] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]",
		"pk.mprepare":  "numkeys name key value [name key value ...] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds]",
		"pk.scan":      "name cursor [MATCH pattern] [COUNT count] [LIVE|EXPIRED]",
	} {
		if got := renderArgs(commandMeta[name].args, " "); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

// renderArgs is redis-cli's cliConcatArguments/cliAddArgument.
func renderArgs(args []argDoc, sep string) string {
	out := ""
	for i, a := range args {
		if i > 0 {
			out += sep
		}
		tok := a.token
		var rep string
		switch a.typ {
		case "oneof":
			rep = renderArgs(a.args, "|")
		case "block":
			rep = renderArgs(a.args, " ")
		case "pure-token":
		default:
			rep = a.name
		}
		if tok != "" && a.typ != "pure-token" {
			tok += " "
		}
		s := tok + rep
		if a.multiple {
			s += " [" + rep + " ...]"
		}
		if a.optional {
			s = "[" + s + "]"
		}
		out += s
	}
	return out
}
