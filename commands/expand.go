package commands

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
)

// placeholder is the whole-argument-string placeholder; "$ARGUMENTS[N]" is its
// indexed form.
const placeholder = "$ARGUMENTS"

// Expand returns the prompt the command's body makes with args, the argument string of
// an invocation (see the package doc for the placeholders). It refuses with CodeInvalid
// arguments that cannot be split and a body that expands to nothing. It is a function
// of the body and args alone: the same call returns the same prompt.
func (c *Command) Expand(args string) (string, error) {
	raw := strings.TrimSpace(args)
	words, err := SplitArgs(raw)
	if err != nil {
		return "", sema.Errorf(CodeInvalid, "the arguments of /%s %s", c.Name, sema.MessageOf(err)).With("path", c.Path).With("arguments", raw)
	}
	body := strings.TrimSpace(c.Body)
	out := substitute(body, raw, words)
	if raw != "" && !strings.Contains(body, placeholder) {
		if out != "" {
			out += "\n\n"
		}
		out += "ARGUMENTS: " + raw
	}
	if strings.TrimSpace(out) == "" {
		return "", sema.Errorf(CodeInvalid, "the command file %s expands to an empty prompt; write the prompt in the file below its front matter", c.Path).With("path", c.Path)
	}
	return out, nil
}

// substitute replaces the placeholders of body in one pass, so that an argument holding
// a placeholder is not expanded again. A positional placeholder whose argument is
// missing stays as written.
func substitute(body, raw string, words []string) string {
	var b strings.Builder
	for i := 0; i < len(body); {
		j := strings.IndexByte(body[i:], '$')
		if j < 0 {
			b.WriteString(body[i:])
			break
		}
		b.WriteString(body[i : i+j])
		i += j
		rest := body[i:]
		switch {
		case strings.HasPrefix(rest, placeholder):
			if idx, width, ok := index(rest[len(placeholder):]); ok {
				n := len(placeholder) + width
				if idx < len(words) {
					b.WriteString(words[idx])
				} else {
					b.WriteString(rest[:n])
				}
				i += n
				continue
			}
			b.WriteString(raw)
			i += len(placeholder)
		case len(rest) >= 2 && rest[1] >= '1' && rest[1] <= '9':
			if n := int(rest[1] - '1'); n < len(words) {
				b.WriteString(words[n])
			} else {
				b.WriteString(rest[:2])
			}
			i += 2
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String()
}

// index reads "[N]" at the start of s: N, the width of "[N]", and whether s starts so.
// N has at most six digits.
func index(s string) (n, width int, ok bool) {
	if !strings.HasPrefix(s, "[") {
		return 0, 0, false
	}
	if len(s) > 8 {
		s = s[:8] // "[" six digits "]": never scan further, however long the body
	}
	end := strings.IndexByte(s, ']')
	if end < 2 || end > 7 {
		return 0, 0, false
	}
	for _, c := range s[1:end] {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
	}
	n, err := strconv.Atoi(s[1:end])
	return n, end + 1, err == nil
}

// SplitArgs splits an argument string into words as a POSIX shell splits them, with
// no expansion: blanks separate words, '…' is literal, in "…" a backslash escapes ",
// \, $ and `, and outside quotes a backslash escapes any character; quoted parts join
// the word they touch, and "" is an empty word. An unterminated quote is refused with
// CodeInvalid.
func SplitArgs(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case '\'':
			inWord = true
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, unclosed('\'')
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				c := s[i]
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i+1 < len(s) {
					switch s[i+1] {
					case '"', '\\', '$', '`':
						i++
						c = s[i]
					case '\n':
						i++
						continue
					}
				}
				cur.WriteByte(c)
			}
			if !closed {
				return nil, unclosed('"')
			}
		case '\\':
			inWord = true
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					cur.WriteByte(s[i])
				}
			} else {
				cur.WriteByte(c)
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func unclosed(q byte) *sema.Error {
	return sema.Errorf(CodeInvalid, "have a %c quote that is not closed; close it, or escape it with a backslash", q)
}

// namePattern is the form of a command name in a prompt: a prompt whose first word is
// "/" and such a name is an invocation, refused when no command has the name.
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9_:-]+$`) })

// Split reads a prompt as an invocation "/name arguments": the name (what follows the
// "/" up to the first blank) and the argument string (the rest, trimmed). ok is false
// when the prompt does not begin with "/" and a name.
func Split(prompt string) (name, args string, ok bool) {
	rest, found := strings.CutPrefix(prompt, "/")
	if !found {
		return "", "", false
	}
	end := strings.IndexAny(rest, " \t\r\n")
	if end < 0 {
		end = len(rest)
	}
	if end == 0 {
		return "", "", false
	}
	return rest[:end], strings.TrimSpace(rest[end:]), true
}

// CommandShaped reports whether name has the form of a command name: lowercase ASCII
// letters, digits, "_", "-" and ":". A prompt "/name …" with such a name is an
// invocation even when no command has the name (and is refused); "/tmp/x is broken"
// and "/Users …" are not.
func CommandShaped(name string) bool { return namePattern().MatchString(name) }

// JoinArgs writes words as an argument string that SplitArgs splits back into the same
// words: a word with a blank, a quote, a backslash, or an empty word is single-quoted.
// A command line that gave an invocation as several arguments
// (sema run /name a "b c") is put back together with it.
func JoinArgs(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && !strings.ContainsAny(w, " \t\r\n'\"\\") {
			out[i] = w
			continue
		}
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
