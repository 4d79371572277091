package gitconf

import (
	"strings"
)

// programKeys are variable names that hold a program or a command line wherever they
// appear: diff.<driver>.textconv and .command, filter.<driver>.clean, .smudge and .process,
// merge.<driver>.driver, diff.external, core.editor, core.pager, core.askPass,
// core.gitProxy, and every *command, *cmd, *program, *helper and *hook variable
// (core.sshCommand, credential.helper, gpg.program, uploadpack.packObjectsHook,
// difftool.<tool>.cmd, …). Matching by the shape of the name keeps variables git adds later
// on the cautious side.
var programKeys = map[string]bool{
	"textconv": true, "clean": true, "smudge": true, "process": true, "driver": true,
	"external": true, "editor": true, "pager": true, "askpass": true, "gitproxy": true,
	"fsmonitor": true, "uploadpack": true, "receivepack": true,
}

var programSuffixes = []string{"command", "cmd", "program", "helper", "hook"}

// names returns a sentence when the variable makes git run a program, "" otherwise.
func names(en entry) string {
	full := en.section
	if en.sub != "" {
		full += "." + en.sub
	}
	full += "." + en.key
	switch {
	case en.section == "include" || en.section == "includeif":
		return full + " includes another configuration file, which the reader does not follow"
	case en.section == "core" && en.key == "fsmonitor":
		if isFalse(en) {
			return ""
		}
		return "core.fsmonitor = " + en.value + " makes git run a file-system monitor"
	case en.section == "pager":
		if isBool(en) {
			return "" // true or false: whether to page, with the pager only on a terminal
		}
		return full + " names the pager program " + quote(en.value)
	case en.section == "alias":
		if strings.HasPrefix(strings.TrimSpace(en.value), "!") {
			return full + " is an alias that runs the shell command " + quote(en.value)
		}
		return ""
	case en.section == "log" && en.key == "showsignature":
		if isFalse(en) {
			return ""
		}
		return "log.showSignature makes git log run the signature program"
	case en.section == "core" && en.key == "hookspath":
		return "" // judged by the hooks a read command can run
	}
	if programKeys[en.key] {
		if en.hasValue && strings.TrimSpace(en.value) == "" {
			return "" // an empty value switches the program off
		}
		return full + " names the program " + quote(en.value)
	}
	for _, s := range programSuffixes {
		if strings.HasSuffix(en.key, s) {
			if en.hasValue && strings.TrimSpace(en.value) == "" {
				return ""
			}
			return full + " names the program " + quote(en.value)
		}
	}
	return ""
}

// isFalse reports a boolean false as git reads it.
func isFalse(en entry) bool {
	if !en.hasValue {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(en.value)) {
	case "false", "no", "off", "0", "":
		return true
	}
	return false
}

func isBool(en entry) bool {
	if !en.hasValue {
		return true
	}
	switch strings.ToLower(strings.TrimSpace(en.value)) {
	case "true", "yes", "on", "1", "false", "no", "off", "0", "":
		return true
	}
	return false
}

func quote(v string) string {
	if len(v) > 80 {
		v = v[:80] + "…"
	}
	return "`" + v + "`"
}
