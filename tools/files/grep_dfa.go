package files

import (
	"encoding/binary"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// lineDFA finds the lines of a buffer that hold a match of a pattern confined to lines
// (no match contains a newline), for patterns with no literal to look for first. Go's
// regexp has no DFA: on such a pattern it runs its backtracker or NFA over every byte of
// every file, several times slower than a DFA. This is a lazy DFA over the pattern's
// compiled program, as RE2 and ripgrep build them: a state is the set of program threads
// alive after the previous character plus what the matcher must know of that character
// (a word character, the start of a line); a transition is computed the first time it is
// needed and remembered, so a typical ASCII file costs one table lookup per byte.
//
// It only tells whether a line holds a match, which is all a search by lines needs: a
// thread is started at every position, and a line matches when the match instruction is
// reached anywhere in it. Non-ASCII bytes are decoded as the regexp decodes them (an
// invalid byte is U+FFFD); their transitions are remembered per rune, or once for all of
// them when the pattern cannot tell them apart. A pattern that needs more than
// dfaMaxStates states makes the DFA give up and the regexp finish. A DFA is not safe for
// concurrent use: each scan takes its own from the matcher's pool.
type lineDFA struct {
	prog   *syntax.Prog
	states map[string]*dfaState
	start  *dfaState
	// sameHigh: every instruction of prog matches either all non-ASCII runes or none,
	// so one transition (dfaState.high) serves them all.
	sameHigh bool
	// giveUps counts the scans that overflowed dfaMaxStates; after dfaMaxGiveUps the DFA
	// refuses, and the regexp scans instead.
	giveUps int

	// scratch for closures and transitions
	stack []uint32
	seen  sparseSet
	runes []uint32 // rune instructions of the last closure
	next  []uint32
	key   []byte
}

// dfaState is a state of a lineDFA.
type dfaState struct {
	// insts are the program counters of the threads waiting for the next character,
	// sorted; the program's start is added at every position and is not listed.
	insts []uint32
	ctx   uint8 // ctxWord, ctxLineStart: what the previous character was
	// next holds the transitions on ASCII bytes computed so far (nil: not yet);
	// dfaMatch means a match ends before the byte, on the byte's line.
	next [utf8.RuneSelf]*dfaState
	// high is the transition on any non-ASCII rune when the DFA is sameHigh.
	high *dfaState
	// other holds the transitions on non-ASCII runes otherwise.
	other map[rune]*dfaState
	// eol is whether a match ends at the end of the line: 0 unknown, 1 yes, -1 no.
	eol int8
}

const (
	ctxWord      = 1 << iota // the previous character is a word character (\b)
	ctxLineStart             // no character yet on this line
)

// dfaMatch is the target of a transition before which a match ends.
var dfaMatch = &dfaState{}

const (
	// dfaMaxStates bounds the states one DFA keeps (about 1 KB each); a pattern that
	// needs more (a counted repetition of a class, thousands of possible positions)
	// makes the scan give up and the regexp finish the buffer.
	dfaMaxStates  = 2000
	dfaMaxGiveUps = 4
)

// newLineDFA returns a DFA for prog, or nil when prog uses what the DFA does not model:
// text anchors (a pattern confined to lines has line anchors only).
func newLineDFA(prog *syntax.Prog) *lineDFA {
	for _, in := range prog.Inst {
		if in.Op == syntax.InstEmptyWidth && syntax.EmptyOp(in.Arg)&(syntax.EmptyBeginText|syntax.EmptyEndText) != 0 {
			return nil
		}
	}
	d := &lineDFA{prog: prog, seen: newSparseSet(len(prog.Inst)), sameHigh: sameOnHighRunes(prog)}
	d.reset()
	return d
}

// sameOnHighRunes reports whether each rune instruction of prog matches all non-ASCII
// runes (., [^a]) or none ([A-Z], a literal): then every non-ASCII rune, U+FFFD for an
// invalid byte included, moves a DFA state to the same place (none is a word character).
func sameOnHighRunes(prog *syntax.Prog) bool {
	for _, in := range prog.Inst {
		switch in.Op {
		case syntax.InstRune1:
			if in.Rune[0] >= utf8.RuneSelf {
				return false
			}
		case syntax.InstRune:
			if syntax.Flags(in.Arg)&syntax.FoldCase != 0 {
				// One rune matched with its case variants: k also matches the Kelvin sign.
				r0 := in.Rune[0]
				if len(in.Rune) != 1 || r0 >= utf8.RuneSelf {
					return false
				}
				for r := unicode.SimpleFold(r0); r != r0; r = unicode.SimpleFold(r) {
					if r >= utf8.RuneSelf {
						return false
					}
				}
				continue
			}
			// The ranges are sorted and disjoint: none reaches U+0080, or one covers
			// U+0080 to the last rune.
			none, all := true, false
			for i := 0; i+1 < len(in.Rune); i += 2 {
				lo, hi := in.Rune[i], in.Rune[i+1]
				if hi >= utf8.RuneSelf {
					none = false
					all = all || lo <= utf8.RuneSelf && hi == unicode.MaxRune
				}
			}
			if !none && !all {
				return false
			}
		}
	}
	return true
}

// reset drops every state.
func (d *lineDFA) reset() {
	d.states = map[string]*dfaState{}
	d.start = d.intern(ctxLineStart, nil)
}

// scan calls hit with the span [start, end) of each line of buf[from:] that holds a match,
// in order; hit returns false to stop. from is the start of a line. ok is false when the
// DFA gave up (too many states): then the lines from resume on have not been looked at.
//
// A NUL byte marks the buffer binary, and Grep reports no line of a binary file: the scan
// stops there, and the lines after it are not looked at. (Its transition is never
// stored, so the hot loop leaves at a NUL at no cost of its own.)
func (d *lineDFA) scan(buf []byte, from int, hit func(start, end int) bool) (resume int, ok bool) {
	if d.giveUps >= dfaMaxGiveUps {
		return from, false
	}
	s := d.start
	i := from
	for i < len(buf) {
		// The hot loop: ASCII bytes whose transitions are known and lead to no match,
		// four at a time, then one at a time.
		for i+4 <= len(buf) {
			b := buf[i : i+4 : i+4]
			if (b[0] | b[1] | b[2] | b[3]) >= utf8.RuneSelf {
				break
			}
			n := s.next[b[0]]
			if n == nil || n == dfaMatch {
				break
			}
			s, i = n, i+1
			if n = s.next[b[1]]; n == nil || n == dfaMatch {
				break
			}
			s, i = n, i+1
			if n = s.next[b[2]]; n == nil || n == dfaMatch {
				break
			}
			s, i = n, i+1
			if n = s.next[b[3]]; n == nil || n == dfaMatch {
				break
			}
			s, i = n, i+1
		}
		for i < len(buf) {
			c := buf[i]
			if c >= utf8.RuneSelf {
				break
			}
			n := s.next[c]
			if n == nil || n == dfaMatch {
				break
			}
			s = n
			i++
		}
		if i == len(buf) {
			break
		}
		c := buf[i]
		var n *dfaState
		size := 1
		if c == 0 {
			return len(buf), true
		}
		if c < utf8.RuneSelf {
			if n = s.next[c]; n == nil {
				n = d.stepByte(s, c)
			}
		} else {
			var r rune
			r, size = utf8.DecodeRune(buf[i:])
			if d.sameHigh {
				if n = s.high; n == nil {
					n = d.stepRune(s, utf8.RuneError)
				}
			} else if n = s.other[r]; n == nil {
				n = d.stepRune(s, r)
			}
		}
		switch n {
		case nil:
			return d.giveUp(buf, i)
		case dfaMatch:
			ls, le := lineStart(buf, i), lineEnd(buf, i)
			if !hit(ls, le) || le >= len(buf) {
				return len(buf), true
			}
			s, i = d.start, le+1
			continue
		}
		s = n
		i += size
	}
	// The last line, when the buffer does not end with a newline, ends at the buffer's end.
	if len(buf) > from && buf[len(buf)-1] != '\n' {
		if s.eol == 0 {
			s.eol = -1
			if d.closure(s, -1) {
				s.eol = 1
			}
		}
		if s.eol > 0 {
			hit(lineStart(buf, len(buf)), len(buf))
		}
	}
	return len(buf), true
}

// giveUp drops the states after an overflow and answers where the caller must resume:
// the start of the line holding i.
func (d *lineDFA) giveUp(buf []byte, i int) (int, bool) {
	d.giveUps++
	d.reset()
	return lineStart(buf, i), false
}

// stepByte computes and remembers the transition of s on the ASCII byte c; nil when the
// DFA is full. A newline ends the line: the transition is dfaMatch when a match ends
// there, else the start state.
func (d *lineDFA) stepByte(s *dfaState, c byte) *dfaState {
	var n *dfaState
	if c == '\n' {
		n = d.start
		if d.closure(s, -1) {
			n = dfaMatch
		}
	} else {
		n = d.step(s, rune(c))
	}
	if n != nil {
		s.next[c] = n
	}
	return n
}

// stepRune is stepByte for a non-ASCII rune (any one when the DFA is sameHigh).
func (d *lineDFA) stepRune(s *dfaState, r rune) *dfaState {
	n := d.step(s, r)
	switch {
	case n == nil:
	case d.sameHigh:
		s.high = n
	default:
		if s.other == nil {
			s.other = map[rune]*dfaState{}
		}
		s.other[r] = n
	}
	return n
}

// step is the transition of s on the rune r (not a newline).
func (d *lineDFA) step(s *dfaState, r rune) *dfaState {
	if d.closure(s, r) {
		return dfaMatch
	}
	d.next = d.next[:0]
	for _, pc := range d.runes {
		in := &d.prog.Inst[pc]
		var ok bool
		switch in.Op {
		case syntax.InstRune1:
			ok = r == in.Rune[0]
		case syntax.InstRuneAny:
			ok = true
		case syntax.InstRuneAnyNotNL:
			ok = r != '\n'
		default:
			ok = in.MatchRune(r)
		}
		if ok {
			d.next = append(d.next, in.Out)
		}
	}
	slices.Sort(d.next)
	d.next = slices.Compact(d.next)
	var ctx uint8
	if syntax.IsWordChar(r) {
		ctx = ctxWord
	}
	return d.intern(ctx, d.next)
}

// closure follows the empty transitions from s's threads and the program's start, at the
// position between s's previous character and next (-1: the end of the line). It reports
// whether a match ends there, and leaves the rune instructions reached in d.runes.
func (d *lineDFA) closure(s *dfaState, next rune) bool {
	var flags syntax.EmptyOp
	if s.ctx&ctxLineStart != 0 {
		flags |= syntax.EmptyBeginLine
	}
	if next < 0 {
		flags |= syntax.EmptyEndLine
	}
	if (s.ctx&ctxWord != 0) != (next >= 0 && syntax.IsWordChar(next)) {
		flags |= syntax.EmptyWordBoundary
	} else {
		flags |= syntax.EmptyNoWordBoundary
	}
	d.seen.clear()
	d.runes = d.runes[:0]
	d.stack = append(d.stack[:0], uint32(d.prog.Start))
	for i := len(s.insts) - 1; i >= 0; i-- {
		d.stack = append(d.stack, s.insts[i])
	}
	matched := false
	for len(d.stack) > 0 {
		pc := d.stack[len(d.stack)-1]
		d.stack = d.stack[:len(d.stack)-1]
		if !d.seen.add(pc) {
			continue
		}
		in := &d.prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			d.stack = append(d.stack, in.Arg, in.Out)
		case syntax.InstCapture, syntax.InstNop:
			d.stack = append(d.stack, in.Out)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(in.Arg)&^flags == 0 {
				d.stack = append(d.stack, in.Out)
			}
		case syntax.InstMatch:
			matched = true
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			d.runes = append(d.runes, pc)
		}
	}
	return matched
}

// intern returns the state of the sorted threads insts after a character described by
// ctx, creating it; nil when the DFA is full.
func (d *lineDFA) intern(ctx uint8, insts []uint32) *dfaState {
	d.key = append(d.key[:0], ctx)
	for _, pc := range insts {
		d.key = binary.LittleEndian.AppendUint32(d.key, pc)
	}
	if s, ok := d.states[string(d.key)]; ok {
		return s
	}
	if len(d.states) >= dfaMaxStates {
		return nil
	}
	s := &dfaState{insts: slices.Clone(insts), ctx: ctx}
	d.states[string(d.key)] = s
	return s
}

// sparseSet is a set of program counters cleared in constant time.
type sparseSet struct {
	sparse, dense []uint32
}

func newSparseSet(n int) sparseSet {
	return sparseSet{sparse: make([]uint32, n), dense: make([]uint32, 0, n)}
}

func (s *sparseSet) clear() { s.dense = s.dense[:0] }

// add adds pc and reports whether it was absent.
func (s *sparseSet) add(pc uint32) bool {
	i := s.sparse[pc]
	if int(i) < len(s.dense) && s.dense[i] == pc {
		return false
	}
	s.sparse[pc] = uint32(len(s.dense))
	s.dense = append(s.dense, pc)
	return true
}
