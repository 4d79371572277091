package gate

import (
	"context"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/shellscan"
)

// Placing a shell command's targets: what the command writes, reads and removes —
// including behind the commands it runs through indirection — and where on the
// filesystem each target lies, as the boundary stations and the delete guard judge it.

// removers are the programs whose work is removing files.
var removers = []string{"rm", "rmdir", "unlink", "shred", "find", "mv"}

// nestedTargets lists targets the script's own lists cannot hold: the write and read
// targets of every command a segment runs through indirection (shellscan.Segment.Follow:
// a script given to `sh -c '…'` or eval, a trap action, env -S, find -exec, the command
// behind a wrapper or a runner such as setsid, flock, su -c or chroot), and an
// unplaceable removal for a removal program whose targets cannot be read — a command the
// reading could not follow (env -C dir rm …, unshare --unknown rm …) or one fed by xargs.
// Each target carries the top-level segment that runs it, so a move of the working
// directory before it is honoured; a nested script that moves its own directory, or a
// runner that runs its command in another directory, leaves relative targets unplaced,
// and one that runs it in another root or on another machine leaves every target
// unplaced. The delete guard and the boundary stations judge these like any other target;
// they never make a command acceptable (the command's own lists are incomplete).
func nestedTargets(s *shellscan.Script) (writes, reads []shellscan.Target) {
	for i, seg := range s.Segments {
		runs, _ := seg.Follow()
		done := map[*shellscan.Script]bool{}
		for k, run := range runs {
			inner, _, ok := run.Unwrap()
			if run.Opaque || !ok || inner.Appended {
				if removalIn(inner, run.Opaque || !ok) != "" {
					writes = append(writes, shellscan.Target{Op: shellscan.OpRemove, Segment: i})
				}
			}
			if k == 0 {
				continue // the segment itself: the script's own lists hold its targets
			}
			one := run.Script
			moved := false
			if one != nil {
				if done[one] {
					continue
				}
				done[one] = true
				moved = dirMoved(one) >= 0
				if one.Ambiguous() != "" {
					// Bash may read the nested text differently from its parse: it may
					// remove anything.
					writes = append(writes, shellscan.Target{Path: one.Source, Op: shellscan.OpRemove, Segment: i})
				}
			} else {
				one = &shellscan.Script{Segments: []shellscan.Segment{run.Segment}}
			}
			w, _ := shellscan.WriteTargets(one)
			r, _ := shellscan.ReadTargets(one)
			for _, list := range [2][]shellscan.Target{w, r} {
				for j, t := range list {
					list[j].Segment = i
					relative := !strings.HasPrefix(t.Path, "/") && !strings.HasPrefix(t.Path, "~")
					switch {
					case run.Place == shellscan.PlaceElsewhere:
						list[j].Static, list[j].Path = false, "(in another root) "+t.Path
					case relative && (moved || run.Place == shellscan.PlaceOtherDir):
						list[j].Static = false
					}
				}
			}
			writes, reads = append(writes, w...), append(reads, r...)
		}
	}
	return writes, reads
}

// removalIn returns the removal program a segment runs, or "". With anywhere set (the
// command's arguments could not be read) every literal word counts as a possible
// command word.
func removalIn(seg shellscan.Segment, anywhere bool) string {
	for i, w := range seg.Words {
		if i > 0 && !anywhere {
			break
		}
		if !w.Static {
			continue
		}
		if slices.Contains(removers, filepath.Base(w.Lit)) {
			return filepath.Base(w.Lit)
		}
		if anywhere {
			// A word may be script text a program runs (sh -c 'rm …' behind env -C, a
			// script that does not parse): every name in it counts.
			for _, f := range strings.FieldsFunc(w.Lit, func(r rune) bool { return strings.ContainsRune(" \t\n;&|()`'\"$<>{}", r) }) {
				if slices.Contains(removers, filepath.Base(f)) {
					return filepath.Base(f)
				}
			}
		}
	}
	return ""
}

// dirMoved returns the index of the first segment whose relative paths may no longer be
// below the task root, or -1 when there is none: the segment after one that may change
// the shell's working directory (cd, pushd, popd, a sourced or evaluated script, a
// command word the shell expands), or a segment whose wrapper cannot be read (env -C
// moves its own command). In a script with control structures every segment counts (a
// loop may run an earlier segment again after the move).
func dirMoved(s *shellscan.Script) int {
	for i, seg := range s.Segments {
		moves, self := changesDir(seg)
		if !moves {
			continue
		}
		switch {
		case s.HasControl:
			return 0
		case self:
			return i
		}
		return i + 1
	}
	return -1
}

// changesDir reports whether a segment may change the working directory of what follows
// it, and whether it may run its own command elsewhere.
func changesDir(seg shellscan.Segment) (moves, self bool) {
	if len(seg.Words) == 0 {
		return false, false
	}
	inner, _, ok := seg.Unwrap()
	if !ok {
		return true, true
	}
	for _, s := range [2]shellscan.Segment{seg, inner} {
		if len(s.Words) == 0 {
			continue
		}
		w := s.Words[0]
		if !w.Static {
			return true, true
		}
		switch filepath.Base(w.Lit) {
		case "cd", "pushd", "popd", "source", ".", "eval":
			return true, false
		}
	}
	return false, false
}

// placer resolves the targets of one command.
type placer struct {
	g     *Gate
	scope *permission.Scope
	// moved is dirMoved's answer: relative targets of that segment and later ones
	// (and of compound redirections) cannot be placed.
	moved int
	// memo holds the resolutions already made for this command.
	memo map[string]string
}

// tildePath reports a target whose only expansion is a leading "~" or "~/": shellscan
// keeps the tilde in its Path. Anything else the shell would expand is not placed.
func tildePath(t shellscan.Target) bool {
	return (t.Path == "~" || strings.HasPrefix(t.Path, "~/")) && !strings.ContainsAny(t.Path, "$`*?[]{}\\'\"")
}

// place resolves shell targets. A relative path is relative to the task root, where the
// shell tool runs commands, unless the directory may have moved before it.
func (pl *placer) place(ctx context.Context, ts []shellscan.Target) []placed {
	g, s := pl.g, pl.scope
	out := make([]placed, 0, len(ts))
	// A path named again with the same operation is judged once: every station reads
	// only the placement and the operation.
	seen := make(map[[2]string]bool, len(ts))
	for _, t := range ts {
		p := placed{t: t}
		if t.Path == "" || !t.Static && !tildePath(t) {
			out = append(out, p)
			continue
		}
		relative := !strings.HasPrefix(t.Path, "/") && !strings.HasPrefix(t.Path, "~")
		if relative && pl.moved >= 0 && (t.Segment < 0 || t.Segment >= pl.moved) {
			out = append(out, p)
			continue
		}
		raw, ok := joinPath(s, t.Path)
		if !ok {
			out = append(out, p)
			continue
		}
		p.abs = filepath.Clean(raw)
		key := [2]string{raw, t.Op}
		if seen[key] {
			continue
		}
		seen[key] = true
		if slices.Contains(sinks, p.abs) {
			p.sink = true
			p.canonical = p.abs
			out = append(out, p)
			continue
		}
		if c, ok := pl.memo[raw]; ok {
			p.canonical = c
		} else if g.resolver != nil {
			if c, err := g.resolver.Canonicalize(ctx, raw); err == nil {
				p.canonical = c
			}
			pl.memo[raw] = p.canonical
		}
		if t.Op == shellscan.OpRead && p.canonical != "" && g.resolver != nil {
			p.hardLinked = g.resolver.HardLinked(ctx, p.canonical)
		}
		out = append(out, p)
	}
	return out
}
