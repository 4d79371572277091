package files

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// showName is how a listing spells a file name or path: as it is when it is plain, and
// as a Go-quoted string ("a\nb", "\x1b[31m") when it holds a newline, any other control
// character, an invisible format character (a bidirectional override) or bytes that are
// not UTF-8. A name with a newline would otherwise read as two entries, and an escape
// sequence would drive the terminal that shows the answer. A plain name that starts with
// a double quote is quoted too, so a quoted spelling can only mean a quoted name.
func showName(s string) string {
	if !needsQuote(s) {
		return s
	}
	return strconv.Quote(s)
}

func needsQuote(s string) bool {
	if strings.HasPrefix(s, `"`) || !utf8.ValidString(s) {
		return true
	}
	return strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	})
}
