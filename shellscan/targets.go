package shellscan

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Target operations.
const (
	OpRead   = "read"   // read contents or list a directory (cat, ls, an input redirect)
	OpWrite  = "write"  // overwrite, append, modify in place, change mode or owner
	OpRemove = "remove" // unlink or remove recursively (rm, rmdir, mv's sources, find -delete)
	OpCreate = "create" // make a new file or directory (touch, mkdir, mkfifo)
)

// Target is one path a script would read, write, create or remove.
type Target struct {
	// Path is the path as written, after quote removal. For a word that is not Static it is the
	// word's text: with the ~ still in it when a leading tilde is its only expansion, else the
	// source text.
	Path string
	// Op is OpRead, OpWrite, OpRemove or OpCreate.
	Op string
	// Segment is the index of the segment in Script.Segments, or -1 for a redirection on a
	// compound command (Script.CompoundRedirects).
	Segment int
	// Static reports that Path is exactly the path the program receives.
	Static bool
	// Reason, set on a target with an empty Path, says why the places are unknown: the
	// program follows symbolic links while it walks (a link inside the roots can lead
	// anywhere), reads the names of its files from a file or from its input, or runs code
	// that can touch any file. Such a target can never be placed, so every caller judges it
	// as lying outside the roots.
	Reason string
}

// harmlessDevices are device files whose use reads or writes no file: they are never targets.
var harmlessDevices = setOf("/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero",
	"/dev/random", "/dev/urandom", "/dev/tty")

// collector gathers targets and the completeness of the reading.
type collector struct {
	targets  []Target
	complete bool
	seg      int
	prog     string // the program of the segment being read, for Reason sentences
}

// unknown records that the segment reads (or writes) places the text does not show, with
// the sentence saying why. The reading is incomplete, and the target itself cannot be
// placed, so a caller that only places targets still meets it.
func (c *collector) unknown(op, why string) {
	c.complete = false
	c.targets = append(c.targets, Target{Op: op, Segment: c.seg, Reason: why})
}

// indirect applies the spec's link-following and name-list options found in p: each is a
// read of unknown places. Unknown long options a loose spec took for flags count too when
// they could abbreviate one of those options.
func (c *collector) indirect(p parsedArgs, sp *optSpec, op string) {
	for _, o := range p.opts {
		switch {
		case sp.follows[o.name]:
			c.unknown(op, followSentence(c.prog, o.name, op))
		case sp.nameLists[o.name]:
			c.unknown(op, nameListSentence(c.prog, o.name))
		}
	}
	for _, t := range p.tolerated {
		for n := range sp.follows {
			if len(n) > 1 && abbreviates(t, n) {
				c.unknown(op, followSentence(c.prog, t, op))
			}
		}
		for n := range sp.nameLists {
			if len(n) > 1 && abbreviates(t, n) {
				c.unknown(op, nameListSentence(c.prog, t))
			}
		}
	}
}

func optionShown(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func followSentence(prog, opt, op string) string {
	verb := "read"
	if op != OpRead {
		verb = "change"
	}
	return "`" + prog + " " + optionShown(opt) + "` follows symbolic links, so it can " + verb + " files outside the places the command names"
}

func nameListSentence(prog, opt string) string {
	return "`" + prog + " " + optionShown(opt) + "` reads a list of file names from a file, so the files it reads are not named in the command"
}

func (c *collector) add(w Word, op string) {
	if w.Static && harmlessDevices[w.Lit] {
		return
	}
	t := Target{Path: w.Lit, Op: op, Segment: c.seg, Static: w.Static}
	if !w.Static {
		if w.Lit == "" {
			t.Path = w.Raw
		}
		c.complete = false
	}
	c.targets = append(c.targets, t)
}

func (c *collector) addAll(ws []Word, op string) {
	for _, w := range ws {
		if w.Static && w.Lit == "-" {
			continue // stdin or stdout
		}
		c.add(w, op)
	}
}

func (c *collector) addPath(p string, op string) {
	c.add(literalWord(p), op)
}

// mustKnow marks the reading incomplete when the arguments held something it cannot model.
func (c *collector) mustKnow(p parsedArgs) {
	if len(p.unknown) > 0 || len(p.risky) > 0 {
		c.complete = false
	}
}

// WriteTargets returns the paths the script would write, create or remove, for the
// write-boundary station and the delete guard, and whether that list is complete.
//
// Modeled: redirections (except /dev/null and the standard streams, and fd duplication); tee;
// cp, mv (its sources are removed), ln and install destinations (last operand or -t DIR, and the
// link a single-operand ln makes in the current directory); rm, rmdir, unlink, shred -u
// (remove); touch, mkdir, mkfifo, mknod, install -d (create); sed -i/--in-place files and their
// backups, and the files of sed's w, W and s///w; sort -o; uniq's second operand; tree -o;
// find -delete (its starting points, removed) and -fprint/-fprint0/-fprintf/-fls; git
// diff/log/show --output; curl -o/--output and its other file-writing options; wget -O and its
// log files; dd of=; truncate; chmod, chown and chgrp operands; tar -x (the -C directory, and
// always incomplete), tar -c/-r/-u/-A archives. Wrappers are looked through (Unwrap).
//
// complete is false when the script runs a program whose writes are not modeled (every program
// not named above that can write; the read-only programs are modeled as writing nothing), a
// wrapper that cannot be read, an option the model does not know, an expanded word that could
// become an option, a target that is not Static, a command word that is not a literal, an
// assignment or declaration (it can change what later programs do), a function definition
// (it can shadow a program), cd/pushd/popd (later relative paths move), or a program fed
// arguments at run time (xargs) that is not purely a reader; and always when bash could read
// the script's text differently (Script.Ambiguous).
func WriteTargets(s *Script) ([]Target, bool) {
	return collect(s, (*collector).redirectWrite, (*collector).segmentWrites)
}

// ReadTargets returns the paths the script would read, for the read-boundary station, and
// whether that list is complete: the file operands and file-valued options of the read-only
// programs, sed (with the files of its r/R commands), cp/mv/install sources, dd if=, tar
// archives and lists, the files of `<` and `<>` redirections, the current directory (".")
// for programs that read it when given no path (ls, du, tree, find, rg, grep -r, git), the
// directory git's -C options move it to, and the two paths of git diff's filesystem form
// (--no-index, or two operands).
// complete is false on the same grounds as WriteTargets, and for every program whose reads are
// not modeled.
func ReadTargets(s *Script) ([]Target, bool) {
	return collect(s, (*collector).redirectRead, (*collector).segmentReads)
}

// collect walks the script once for one direction: every segment's redirections and
// operands, then the redirections written on compound commands (which no segment owns).
func collect(s *Script, redirect func(*collector, Redirect), segment func(*collector, Segment)) ([]Target, bool) {
	c := collector{complete: true}
	if s == nil {
		return nil, true
	}
	// The targets of an ambiguous text are still listed, for the stations that refuse by path,
	// but bash may run other words than the ones they come from.
	c.complete = s.ambiguous == ""
	c.shadowed(s)
	for i, seg := range s.Segments {
		c.seg = i
		for _, r := range seg.Redirects {
			redirect(&c, r)
		}
		segment(&c, seg)
	}
	c.seg = -1
	for _, r := range s.CompoundRedirects {
		redirect(&c, r)
	}
	return c.targets, c.complete
}

// shadowed marks the reading incomplete when the script defines functions (a function can take
// any program's name) or uses a construct the parser walk could not classify.
func (c *collector) shadowed(s *Script) {
	for _, n := range s.notes {
		if n.kind == noteControl && (n.text == "function" || n.text == "unsupported construct") {
			c.complete = false
		}
	}
}

func (c *collector) redirectWrite(r Redirect) {
	if r.Writes {
		c.add(r.Target, OpWrite)
	}
}

func (c *collector) redirectRead(r Redirect) {
	if k := r.kind(); k == syntax.RdrIn || k == syntax.RdrInOut {
		c.add(r.Target, OpRead)
	}
}

// program returns the program a command word runs when it is a literal (quoted or not), by
// its base name when written as a path.
func program(w Word) string {
	if !w.Static || w.Lit == "" {
		return ""
	}
	if strings.Contains(w.Lit, "/") {
		return path.Base(w.Lit)
	}
	return w.Lit
}

// resolve unwraps a segment for target collection and returns the program and its arguments;
// ok is false (and the reading incomplete) when there is no knowable program.
func (c *collector) resolve(seg Segment) (name string, args []Word, appended bool, ok bool) {
	if len(seg.Assignments) > 0 {
		c.complete = false
	}
	if len(seg.Words) == 0 {
		return "", nil, false, false
	}
	inner, _, unwrapped := seg.Unwrap()
	if !unwrapped {
		c.complete = false
		return "", nil, false, false
	}
	if len(inner.Assignments) > 0 {
		c.complete = false
	}
	name = program(inner.Words[0])
	if name == "" {
		c.complete = false
		return "", nil, false, false
	}
	return name, inner.Words[1:], inner.Appended, true
}

// pureReaders never write a file whatever their arguments, so extra arguments from xargs
// cannot make them write.
var pureReaders = setOf("cat", "head", "tail", "wc", "grep", "ls", "stat", "du", "df", "echo",
	"printf", "pwd", "which", "basename", "dirname", "realpath", "readlink", "cut", "tr", "diff",
	"jq", "true", "false", ":", "test", "[", "sleep")

// noWrites are programs and builtins that write no file whatever their arguments; the
// read-only programs with write-capable options are modeled separately.
var noWrites = setOf("cat", "head", "tail", "wc", "grep", "ls", "stat", "du", "df", "echo",
	"printf", "pwd", "which", "basename", "dirname", "realpath", "readlink", "cut", "tr", "diff",
	"jq", "true", "false", ":", "test", "[", "sleep", "env", "exit", "return", "break",
	"continue", "shift", "wait", "type", "read", "set", "unset",
	// What remains of command and exec after Unwrap: command -v/-V, or exec with only
	// redirections (which are targets of their own).
	"command", "exec")

// changesDir are builtins after which relative paths resolve elsewhere.
var changesDir = setOf("cd", "pushd", "popd")

func (c *collector) segmentWrites(seg Segment) {
	name, args, appended, ok := c.resolve(seg)
	if !ok {
		return
	}
	c.prog = name
	if appended && !pureReaders[name] {
		c.complete = false
	}
	if noWrites[name] {
		return
	}
	if changesDir[name] {
		c.complete = false
		return
	}
	modelsOnce.Do(initModels)
	model, ok := writeModels[name]
	if !ok {
		c.complete = false
		return
	}
	model(c, args)
}

func (c *collector) segmentReads(seg Segment) {
	name, args, appended, ok := c.resolve(seg)
	if !ok {
		return
	}
	c.prog = name
	if noFileReads[name] {
		return
	}
	if appended {
		// xargs supplies file operands at run time, from its input or its -a file.
		c.unknown(OpRead, "`xargs` gives `"+name+"` file names it reads at run time, so the files it reads are not named in the command")
	}
	if changesDir[name] {
		c.complete = false
		return
	}
	modelsOnce.Do(initModels)
	model, ok := readModels[name]
	if !ok {
		c.complete = false
		return
	}
	model(c, args)
}

// noFileReads are programs and builtins that read no file named by their arguments.
var noFileReads = setOf("echo", "printf", "pwd", "true", "false", ":", "basename", "dirname",
	"which", "type", "tr", "sleep", "exit", "return", "break", "continue", "shift", "wait", "set",
	"unset", "env", "mkdir", "rm", "rmdir", "unlink", "mkfifo", "test", "[", "command", "exec")
