package conncmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/cmddocs"
	"github.com/prepkey/prepkey/protocol/resp"
)

// commandInfo is one entry of COMMAND's reply.
type commandInfo struct {
	name             string // full name: "client|list" for a subcommand
	arity            int
	flags, acl, tips []string
	subs             []commandInfo // a container's subcommands, by name
}

// allCommands lists every command the server answers, by name: the PK
// commands and the connection commands, each container with its
// subcommands.
func allCommands(connCmds map[string]Cmd) []commandInfo {
	var list []commandInfo
	for _, s := range commands.Specs() {
		flags := []string{"readonly", "fast"}
		if s.Write {
			flags = []string{"write", "fast"}
		}
		list = append(list, infoOf(s.Name, s.Arity, flags))
	}
	for name, cmd := range connCmds {
		ci := infoOf(name, cmd.Arity, []string{"fast"})
		for sub, sc := range cmd.Subs {
			ci.subs = append(ci.subs, infoOf(name+"|"+sub, sc.Arity, []string{"fast"}))
		}
		slices.SortFunc(ci.subs, byName)
		list = append(list, ci)
	}
	slices.SortFunc(list, byName)
	return list
}

func byName(a, b commandInfo) int { return strings.Compare(a.name, b.name) }

// infoOf is name's entry: its flags, ACL categories and tips from
// commandMeta, or defFlags.
func infoOf(name string, arity int, defFlags []string) commandInfo {
	flags, acl, tips := cmddocs.Flags(name)
	ci := commandInfo{name: name, arity: arity, flags: flags, acl: acl, tips: tips}
	if ci.flags == nil {
		ci.flags = defFlags
	}
	return ci
}

// lookupCommand finds a command or subcommand ("client|list") by full name,
// in any case, as Redis's COMMAND INFO and COMMAND DOCS do.
func lookupCommand(list []commandInfo, name string) (commandInfo, bool) {
	top, sub, isSub := strings.Cut(strings.ToLower(name), "|")
	i := slices.IndexFunc(list, func(ci commandInfo) bool { return ci.name == top })
	if i < 0 {
		return commandInfo{}, false
	}
	if !isSub {
		return list[i], true
	}
	j := slices.IndexFunc(list[i].subs, func(ci commandInfo) bool { return ci.name == top+"|"+sub })
	if j < 0 {
		return commandInfo{}, false
	}
	return list[i].subs[j], true
}

// writeCommandInfo writes Redis 7's ten-field entry. PK commands declare no
// Redis keys (first key 0): a namespace and key pair is not a Redis key, so
// cluster-aware clients must not route on it.
func writeCommandInfo(w *resp.Writer, ci commandInfo) {
	w.Array(10)
	w.BulkString(ci.name)
	w.Int(int64(ci.arity))
	w.StatusSet(ci.flags)
	w.Int(0)
	w.Int(0)
	w.Int(0)
	w.StatusSet(ci.acl)
	w.SetHeader(len(ci.tips))
	for _, t := range ci.tips {
		w.BulkString(t)
	}
	w.SetHeader(0) // key specs
	if ci.subs == nil {
		w.SetHeader(0)
		return
	}
	w.Array(len(ci.subs))
	for _, s := range ci.subs {
		writeCommandInfo(w, s)
	}
}

// commandSubs are COMMAND's subcommands; COMMAND alone is commandAll.
func (t *Table) commandSubs() map[string]Cmd {
	return map[string]Cmd{
		"count": {Arity: 2, Run: t.commandCount},
		"list":  {Arity: -2, Run: t.commandList},
		"docs":  {Arity: -2, Run: t.commandDocs},
		"info":  {Arity: -2, Run: t.commandInfo},
		"help":  {Arity: 2, Run: commandHelp},
	}
}

// COMMAND
func (t *Table) commandAll(c Conn, _ [][]byte) {
	w := c.Out()
	list := allCommands(t.cmds)
	w.Array(len(list))
	for _, ci := range list {
		writeCommandInfo(w, ci)
	}
}

// COMMAND COUNT: the top-level commands, as in Redis.
func (t *Table) commandCount(c Conn, _ [][]byte) {
	c.Out().Int(int64(len(allCommands(t.cmds))))
}

// COMMAND LIST: every command and subcommand. FILTERBY is not supported.
func (t *Table) commandList(c Conn, args [][]byte) {
	w := c.Out()
	if len(args) > 2 {
		w.Fail(commands.ErrSyntax)
		return
	}
	names := t.List()
	w.Array(len(names))
	for _, n := range names {
		w.BulkString(n)
	}
}

// List is every command the server answers and every subcommand
// ("client|list"), as COMMAND LIST answers.
func (t *Table) List() []string {
	var names []string
	for _, ci := range allCommands(t.cmds) {
		names = append(names, ci.name)
		for _, s := range ci.subs {
			names = append(names, s.name)
		}
	}
	return names
}

// COMMAND INFO [name ...]: nil for a name it does not know.
func (t *Table) commandInfo(c Conn, args [][]byte) {
	if len(args) == 2 {
		t.commandAll(c, args)
		return
	}
	w := c.Out()
	list := allCommands(t.cmds)
	w.Array(len(args) - 2)
	for _, n := range args[2:] {
		ci, ok := lookupCommand(list, string(n))
		if !ok {
			w.Null()
			continue
		}
		writeCommandInfo(w, ci)
	}
}

// COMMAND DOCS [name ...]: a map of name to docs, leaving out the names it
// does not know, as Redis does.
func (t *Table) commandDocs(c Conn, args [][]byte) {
	w := c.Out()
	list := allCommands(t.cmds)
	var found []commandInfo
	if len(args) == 2 {
		found = list
	}
	for _, n := range args[2:] {
		if ci, ok := lookupCommand(list, string(n)); ok {
			found = append(found, ci)
		}
	}
	w.MapHeader(len(found))
	for _, ci := range found {
		w.BulkString(ci.name)
		var subs []string
		for _, s := range ci.subs {
			subs = append(subs, s.name)
		}
		cmddocs.Write(w, ci.name, subs)
	}
}

// COMMAND HELP: Redis's text, less the subcommands prepkey does not have
// (GETKEYS, GETKEYSANDFLAGS, LIST's FILTERBY).
func commandHelp(c Conn, _ [][]byte) {
	help(c.Out(), "COMMAND",
		"(no subcommand)",
		"    Return details about all Redis commands.",
		"COUNT",
		"    Return the total number of commands in this Redis server.",
		"LIST",
		"    Return a list of all commands in this Redis server.",
		"INFO [<command-name> ...]",
		"    Return details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"DOCS [<command-name> ...]",
		"    Return documentation details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.")
}

// help writes a HELP reply as Redis's addReplyHelp does.
func help(w *resp.Writer, cmd string, lines ...string) {
	w.Array(len(lines) + 3)
	w.Simple(fmt.Sprintf("%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", cmd))
	for _, l := range lines {
		w.Simple(l)
	}
	w.Simple("HELP")
	w.Simple("    Print this help.")
}
