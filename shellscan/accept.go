package shellscan

import (
	"path"
)

// FileCommands is the acceptEdits mode's closed set of file commands. It is read when the
// package is initialized; changing it changes nothing.
var FileCommands = []string{"mkdir", "touch", "rm", "rmdir", "mv", "cp", "sed"}

var fileCommands = setOf(FileCommands...)

// AcceptsFileCommand is the acceptEdits mode's file-command reading: true only if EVERY segment
// is a simple command whose command word is written as a plain unquoted literal in FileCommands
// (`/bin/rm`, `"rm"` and `r\m` are not `rm`), joined only by && || ; or newlines, with no
// redirection, pipe, `&`, substitution, leading assignment, wrapper in front (a wrapper is not
// in the set), control structure or expansion of any kind in any word, and the call is not
// runInBackground. A sed command must be readable completely (no -f script file) and its
// script must not write (w, W, s///w) or run commands (e, s///e); -i is accepted.
//
// The answer is only a license for the mode to answer the call's ordinary question; the caller
// still places WriteTargets inside the write roots (writesPlaced) and runs the delete guard. As
// a second line of defense the reading also refuses a command whose write targets are not
// complete and one that removes the filesystem root. A script whose text bash could read
// differently (Script.Ambiguous) is refused.
func AcceptsFileCommand(s *Script, runInBackground bool) bool {
	if s == nil || s.ambiguous != "" || runInBackground || len(s.Segments) == 0 || s.HasSubstitution || s.HasBackground ||
		s.HasPipe || s.HasControl || len(s.CompoundRedirects) > 0 {
		return false
	}
	for _, n := range s.notes {
		if n.kind != noteSegment {
			return false
		}
	}
	if _, ok := s.EvaluatesCode(); ok {
		return false
	}
	for _, seg := range s.Segments {
		if len(seg.Assignments) > 0 || len(seg.Redirects) > 0 || seg.Background || seg.InSubstitution {
			return false
		}
		switch seg.Joiner {
		case "", "&&", "||", ";", "newline":
		default:
			return false
		}
		name := seg.Name()
		if !fileCommands[name] || seg.Words[0].Raw != name {
			return false
		}
		for _, w := range seg.Words {
			if !w.Static {
				return false
			}
		}
		if name == "sed" {
			call := readSed(seg.Words[1:])
			if !call.complete || call.script.exec || len(call.script.writes) > 0 {
				return false
			}
		}
	}
	targets, complete := WriteTargets(s)
	if !complete {
		return false
	}
	for _, t := range targets {
		if t.Op == OpRemove && path.Clean(t.Path) == "/" {
			return false
		}
	}
	return true
}
