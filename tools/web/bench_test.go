package web

import (
	"fmt"
	"strings"
	"testing"
)

// bigPage is an HTML page of about size bytes made of what documentation pages hold:
// headings, paragraphs with inline markup and links, lists, tables and code blocks,
// with a script and a style the conversion drops.
func bigPage(size int) []byte {
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>Docs</title><style>p{margin:0}</style><script>var x=1;</script></head><body>")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `<h2 id="s%d">Section %d</h2>
<p>The <strong>option %d</strong> sets how the <em>builder</em> treats <code>--flag-%d</code>; see <a href="/docs/s%d">the reference</a> for details &amp; caveats.</p>
<ul><li>first point of %d</li><li>second point with <a href="https://example.com/%d">a link</a></li></ul>
<table><tr><th>name</th><th>default</th></tr><tr><td>flag-%d</td><td>%d</td></tr></table>
<pre><code class="language-go">func f%d() int { return %d }</code></pre>
`, i, i, i, i, i, i, i, i, i, i, i)
	}
	b.WriteString("</body></html>")
	return []byte(b.String())
}

func TestBigPageConverts(t *testing.T) {
	t.Parallel()
	md, err := New(Config{}).(*tool).render(&page{contentType: "text/html; charset=utf-8", body: bigPage(64 << 10), final: "https://docs.example/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Section 0", "[the reference](https://docs.example/docs/s0)", "| flag-0 | 0 ", "```go\nfunc f0() int { return 0 }\n```"} {
		if !strings.Contains(md, want) {
			t.Fatalf("the Markdown lacks %q:\n%s", want, md[:min(len(md), 2000)])
		}
	}
}

// BenchmarkConvert1MiB turns a 1 MiB HTML page into Markdown: the part of a call that
// is the tool's own work, the fetch and the summary aside.
func BenchmarkConvert1MiB(b *testing.B) {
	body := bigPage(1 << 20)
	t := New(Config{}).(*tool)
	p := &page{contentType: "text/html; charset=utf-8", body: body, final: "https://docs.example/"}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := t.render(p); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTextOfFallback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ html, want string }{
		{"<p>one</p><p>two</p>", "one\ntwo"},
		{"<head><title>t</title></head><script>var x</script><style>p{}</style>body", "body"},
		{"<div>  a \n\n\n   b  </div><div>c</div>", "a\n\nb\nc"},
		{strings.Repeat("<div>", 2000) + "deep", "deep"},
		{"<script>unclosed", ""},
	} {
		if got := textOf(tc.html); got != tc.want {
			t.Errorf("textOf(%.40q) = %q, want %q", tc.html, got, tc.want)
		}
	}
}
