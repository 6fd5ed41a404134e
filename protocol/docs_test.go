package protocol

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestEveryCommandHasDocs holds every command and subcommand that COMMAND
// lists to an entry in commandMeta: without one, redis-cli has no hint and
// no help for it. The v2 PK commands are documented before their specs
// land, so that they are listed with docs the day they are.
func TestEveryCommandHasDocs(t *testing.T) {
	list := allCommands(connCommandTable())
	if len(list) == 0 {
		t.Fatal("COMMAND lists nothing")
	}
	check := func(name string) {
		m, ok := commandMeta[name]
		if !ok {
			t.Errorf("%s: listed by COMMAND, no docs in commandMeta", name)
			return
		}
		if m.summary == "" || m.since == "" || m.group == "" || m.complexity == "" {
			t.Errorf("%s: docs without summary, since, group or complexity: %+v", name, m)
		}
	}
	for _, ci := range list {
		check(ci.name)
		for _, s := range ci.subs {
			check(s.name)
		}
	}
	for _, name := range []string{"pk.prepare", "pk.get", "pk.getvalue", "pk.rollback", "pk.reprepare", "pk.mprepare", "pk.scan",
		"multi", "exec", "discard", "watch", "unwatch"} {
		check(name)
	}
}

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

// TestClientListRace has connections on two loops rename themselves while
// others list them (run with -race: CLIENT LIST reads other loops'
// connections).
func TestClientListRace(t *testing.T) {
	addr := serve(t, Config{EventLoops: 2}, &echoHandler{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			rd := bufio.NewReader(nc)
			for j := range 50 {
				cmd := req("CLIENT", "SETNAME", fmt.Sprintf("c%d-%d", i, j))
				if j%2 == 1 {
					cmd = req("CLIENT", "LIST")
				}
				if _, err := nc.Write([]byte(cmd)); err != nil {
					t.Error(err)
					return
				}
				line, err := rd.ReadString('\n')
				if err != nil {
					t.Error(err)
					return
				}
				if j%2 == 1 {
					n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
					buf := make([]byte, n+2)
					if _, err := io.ReadFull(rd, buf); err != nil {
						t.Error(err)
						return
					}
					if !strings.Contains(string(buf), fmt.Sprintf(" name=c%d-%d ", i, j-1)) {
						t.Errorf("CLIENT LIST does not show this connection's name c%d-%d: %s", i, j-1, buf)
						return
					}
				} else if line != "+OK\r\n" {
					t.Errorf("SETNAME: %q", line)
					return
				}
			}
		}()
	}
	wg.Wait()
}
