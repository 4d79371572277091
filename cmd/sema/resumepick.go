package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
)

// resumePick is the --resume value that stands for "no id given": the interactive
// session opens with the picker of the directory's sessions. No session id can be it (a
// NUL byte is in no id), so it never names a session by accident.
const resumePick = "\x00pick"

// bareResume gives a --resume (or -r) that names no session — the last argument, or one
// followed by another flag — the value resumePick, on a root command line that may open
// the interactive session. A command line with a subcommand, -p/--print, an output or
// input format, or "--" is left as it is, so the headless forms keep refusing a missing id
// as the flag parser does.
func bareResume(root *cobra.Command, args []string) []string {
	at := -1
	for i, a := range args {
		switch {
		case a == "--" || a == "-p" || a == "--print" || strings.HasPrefix(a, "--output-format") || strings.HasPrefix(a, "--input-format"):
			return args
		case isSubcommand(root, a):
			return args
		case (a == "--resume" || a == "-r") && (i == len(args)-1 || strings.HasPrefix(args[i+1], "-")):
			at = i
		}
	}
	if at < 0 {
		return args
	}
	out := append([]string(nil), args...)
	out[at] = "--resume=" + resumePick
	return out
}

func isSubcommand(root *cobra.Command, word string) bool {
	for _, c := range root.Commands() {
		if c.Name() == word || c.HasAlias(word) {
			return true
		}
	}
	return false
}

// refuseResumePick is the refusal of a bare --resume where no picker can open: the
// command line runs headless, or prints the help.
func refuseResumePick(o *runOptions) error {
	if o.resume != resumePick {
		return nil
	}
	return usageErr(sema.Errorf(codeUsage, "flag needs an argument: --resume; give the session id (sema sessions list shows them): without one, --resume opens a picker only in the interactive session at a terminal"))
}
