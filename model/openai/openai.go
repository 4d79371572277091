package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/internal/httpclient"
	"github.com/sema-agent/sema/model/internal/retry"
)

// DefaultBaseURL is the official API endpoint, used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Defaults of Config and Request fields left zero.
const (
	// DefaultMaxRetries is how many times a transient failure is retried when
	// Config.MaxRetries is zero.
	DefaultMaxRetries = 2
	// DefaultStreamIdleTimeout is Config.StreamIdleTimeout when it is zero: long enough
	// for a local server to load a model before its first byte.
	DefaultStreamIdleTimeout = 10 * time.Minute
	// DefaultMaxTokens bounds a response when model.Request.MaxTokens is zero or
	// negative.
	DefaultMaxTokens = 8192
	// DefaultMaxRetryAfter is Config.MaxRetryAfter when it is zero: the longest wait a
	// server's retry-after may ask for before the call gives up instead.
	DefaultMaxRetryAfter = 60 * time.Second
	// DefaultFirstByteTimeout is Config.FirstByteTimeout when it is zero and the
	// provider talks to the official API: how long an attempt may wait for the first
	// byte of its response (the status line) before it is abandoned and retried.
	DefaultFirstByteTimeout = 60 * time.Second
)

// userAgent names the client to the server.
const userAgent = "sema (+https://github.com/sema-agent/sema)"

// Environment variables FromEnv reads.
const (
	// EnvAPIKey holds the API key, sent as a bearer token.
	EnvAPIKey = "OPENAI_API_KEY"
	// EnvBaseURL holds the API root of a compatible server; FromEnv's argument wins
	// over it when not empty.
	EnvBaseURL = "OPENAI_BASE_URL"
)

// Config configures a Provider. The zero value (plus an APIKey) talks to the official
// API with the defaults written on each field.
type Config struct {
	// APIKey is sent as "Authorization: Bearer <key>". It is required for the official
	// endpoint; with a custom BaseURL it may be empty, and then no Authorization header
	// is sent (Ollama, vLLM and the llama.cpp server need none by default).
	APIKey string
	// BaseURL is the API root including its version path ("http://localhost:11434/v1");
	// requests go to BaseURL + "/chat/completions". Empty means DefaultBaseURL. It must
	// be an absolute http or https URL.
	BaseURL string
	// HTTPClient sends the requests; nil means a client of its own over a clone of
	// http.DefaultTransport that keeps up to 1,024 idle connections to the server (the
	// default keeps two, which a service's many sessions outrun). Its redirect policy
	// applies to redirects within the base URL's origin; one to another origin is
	// refused whatever the policy.
	HTTPClient *http.Client
	// MaxRetries is how many times a transient failure is retried: a 429 or 5xx, a
	// connection error, a server that sends no first byte within FirstByteTimeout, a
	// stream cut mid-response or silent past StreamIdleTimeout. Waits follow the
	// server's retry-after, else an exponential backoff. Every attempt counts, whatever
	// failure came before it. Zero means DefaultMaxRetries (2); negative means none.
	MaxRetries int
	// MaxRetryAfter is the longest wait a retry-after (or retry-after-ms) header may ask
	// for; a response asking for more ends the call at once, with the advised wait in
	// the error's detail (retry_after_seconds), rather than hold the run that long.
	// Zero means DefaultMaxRetryAfter (60 s); negative means no positive wait is waited
	// out.
	MaxRetryAfter time.Duration
	// FirstByteTimeout abandons an attempt that has received nothing of its response,
	// not even the status line, this long after the request was sent; the attempt is
	// retried like a failed connection. Zero means DefaultFirstByteTimeout (60 s) for
	// the official API; for a compatible server (BaseURL set) zero leaves that wait to
	// StreamIdleTimeout, because a local server such as Ollama sends nothing while it
	// loads a model, which can take minutes. Negative turns it off everywhere
	// (StreamIdleTimeout still bounds the wait).
	FirstByteTimeout time.Duration
	// StreamIdleTimeout is how long an attempt may wait for the next byte from the
	// server (the next piece of the stream, and the response headers too when no
	// FirstByteTimeout applies) before it is abandoned and retried; once the retries are
	// spent the call fails with model.network. Time spent in onDelta counts, so onDelta
	// must not block. Zero means DefaultStreamIdleTimeout (10 minutes, long enough for a
	// local server to load a model); negative disables the limit.
	StreamIdleTimeout time.Duration
	// Header holds extra request headers (OpenRouter's "HTTP-Referer", a proxy's
	// token, …). It cannot replace Authorization; use APIKey for that.
	Header http.Header
}

// Provider streams Chat Completions. It is safe for concurrent use: a call keeps all
// of its state on its own stack.
type Provider struct {
	// hc sends the requests: Config.HTTPClient, refusing redirects to another origin.
	hc      *http.Client
	origin  *url.URL
	header  http.Header // sent with every request: content type, extra headers, key
	baseURL string
	// official is true for api.openai.com, which wants max_completion_tokens (newer
	// models refuse max_tokens); compatible servers get the older max_tokens, which
	// every one of them understands.
	official bool
	custom   bool
	idle     time.Duration // StreamIdleTimeout; 0: none
	// firstByte is FirstByteTimeout; 0: the idle timeout bounds the wait for headers.
	firstByte time.Duration
	maxWait   time.Duration // MaxRetryAfter
	retries   int           // MaxRetries, resolved
	// backoff is the wait before retry n (0-based) when the server advised none; tests
	// shorten it.
	backoff func(n int) time.Duration
}

// New returns a Provider for cfg. It refuses (model.config) a missing API key when
// BaseURL is empty, and a BaseURL that is not an absolute http(s) URL.
func New(cfg Config) (*Provider, error) {
	base := strings.TrimSpace(cfg.BaseURL)
	custom := base != ""
	if !custom {
		base = DefaultBaseURL
		if cfg.APIKey == "" {
			return nil, sema.Errorf(model.CodeConfig,
				"%s is not set: export an OpenAI API key, or pass --base-url to use an OpenAI-compatible server that needs none", EnvAPIKey).
				With("env", EnvAPIKey)
		}
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, sema.Errorf(model.CodeConfig,
			"the base URL %q is not an absolute http or https URL: use one like http://localhost:11434/v1", cfg.BaseURL).
			With("base_url", cfg.BaseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, sema.Errorf(model.CodeConfig,
			"the base URL %q has a query or fragment: give only the API root, like https://api.openai.com/v1", cfg.BaseURL).
			With("base_url", cfg.BaseURL)
	}
	base = strings.TrimRight(u.String(), "/")

	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: httpclient.Transport()}
	}
	idle := cfg.StreamIdleTimeout
	switch {
	case idle == 0:
		idle = DefaultStreamIdleTimeout
	case idle < 0:
		idle = 0
	}
	firstByte := cfg.FirstByteTimeout
	switch {
	case firstByte == 0 && !custom:
		firstByte = DefaultFirstByteTimeout
	case firstByte < 0:
		firstByte = 0
	}
	maxWait := cfg.MaxRetryAfter
	switch {
	case maxWait == 0:
		maxWait = DefaultMaxRetryAfter
	case maxWait < 0:
		maxWait = 0
	}

	header := http.Header{}
	header.Set("Content-Type", "application/json")
	header.Set("User-Agent", userAgent)
	for k, vs := range cfg.Header {
		if strings.EqualFold(k, "Authorization") {
			continue
		}
		for _, v := range vs {
			header.Add(k, v)
		}
	}
	header.Set("Accept", "text/event-stream")
	if cfg.APIKey != "" {
		header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	return &Provider{
		hc:        sameOriginClient(hc, u),
		origin:    u,
		header:    header,
		baseURL:   base,
		official:  u.Hostname() == "api.openai.com",
		custom:    custom,
		idle:      idle,
		firstByte: firstByte,
		maxWait:   maxWait,
		retries:   retries,
		backoff:   retry.Backoff,
	}, nil
}

// FromEnv returns a Provider configured from OPENAI_API_KEY and OPENAI_BASE_URL;
// baseURL (the --base-url flag) wins over OPENAI_BASE_URL when it is not empty.
func FromEnv(baseURL string) (*Provider, error) {
	if baseURL == "" {
		baseURL = os.Getenv(EnvBaseURL)
	}
	return New(Config{APIKey: os.Getenv(EnvAPIKey), BaseURL: baseURL})
}

// Name returns "openai".
func (*Provider) Name() string { return "openai" }

// BaseURL returns the API root the provider sends to, without a trailing slash.
func (p *Provider) BaseURL() string { return p.baseURL }

// Stream sends req as a streaming Chat Completions call, sent again after a transient
// failure, and assembles the answer. See the package documentation for the retries,
// the translation and the assembly rules.
func (p *Provider) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, cancelled(err)
	}
	if req == nil || strings.TrimSpace(req.Model) == "" {
		return nil, sema.Errorf(model.CodeConfig, "no model name was given: pass one with --model, such as openai/gpt-4.1")
	}
	body, err := p.body(req)
	if err != nil {
		return nil, err
	}

	c := &capture{}
	out := &deltas{onDelta: onDelta}
	for n := 0; ; n++ {
		resp, again, err := p.attempt(ctx, body, req.Model, c, out)
		if err == nil {
			return resp, nil
		}
		// send has already retried what failed before a response started; what is
		// left is a stream that broke or a server that never answered. The request
		// is idempotent, so either is sent again while the budget lasts.
		if !again || c.attempts > p.retries {
			return nil, err
		}
		// The caller has seen part of the broken stream; the next attempt may answer
		// differently, so its deltas would not continue what was shown.
		out.muted = out.emitted
		if err := retry.Wait(ctx, model.Retry{Attempt: c.attempts, Wait: p.backoff(n), Reason: "the response broke off"}); err != nil {
			return nil, cancelled(err)
		}
	}
}

// attempt sends the request (send sends it again after an error response or a failed
// connection) and reads the stream. again reports a failure another attempt may not
// meet: a stream cut or silent mid-response, a server that sent no first byte.
func (p *Provider) attempt(ctx context.Context, body []byte, modelName string, c *capture, out *deltas) (resp *model.Response, again bool, err error) {
	callCtx, cancel := context.WithCancelCause(ctx)
	draining := false // a complete stream's body is finished in the background
	defer func() {
		if !draining {
			cancel(nil)
		}
	}()
	wd := newWatchdog(p.idle, p.firstByte, cancel)
	defer wd.stop()

	raw, err := p.send(callCtx, body, c, wd)
	if err != nil {
		return nil, ctx.Err() == nil && stalled(callCtx), p.requestError(ctx, callCtx, err, c, modelName)
	}
	defer func() {
		if !draining {
			raw.Body.Close()
		}
	}()

	if ct := raw.Header.Get("Content-Type"); strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return nil, false, sema.Errorf(model.CodeMalformedStream,
			"%s answered with %s instead of an event stream: check that the server supports streaming Chat Completions", p.endpoint(), ct)
	}

	a := newAssembler(modelName, out.emit)
	if err := a.read(raw.Body); err != nil {
		return nil, ctx.Err() == nil && p.cutShort(err, a), p.streamError(ctx, callCtx, err)
	}
	if tr, ok := raw.Body.(*touchReader); ok {
		// Reading stopped at [DONE]: the rest of the body is read in the background,
		// so that the connection can carry the next request.
		draining = true
		wd.stop()
		go httpclient.Drain(tr.ReadCloser, func() { cancel(nil) })
	}
	return a.response(), false, nil
}

// send posts body until a response starts (a status below 400), and returns it with
// its body read through the watchdog. A connection error and a transient status (408,
// 409, 429, 5xx; or what the server's x-should-retry says) are sent again, after the
// wait the server's retry-after advises or else backoff, while the call's budget of
// attempts lasts; an advised wait beyond maxWait ends the call instead. Any other
// failure returns at once: an error response as a *statusError.
func (p *Provider) send(ctx context.Context, body []byte, c *capture, wd *watchdog) (*http.Response, error) {
	for n := 0; ; n++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint(), bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header = p.header.Clone()
		c.attempts++
		c.advised = 0
		wd.request()
		res, err := p.hc.Do(req)
		var wait time.Duration
		switch {
		case err != nil:
			wd.pause()
			if ctx.Err() != nil || errors.Is(err, errOtherOrigin) || c.attempts > p.retries {
				return nil, err
			}
			wait = p.backoff(n)
		case res.StatusCode >= 400:
			// The wait for a retry must not count as a stall; the next attempt re-arms
			// the watchdog.
			wd.pause()
			b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
			res.Body.Close()
			ae := parseAPIError(res.StatusCode, b)
			if !retry.Transient(res) {
				return nil, &statusError{ae}
			}
			d, ok := retryAfter(res.Header)
			if ok && d > p.maxWait {
				c.advised = d
				return nil, &statusError{ae}
			}
			if c.attempts > p.retries {
				return nil, &statusError{ae}
			}
			wait = d
			if !ok {
				wait = p.backoff(n)
			}
		default:
			wd.respond()
			res.Body = &touchReader{ReadCloser: res.Body, wd: wd}
			return res, nil
		}
		r := model.Retry{Attempt: c.attempts, Wait: wait, Reason: "the connection failed"}
		if res != nil {
			r.Status, r.Reason = res.StatusCode, ""
		}
		if err := retry.Wait(ctx, r); err != nil {
			return nil, err
		}
	}
}

// errOtherOrigin refuses a redirect away from the configured server: the request
// carries the API key, and a conversation goes nowhere the user did not name.
var errOtherOrigin = errors.New("the server redirected the request to another origin")

// sameOriginClient is hc refusing redirects that leave origin's scheme, host and port.
func sameOriginClient(hc *http.Client, origin *url.URL) *http.Client {
	c := *hc
	check := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !sameOrigin(req.URL, origin) {
			return errOtherOrigin
		}
		if check != nil {
			return check(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// cutShort reports whether a stream that had started failed in a way a new attempt may
// not: the connection broke or went silent, the stream ended early, or the server
// reported a transient error in it. A stream whose content broke the format is not
// retried: a server that sends garbage is likely to send it again.
func (p *Provider) cutShort(err error, a *assembler) bool {
	var ae *streamAPIError
	var se *sema.Error
	switch {
	case a.cut:
		return true
	case errors.As(err, &ae):
		// An overloaded server or a rate limit may pass; a spent quota will not.
		code := p.apiFailure(ae.apiError, 0, "", nil).Code
		return ae.Code != "insufficient_quota" && (code == model.CodeOverloaded || code == model.CodeRateLimited)
	case errors.As(err, &se):
		return false
	default:
		return true // the transport's: a reset, a stall, an unexpected EOF
	}
}

// deltas passes a call's deltas to the caller, and withholds those of attempts after
// one whose deltas were delivered.
type deltas struct {
	onDelta func(model.Delta)
	emitted bool
	muted   bool
}

func (d *deltas) emit(x model.Delta) {
	if d.muted || d.onDelta == nil {
		return
	}
	d.emitted = true
	d.onDelta(x)
}

// endpoint is the URL calls go to, for messages.
func (p *Provider) endpoint() string { return p.baseURL + "/chat/completions" }
