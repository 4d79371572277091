package main

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// utf8Out returns w made to pass only valid UTF-8, for output whose text comes from the
// store. A stored string is not always UTF-8, and need not be: a workspace path is bytes
// on Linux (a directory named in Latin-1 is a valid root), and a byte of a transcript can
// have been damaged where SQLite's checks cannot see it. Neither makes the store unsound,
// so both are shown, never refused; but a reader of the output — a terminal, a program
// decoding JSON, which RFC 8259 requires to be UTF-8 — must not meet invalid bytes.
// Text output writes each invalid byte as \xNN, so a path can still be told apart and
// typed; JSON output as \ufffd, the escape of the replacement character, valid in the
// JSON string it can only be in (every byte outside strings is ASCII).
//
// Each Write is judged alone: fmt and encoding/json hand a whole formatted piece to one
// Write, so a valid sequence is never split between two.
func utf8Out(w io.Writer, format string) io.Writer {
	escape := func(b byte) string { return fmt.Sprintf(`\x%02x`, b) }
	if format == "json" {
		escape = func(byte) string { return `\ufffd` }
	}
	return &utf8Writer{w: w, escape: escape}
}

type utf8Writer struct {
	w      io.Writer
	escape func(byte) string
}

func (u *utf8Writer) Write(p []byte) (int, error) {
	if utf8.Valid(p) {
		return u.w.Write(p)
	}
	out := make([]byte, 0, len(p)+16)
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && n <= 1 {
			out = append(out, u.escape(p[i])...)
			i++
			continue
		}
		out = append(out, p[i:i+n]...)
		i += n
	}
	if _, err := u.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
