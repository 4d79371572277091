package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/tools"
)

// Name is the tool's name, as the model calls it and as permission rules
// (WebFetch(domain:example.com)) name it.
const Name = "WebFetch"

// Defaults of Config's zero values.
const (
	// DefaultMaxBytes is how much of a response body is read: 10 MiB.
	DefaultMaxBytes int64 = 10 << 20
	// DefaultTimeout bounds one whole fetch, redirects and body included.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxMarkdown is how many characters of Markdown a call returns when it has
	// no Summarizer.
	DefaultMaxMarkdown = 100_000
	// DefaultUserAgent is the User-Agent header of every request: it names sema, so a
	// site's operator can tell what fetched the page.
	DefaultUserAgent = "sema-WebFetch/1.0 (+https://github.com/sema-agent/sema)"
	// MaxRedirects is how many same-site redirects one call follows.
	MaxRedirects = 10
)

// Codes of WebFetch's error Results.
const (
	// CodeURLInvalid: the URL does not parse, is not absolute, is too long
	// (MaxURLLength), has no host or a bad port.
	CodeURLInvalid = "web.url_invalid"
	// CodeSchemeRefused: the URL's scheme is not http or https (file:, ftp:, data:, …).
	CodeSchemeRefused = "web.scheme_refused"
	// CodeCredentialsRefused: the URL carries a user name or password.
	CodeCredentialsRefused = "web.credentials_refused"
	// CodeHostAmbiguous: the host is a number in a spelling other than the dotted quad
	// (127.1, 0x7f000001, 2130706433), which resolvers read differently.
	CodeHostAmbiguous = "web.host_ambiguous"
	// CodeAddressRefused: the host is, or resolves to, an address that is not public
	// (loopback, private, link-local, …) and the deployment does not allow those.
	CodeAddressRefused = "web.address_refused"
	// CodeFetchFailed: the host could not be resolved or reached, or the exchange
	// failed (TLS, a reset connection, a redirect without a usable Location).
	CodeFetchFailed = "web.fetch_failed"
	// CodeTimeout: the fetch took longer than Config.Timeout.
	CodeTimeout = "web.timeout"
	// CodeTooManyRedirects: more than MaxRedirects same-site redirects.
	CodeTooManyRedirects = "web.too_many_redirects"
	// CodeHTTPStatus: the server answered with a status other than 2xx.
	CodeHTTPStatus = "web.http_status"
	// CodeContentBinary: the page is of a type WebFetch does not read (an image, a PDF,
	// an archive, …); the result names the type.
	CodeContentBinary = "web.content_binary"
	// CodeConvertFailed: the HTML could not be turned into Markdown.
	CodeConvertFailed = "web.convert_failed"
	// CodeSummaryFailed: the Summarizer failed to answer the prompt.
	CodeSummaryFailed = "web.summary_failed"
)

// Summarizer answers prompt from a page's Markdown: the runner fills it with a small
// request to the leg's own model. url is the address the page was finally read from
// (after same-site redirects). The answer is the call's result; an error fails the call
// with CodeSummaryFailed (or tools.CodeCancelled when ctx ended).
type Summarizer func(ctx context.Context, markdown, prompt, url string) (string, error)

// Config is one WebFetch tool's configuration. Its zero value fetches public https
// pages with the defaults above and returns Markdown.
type Config struct {
	// Summarize answers the call's prompt from the page. Nil: the call returns the
	// page's Markdown itself, cut at MaxMarkdown characters.
	Summarize Summarizer
	// AllowPrivate lets WebFetch connect to addresses that are not public (loopback,
	// private, link-local, …; see the package's invariants). False (the default): such
	// an address is refused with CodeAddressRefused.
	AllowPrivate bool
	// PlainHTTP fetches an http:// URL over plain HTTP, as written. False (the
	// default): it is fetched as https://, as Claude Code's WebFetch does, so that no
	// page travels unencrypted unless the deployment says so (a service on a private
	// network without TLS, a test server).
	PlainHTTP bool
	// MaxBytes is how much of a response body is read; the rest is dropped and the
	// answer says the page was cut. Zero or negative: DefaultMaxBytes (the runner
	// refuses a negative value at its door).
	MaxBytes int64
	// Timeout bounds one whole fetch: connecting, redirects, and reading the body; the
	// Summarizer's time is not counted. Zero or negative: DefaultTimeout.
	Timeout time.Duration
	// MaxMarkdown is how many characters of Markdown a call without a Summarizer
	// returns. Zero or negative: DefaultMaxMarkdown.
	MaxMarkdown int
	// UserAgent is the User-Agent header of every request. Empty: DefaultUserAgent.
	UserAgent string
	// Resolver looks up host names. Nil: net.DefaultResolver. Whatever it answers, the
	// address is judged again just before the connection is made.
	Resolver Resolver

	// testAllow, set by this package's tests only, admits some addresses that are not
	// public (the loopback test server) while the rest stay refused.
	testAllow func(netip.Addr) bool
}

// New returns the WebFetch tool. Its spec declares EffectRead, as it changes no file,
// and the passthrough permission seat: a call nobody allowed (a
// WebFetch(domain:host) rule, a hook, a person) is a question in every permission mode
// but bypassPermissions, as reaching the network is not the engine's to grant.
func New(cfg Config) tools.Tool {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxMarkdown <= 0 {
		cfg.MaxMarkdown = DefaultMaxMarkdown
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	g := newGuard(&cfg)
	t := &tool{cfg: cfg, conv: newConverter(), description: describe(&cfg)}
	t.client = &http.Client{
		Transport: g.transport(),
		// Redirects are followed by fetch, which decides which ones are.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return t
}

type tool struct {
	cfg         Config
	client      *http.Client
	conv        *converter.Converter
	description string
}

type input struct {
	URL    string `json:"url"`
	Prompt string `json:"prompt"`
}

// describe is the tool's description for the model, which states only what holds
// under cfg: the model should not be told that a private address is refused where the
// deployment allows it, nor that http is upgraded where it is kept.
func describe(cfg *Config) string {
	var b strings.Builder
	b.WriteString("Fetches a web page and answers a prompt about it.\n\n")
	if cfg.Summarize != nil {
		b.WriteString("- Takes a URL and a prompt: the page is fetched, HTML is turned into Markdown, and the prompt is answered from the page's content. Use it to read documentation, an issue or an article the task needs.\n")
		b.WriteString("- Write the prompt as the question the page should answer (\"what does the --frozen flag do?\", \"list the breaking changes in 2.0\"); the answer is drawn from this page only.\n")
	} else {
		b.WriteString("- Takes a URL and a prompt: the page is fetched and returned as Markdown (HTML converted, other text as it is); read it with the prompt in mind. Use it to read documentation, an issue or an article the task needs.\n")
	}
	b.WriteString("- The URL must be a full http(s) URL")
	if !cfg.PlainHTTP {
		b.WriteString("; http:// is fetched as https://")
	}
	if !cfg.AllowPrivate {
		b.WriteString(". Private and local network addresses are refused")
	}
	b.WriteString(".\n")
	b.WriteString("- When the URL redirects to another host, the answer says so and names the new URL: call WebFetch again with that URL to read it.\n")
	b.WriteString("- Large pages are cut; images, PDFs and other binary files are not read.\n")
	b.WriteString("- The tool only reads: it changes no file. Calls may need the user's permission (rules such as WebFetch(domain:example.com) allow a host).")
	return b.String()
}

var schema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "format": "uri", "description": "The URL to fetch: a full http or https URL."},
    "prompt": {"type": "string", "description": "What to find out from the page."}
  },
  "required": ["url", "prompt"],
  "additionalProperties": false
}`)

func (t *tool) Spec() tools.Spec {
	return tools.Spec{Name: Name, Description: t.description, InputSchema: schema,
		Effect: tools.EffectRead, PermissionSeat: tools.SeatPassthrough}
}

func (t *tool) Run(ctx context.Context, raw json.RawMessage) tools.Result {
	var in input
	if err := tools.Decode(raw, &in); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	if strings.TrimSpace(in.URL) == "" {
		return tools.Fail(tools.CodeInputInvalid, "url is required: the http(s) URL of the page to fetch")
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return tools.Fail(tools.CodeInputInvalid, "prompt is required: what to find out from the page")
	}
	// The URL is fetched as the permission gate judged it, spaces and all: a URL that
	// does not parse as it is is refused, never repaired into one nobody judged.
	u, err := checkURL(in.URL, t.cfg.AllowPrivate)
	if err != nil {
		return tools.FromError(err, CodeURLInvalid)
	}
	if ctx.Err() != nil {
		return cancelled()
	}
	got, err := t.fetch(ctx, u)
	if err != nil {
		if ctx.Err() != nil {
			return cancelled()
		}
		return tools.FromError(err, CodeFetchFailed)
	}
	if got.redirect != nil {
		return tools.Text(redirectText(got.redirect, in.Prompt))
	}
	md, err := t.render(got.page)
	if err != nil {
		return tools.FromError(err, CodeConvertFailed)
	}
	var notes []string
	if got.page.final != got.page.start {
		notes = append(notes, fmt.Sprintf("[The page was read from %s, where %s redirects.]", got.page.final, got.page.start))
	}
	if got.page.cut {
		notes = append(notes, fmt.Sprintf("[The page is larger than %d bytes; only the first %d were read.]", t.cfg.MaxBytes, t.cfg.MaxBytes))
	}
	if t.cfg.Summarize == nil {
		md, cut := cutRunes(md, t.cfg.MaxMarkdown)
		if cut > 0 {
			notes = append(notes, fmt.Sprintf("[The Markdown is cut after %d characters; %d more are not shown.]", t.cfg.MaxMarkdown, cut))
		}
		return tools.Text(withNotes(md, notes))
	}
	answer, err := t.summarize(ctx, withNotes(md, notes), in.Prompt, got.page.final)
	if err != nil {
		if ctx.Err() != nil {
			return cancelled()
		}
		return tools.FromError(sema.Errorf(CodeSummaryFailed, "the page was fetched, but the prompt could not be answered from it: %s", sema.MessageOf(err)), CodeSummaryFailed)
	}
	return tools.Text(withNotes(answer, notes))
}

// summarize calls the Summarizer with its panic contained: a deployment's function must
// not take the leg down with it.
func (t *tool) summarize(ctx context.Context, md, prompt, url string) (answer string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the summarizer panicked: %v", p)
		}
	}()
	answer, err = t.cfg.Summarize(ctx, md, prompt, url)
	if err == nil && strings.TrimSpace(answer) == "" {
		err = errors.New("the summarizer gave an empty answer")
	}
	return answer, err
}

// withNotes puts the notes, one a line, before text.
func withNotes(text string, notes []string) string {
	if len(notes) == 0 {
		return text
	}
	return strings.Join(notes, "\n") + "\n\n" + text
}

// cutRunes returns s cut after max characters, and how many characters were cut.
func cutRunes(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i], utf8.RuneCountInString(s[i:])
		}
		n++
	}
	return s, 0
}

// redirectText tells the model where a page redirects, and that a new call reads it.
// The prompt is repeated so that the model can make that call as it is.
func redirectText(r *redirect, prompt string) string {
	return fmt.Sprintf(`The page redirects to another host (or port), which WebFetch does not follow by itself.

Original URL: %s
Redirect URL: %s
Status: %d %s

To read it, call WebFetch again with:
- url: %q
- prompt: %q`, r.from, r.to, r.status, http.StatusText(r.status), r.to, prompt)
}

func cancelled() tools.Result {
	return tools.Fail(tools.CodeCancelled, "the fetch was cancelled")
}
