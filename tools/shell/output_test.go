package shell

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// want is the capped text by definition, computed on runes of the whole input.
func wantCapped(s string, keep int) string {
	r := []rune(s)
	if len(r) <= 2*keep {
		return string(r)
	}
	unit := "characters"
	if len(r)-2*keep == 1 {
		unit = "character"
	}
	return string(r[:keep]) + fmt.Sprintf("\n\n... [%d %s elided] ...\n\n", len(r)-2*keep, unit) + string(r[len(r)-keep:])
}

func TestCaptureBoundaries(t *testing.T) {
	t.Parallel()
	const keep = OutputKeep
	numbered := func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "%d,", i)
		}
		return b.String()[:n]
	}
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"short", "hello\n"},
		{"one below", numbered(2*keep - 1)},
		{"exactly the cap", numbered(2 * keep)},
		{"one over", numbered(2*keep + 1)},
		{"far over", numbered(10*keep + 7)},
		{"multibyte at the cap", strings.Repeat("é", 2*keep)},
		{"multibyte one over", strings.Repeat("日本", keep) + "語"},
		{"four-byte runes far over", strings.Repeat("😀x", 3*keep)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := wantCapped(tc.in, keep)
			// Whole, byte by byte, and in random chunks that split runes: the same text.
			whole := newCapture(keep)
			whole.Write([]byte(tc.in))
			if got := whole.String(); got != want {
				t.Fatalf("whole write: got %d bytes, want %d; elision line %q", len(got), len(want), elisionLine(got))
			}
			if whole.Len() != utf8.RuneCountInString(tc.in) {
				t.Fatalf("Len %d, want %d", whole.Len(), utf8.RuneCountInString(tc.in))
			}
			if len(tc.in) < 5*keep {
				bytewise := newCapture(keep)
				for i := 0; i < len(tc.in); i++ {
					bytewise.Write([]byte{tc.in[i]})
				}
				if got := bytewise.String(); got != want {
					t.Fatalf("byte-wise writes: elision line %q", elisionLine(got))
				}
			}
			rng := rand.New(rand.NewPCG(1, uint64(len(tc.in))))
			chunked := newCapture(keep)
			for rest := []byte(tc.in); len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(9000))
				chunked.Write(rest[:n])
				rest = rest[n:]
			}
			if got := chunked.String(); got != want {
				t.Fatalf("chunked writes: elision line %q", elisionLine(got))
			}
		})
	}
}

func elisionLine(s string) string {
	i := strings.Index(s, "\n\n... [")
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], "] ...")
	return s[i : i+j+5]
}

func TestCaptureInvalidUTF8(t *testing.T) {
	t.Parallel()
	c := newCapture(4)
	c.Write([]byte("ab\xffc"))
	if got := c.String(); got != "ab\uFFFDc" || c.Len() != 4 {
		t.Fatalf("%q", got)
	}
	// A rune cut off at the very end is shown, not lost.
	c = newCapture(4)
	c.Write([]byte("ab\xe6\x97"))
	if got := c.String(); got != "ab\uFFFD\uFFFD" || c.Len() != 4 {
		t.Fatalf("%q len %d", got, c.Len())
	}
}

func TestCaptureMemoryStaysBounded(t *testing.T) {
	t.Parallel()
	c := newCapture(10)
	chunk := []byte(strings.Repeat("z", 1000))
	for range 1000 {
		c.Write(chunk)
	}
	if len(c.head) != 10 || len(c.tail) > 2*c.tailBytes() {
		t.Fatalf("head %d tail %d bytes", len(c.head), len(c.tail))
	}
	if c.Len() != 1_000_000 {
		t.Fatalf("Len %d", c.Len())
	}
}

// FuzzCapture checks the streaming capture against the definition on the whole input,
// for any bytes and any split into writes.
func FuzzCapture(f *testing.F) {
	f.Add("hello world, this is longer than sixteen", uint8(3))
	f.Add("日本語のテキストがここにあります", uint8(5))
	f.Add("a\xff\xfe\xf0\x9f\x98b\xe6\x97\x97c", uint8(2))
	f.Fuzz(func(t *testing.T, in string, split uint8) {
		const keep = 8
		want := wantCapped(in, keep)
		c := newCapture(keep)
		step := int(split%16) + 1
		for i := 0; i < len(in); i += step {
			c.Write([]byte(in[i:min(i+step, len(in))]))
		}
		if got := c.String(); got != want {
			t.Fatalf("capture(%q, writes of %d) = %q, want %q", in, step, got, want)
		}
		if c.Len() != len([]rune(in)) {
			t.Fatalf("Len %d, want %d", c.Len(), len([]rune(in)))
		}
	})
}
