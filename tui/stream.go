package tui

import "strings"

// Streaming text is rendered a paragraph at a time: the paragraphs that ended (a blank
// line outside a code fence) are rendered once and kept, and each frame renders only the
// paragraph still growing. Rendering the whole text again for every piece would cost a
// frame time that grows with the answer, so a long answer would fall behind its stream.

// paragraphs is the rendered form of an assistant entry's text, built as it grows. The
// finished paragraphs are kept as lines, appended to and never rewritten, so a frame
// takes them as they are: joining and splitting them again would cost a frame an
// allocation the size of the whole answer.
type paragraphs struct {
	done     int      // bytes of the text rendered into rendered
	rendered []string // the finished paragraphs' lines, a blank line between paragraphs
	parts    int      // how many renderings rendered holds
	inFence  bool     // whether text[done:] starts inside a code fence
}

// lines renders text (which extends the text of the last call, or the state is reset by
// the caller) at width with md: the finished paragraphs' lines, and the lines of the
// paragraph still growing (after the blank line that parts it from them), nil when there
// is none. Together they are the lines of the renderings joined by a blank line.
func (p *paragraphs) lines(md *markdown, text string, width int) (done, tail []string) {
	if cut, fence := paragraphEnd(text, p.done, p.inFence); cut > p.done {
		if p.parts > 0 {
			p.rendered = append(p.rendered, "")
		}
		p.rendered = append(p.rendered, strings.Split(md.render(sanitizeLines(text[p.done:cut]), width), "\n")...)
		p.parts++
		p.done, p.inFence = cut, fence
	}
	if strings.TrimSpace(text[p.done:]) == "" {
		if p.parts == 0 {
			return []string{""}, nil
		}
		return p.rendered, nil
	}
	growing := strings.Split(md.render(sanitizeLines(text[p.done:]), width), "\n")
	if p.parts == 0 {
		return growing, nil
	}
	return p.rendered, append([]string{""}, growing...)
}

// render is lines as one string.
func (p *paragraphs) render(md *markdown, text string, width int) string {
	done, tail := p.lines(md, text, width)
	return strings.Join(append(done[:len(done):len(done)], tail...), "\n")
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
