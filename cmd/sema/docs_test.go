package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"mvdan.cc/sh/v3/syntax"
)

// Every `sema …` command line the README and the pages under docs/ show in a shell block
// names a command sema has and only flags that command takes, and every flag of the
// command line page's flags table is a flag of `sema run`. A renamed flag or command
// without the docs fails here.
func TestDocsCommandLinesNameRealCommandsAndFlags(t *testing.T) {
	root := newRootCmd(strings.NewReader(""), io.Discard, io.Discard)
	checked := 0
	for _, doc := range docPages(t) {
		for _, block := range shellBlocks(doc.text) {
			for _, argv := range semaCalls(t, doc.name, block) {
				checked++
				for _, problem := range commandProblems(root, argv) {
					t.Errorf("%s: `%s`: %s", doc.name, strings.Join(argv, " "), problem)
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked %d sema command lines in the docs; the blocks were not found", checked)
	}
	run, _, err := root.Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	table := flagTable(t, filepath.Join("..", "..", "docs", "cli.md"))
	for _, flag := range table {
		if lookupFlag(run, flag) == nil {
			t.Errorf("docs/cli.md's flags table has %s, which `sema run` does not take", flag)
		}
	}
	if len(table) < 30 {
		t.Errorf("read %d flags from docs/cli.md's table: %v", len(table), table)
	}
}

// The check above reports a flag or a command sema does not have.
func TestDocsCommandCheckCatchesAStaleFlag(t *testing.T) {
	root := newRootCmd(strings.NewReader(""), io.Discard, io.Discard)
	if p := commandProblems(root, []string{"sema", "run", "--no-such-flag", "x"}); len(p) != 1 {
		t.Errorf("an unknown flag: %q", p)
	}
	if p := commandProblems(root, []string{"sema", "sesions", "list"}); len(p) != 1 {
		t.Errorf("an unknown command: %q", p)
	}
	if p := commandProblems(root, []string{"sema", "-p", "--max-turns", "3", "x"}); len(p) != 0 {
		t.Errorf("a real command line: %q", p)
	}
}

// docPage is one Markdown file of the docs.
type docPage struct{ name, text string }

// docPages reads the README and every page under docs/.
func docPages(t *testing.T) []docPage {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(names) < 10 {
		t.Fatalf("pages under docs/: %v, %v", names, err)
	}
	var pages []docPage
	for _, name := range append([]string{filepath.Join("..", "..", "README.md")}, names...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, docPage{strings.TrimPrefix(name, "../../"), string(b)})
	}
	return pages
}

// shellBlocks returns the ```sh blocks of the Markdown.
func shellBlocks(md string) []string {
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^[ \t]*```(?:sh|bash|shell)\n(.*?)^[ \t]*```").FindAllStringSubmatch(md, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// semaCalls parses a shell block and returns the argument lists of the simple commands
// that run sema, each word as written when it is a literal and "ARG" when it is not.
func semaCalls(t *testing.T, where, block string) [][]string {
	t.Helper()
	file, err := syntax.NewParser().Parse(strings.NewReader(block), where)
	if err != nil {
		t.Errorf("%s: a shell block does not parse: %v\n%s", where, err, block)
		return nil
	}
	var calls [][]string
	syntax.Walk(file, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 || call.Args[0].Lit() != "sema" {
			return true
		}
		var argv []string
		for _, w := range call.Args {
			if lit := w.Lit(); lit != "" {
				argv = append(argv, lit)
			} else {
				argv = append(argv, "ARG")
			}
		}
		calls = append(calls, argv)
		return true
	})
	return calls
}

// commandProblems says what of argv (sema's, with argv[0] "sema") sema would not know:
// a command word that names no command, or a flag the command does not take.
func commandProblems(root *cobra.Command, argv []string) []string {
	cmd, rest, err := root.Find(argv[1:])
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	if cmd == root && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") && firstWord(argv[1:]) == rest[0] && rest[0] != "ARG" && rest[0] != "-" {
		problems = append(problems, "sema has no command "+rest[0])
	}
	if cmd.DisableFlagParsing {
		return problems // its flags are another program's (sema serve's binary)
	}
	for _, arg := range argv[1:] {
		if arg == "--" {
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			continue
		}
		flag, _, _ := strings.Cut(arg, "=")
		if !strings.HasPrefix(flag, "--") {
			flag = flag[:2] // -p, or the first of bundled short flags
		}
		if flag == "--help" || flag == "-h" {
			continue // cobra adds help to every command when it runs
		}
		if lookupFlag(cmd, flag) == nil {
			problems = append(problems, "`"+cmd.CommandPath()+"` takes no flag "+arg)
		}
	}
	return problems
}

// firstWord is the first argument that is not a flag.
func firstWord(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// lookupFlag finds a flag ("--name" or "-x") among the command's own and inherited flags.
func lookupFlag(cmd *cobra.Command, flag string) any {
	if name, ok := strings.CutPrefix(flag, "--"); ok {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f
		}
		if f := cmd.InheritedFlags().Lookup(name); f != nil {
			return f
		}
		return nil
	}
	short := strings.TrimPrefix(flag, "-")
	if f := cmd.Flags().ShorthandLookup(short); f != nil {
		return f
	}
	if f := cmd.InheritedFlags().ShorthandLookup(short); f != nil {
		return f
	}
	return nil
}

// flagTable returns the flags named in the first column of a page's `| flag | meaning |`
// table: every backquoted word there that starts with a dash.
func flagTable(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "| flag | meaning |")
	if start < 0 {
		t.Fatalf("%s has no flags table", path)
	}
	var flags []string
	for _, line := range strings.Split(text[start:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cell := strings.SplitN(line, " | ", 2)[0]
		for _, m := range regexp.MustCompile("`(-[^`]*)`").FindAllStringSubmatch(cell, -1) {
			flags = append(flags, strings.Fields(m[1])[0])
		}
	}
	return flags
}
