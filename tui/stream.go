package tui

import "strings"

// Streaming text is rendered a paragraph at a time: the paragraphs that ended (a blank
// line outside a code fence) are rendered once and kept, and each frame renders only the
// paragraph still growing. Rendering the whole text again for every piece would cost a
// frame time that grows with the answer, so a long answer would fall behind its stream.

// paragraphs is the rendered form of an assistant entry's text, built as it grows.
type paragraphs struct {
	done     int      // bytes of the text rendered into rendered
	rendered []string // the finished paragraphs' renderings, in order
	inFence  bool     // whether text[done:] starts inside a code fence
}

// render renders text (which extends the text of the last call, or the state is reset
// by the caller) at width with md.
func (p *paragraphs) render(md *markdown, text string, width int) string {
	if cut, fence := paragraphEnd(text, p.done, p.inFence); cut > p.done {
		p.rendered = append(p.rendered, md.render(sanitizeLines(text[p.done:cut]), width))
		p.done, p.inFence = cut, fence
	}
	parts := p.rendered
	if tail := strings.TrimSpace(text[p.done:]); tail != "" {
		parts = append(parts[:len(parts):len(parts)], md.render(sanitizeLines(text[p.done:]), width))
	}
	return strings.Join(parts, "\n\n")
}

// paragraphEnd returns the end of the last finished paragraph of text after from (the
// offset just past a blank line outside a fence), and whether a fence is open there;
// from and inFence when no paragraph ended.
func paragraphEnd(text string, from int, inFence bool) (int, bool) {
	cut, cutFence := from, inFence
	prevBlank := false
	for i := from; i < len(text); {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			break // the last line is still growing
		}
		line := strings.TrimSpace(text[i : i+j])
		i += j + 1
		switch {
		case strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~"):
			inFence = !inFence
			prevBlank = false
		case line == "":
			if !inFence && !prevBlank && i-j-1 > from {
				cut, cutFence = i, inFence
			}
			prevBlank = true
		default:
			prevBlank = false
		}
	}
	return cut, cutFence
}
