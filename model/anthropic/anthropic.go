// Package anthropic is the model.Provider for the Anthropic Messages API, built on the
// official Go SDK (github.com/anthropics/anthropic-sdk-go/v2). No SDK type leaves the
// package: requests are translated from model.Request, streamed events are assembled
// into a model.Response, and failures become *sema.Error values with model.* codes.
//
// The SDK builds and sends each request: authentication, headers, retries of failed
// responses, and the errors of error statuses and error events. The event stream of a
// response is decoded here instead, in one pass over each event's data, allocating
// nothing per event but the strings a caller's onDelta is handed and the growth of the
// buffers that hold the text and tool input (sse.go, wire.go); the SDK's decoder
// copies each event and unmarshals it reflectively, at about two dozen allocations per
// event.
//
// Invariants:
//   - Every request streams (stream: true). The system prompt is one text block with a
//     cache breakpoint (cache_control: ephemeral), the last tool spec carries a second
//     one and the last block of the conversation a third, so the stable prefix (tools,
//     system, earlier turns) is read from the prompt cache on the next turn.
//   - A response is returned only when its stream ended with message_stop and every
//     event fit the wire format; anything else is model.malformed_stream, never a
//     partial response. Tool input is the exact concatenation of its input_json_delta
//     pieces, and an empty input is {}.
//   - Transient failures (429, 5xx, 529 overloaded, a connection that fails) are retried
//     with exponential backoff that honours retry-after and retry-after-ms, up to
//     Config.MaxRetries times in all; 400, 401, 403 and 404 never are. A wait the server
//     advises beyond Config.MaxRetryAfter (60 s) is not waited out: the call fails at
//     once (429: model.rate_limited) with the advice in the detail (retry_after_seconds).
//   - A stream cut mid-response (the connection broke, went silent, or ended before
//     message_stop) and a server that sends no first byte within
//     Config.FirstByteTimeout (60 s) are transient too, retried in the same budget: the
//     request is idempotent. Deltas already delivered stay delivered; a retried attempt
//     delivers none, and the returned Response is the authority. A stream whose content
//     breaks the wire format is not retried.
//   - Stream honours ctx: cancellation, also mid-stream, returns promptly with
//     model.cancelled wrapping ctx.Err(). A stream that goes silent for
//     Config.IdleTimeout fails with model.network instead of hanging.
package anthropic

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/internal/httpclient"
	"github.com/sema-agent/sema/model/internal/retry"
)

// Defaults of Config and Request fields left zero.
const (
	// DefaultMaxRetries is how many times a transient failure is retried.
	DefaultMaxRetries = 4
	// DefaultMaxTokens bounds a response when Request.MaxTokens is zero.
	DefaultMaxTokens = 8192
	// DefaultIdleTimeout is how long a stream may stay silent (no bytes at all; the API
	// sends ping events while it works) before the attempt is abandoned.
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultMaxRetryAfter is the longest retry-after the provider waits out.
	DefaultMaxRetryAfter = 60 * time.Second
	// DefaultFirstByteTimeout is how long a request may wait for the first byte of its
	// response (the status line) before the attempt is abandoned and retried.
	DefaultFirstByteTimeout = 60 * time.Second
	// defaultHeaderTimeout bounds the wait for response headers with the default
	// HTTP client; streams themselves are bounded by the idle timeout instead.
	defaultHeaderTimeout = 10 * time.Minute
)

// Config configures a Provider. The zero value of every field but APIKey is useful.
type Config struct {
	// APIKey authenticates every request; it is sent in the x-api-key header. Required.
	APIKey string
	// BaseURL replaces the public endpoint (https://api.anthropic.com), for a gateway,
	// a proxy or a test server. Empty means the public endpoint.
	BaseURL string
	// HTTPClient sends the requests. Nil means a client of its own over a clone of
	// http.DefaultTransport that waits at most 10 minutes for response headers and keeps
	// up to 1,024 idle connections to the API's host (the default keeps two, which a
	// service's many sessions outrun); it has no overall timeout, since a stream may
	// legitimately last long.
	HTTPClient *http.Client
	// MaxRetries is how many times a transient failure (429, 5xx, 529, a failed
	// connection, a stream that broke before its first delta) is retried, in all, per
	// Stream call. Zero means DefaultMaxRetries (4); a negative value turns retries off.
	MaxRetries int
	// IdleTimeout abandons an attempt whose response has sent nothing for this long.
	// Zero means DefaultIdleTimeout (5 minutes); a negative value turns it off.
	IdleTimeout time.Duration
	// MaxRetryAfter is the longest wait a retry-after (or retry-after-ms) header may
	// ask for; a response asking for more ends the call with the advised wait in the
	// error's detail. Zero means DefaultMaxRetryAfter (60 s).
	MaxRetryAfter time.Duration
	// FirstByteTimeout abandons an attempt that has received nothing of its response
	// this long after the request was sent; the attempt is retried like a failed
	// connection. Zero means DefaultFirstByteTimeout (60 s); a negative value turns it
	// off.
	FirstByteTimeout time.Duration
}

// Provider streams responses from the Anthropic Messages API. It holds no state between
// calls and is safe for concurrent use.
type Provider struct {
	client      sdk.Client
	http        *http.Client
	maxRetries  int
	idleTimeout time.Duration
	maxWait     time.Duration // MaxRetryAfter
	firstByte   time.Duration // FirstByteTimeout; 0: none
	baseURL     string
	// backoff is the wait before stream-level retry n (0-based); tests shorten it.
	backoff func(n int) time.Duration
	// bodies encodes request bodies, each message once; see body.go.
	bodies *bodyCache
}

var _ model.Provider = (*Provider)(nil)

// New returns a Provider for cfg. It refuses a missing API key and a base URL that is
// not an absolute http(s) URL, with code model.config.
func New(cfg Config) (*Provider, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, sema.Errorf(model.CodeConfig, "no Anthropic API key is configured; set ANTHROPIC_API_KEY to a key from the Anthropic console")
	}
	p := &Provider{maxRetries: cfg.MaxRetries, idleTimeout: cfg.IdleTimeout, backoff: retry.Backoff, bodies: newBodyCache()}
	switch {
	case p.maxRetries == 0:
		p.maxRetries = DefaultMaxRetries
	case p.maxRetries < 0:
		p.maxRetries = 0
	}
	if p.idleTimeout == 0 {
		p.idleTimeout = DefaultIdleTimeout
	}
	p.maxWait = cmp.Or(cfg.MaxRetryAfter, DefaultMaxRetryAfter)
	p.firstByte = max(0, cmp.Or(cfg.FirstByteTimeout, DefaultFirstByteTimeout))
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	p.http = hc
	opts := []option.RequestOption{
		// The provider resolves its own configuration; the SDK must not add a credential
		// or a base URL from the environment or a profile on disk.
		option.WithoutEnvironmentDefaults(),
		option.WithHeader("x-api-key", cfg.APIKey),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(p.maxRetries),
	}
	p.baseURL = "https://api.anthropic.com"
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, sema.Errorf(model.CodeConfig, "the Anthropic base URL %q is not an absolute http(s) URL; set ANTHROPIC_BASE_URL to one such as https://api.anthropic.com", cfg.BaseURL).
				With("base_url", cfg.BaseURL)
		}
		p.baseURL = cfg.BaseURL
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	p.client = sdk.NewClient(opts...)
	return p, nil
}

// FromEnv returns a Provider configured from ANTHROPIC_API_KEY (required) and
// ANTHROPIC_BASE_URL (optional), with the defaults of Config otherwise.
func FromEnv() (*Provider, error) {
	return New(Config{APIKey: os.Getenv("ANTHROPIC_API_KEY"), BaseURL: os.Getenv("ANTHROPIC_BASE_URL")})
}

// Name returns "anthropic".
func (p *Provider) Name() string { return "anthropic" }

// Stream sends req and returns the assembled response; see the package documentation
// for the guarantees. onDelta, which may be nil, is called on the caller's goroutine for
// each text and thinking delta and when a tool call starts.
func (p *Provider) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	if req == nil {
		return nil, sema.Errorf(model.CodeBadRequest, "the model request is nil; pass a request with a model and messages")
	}
	body, err := p.bodies.encodeBody(req)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, cancelled(err)
	}

	c := &call{p: p, ctx: ctx, model: req.Model, onDelta: onDelta}
	for n := 0; ; n++ {
		resp, err := c.attempt(body)
		if err == nil {
			if cerr := ctx.Err(); cerr != nil {
				// Cancelled while the response streamed, and the rest of it was
				// already buffered: the caller asked for no more, so none is returned.
				return nil, cancelled(cerr)
			}
			return resp, nil
		}
		// The SDK has already retried what failed before a response started; what is
		// left is a stream that broke, or a server that never answered. Either is sent
		// again while the budget lasts.
		if !c.retryable || c.attempts > p.maxRetries {
			return nil, err
		}
		// The caller has seen part of the broken stream; the next attempt may answer
		// differently, so its deltas would not continue what was shown.
		c.muted = c.emitted
		reason := "the response broke off"
		if !c.streamed {
			reason = "the server sent nothing"
		}
		if err := retry.Wait(ctx, model.Retry{Attempt: c.attempts, Wait: p.backoff(n), Reason: reason}); err != nil {
			return nil, cancelled(err)
		}
	}
}

// call is the state of one Stream call across its attempts.
type call struct {
	p       *Provider
	ctx     context.Context
	model   string
	onDelta func(model.Delta)
	// attempts counts HTTP attempts, the SDK's retries included.
	attempts int
	// streamed is set when the last attempt got a 2xx response and began to stream.
	streamed bool
	// emitted is set once onDelta has been called.
	emitted bool
	// muted withholds the deltas of attempts after one whose deltas were delivered.
	muted bool
	// retryable is set when the last attempt failed in a way another attempt may not:
	// a stream that broke or stopped early, a server that sent no first byte.
	retryable bool
	// advised is the retry-after of a response that asked for more than maxWait.
	advised time.Duration
}

func (c *call) delta(d model.Delta) {
	if c.muted {
		return
	}
	c.emitted = true
	if c.onDelta != nil {
		c.onDelta(d)
	}
}

// attempt sends the request once (with the SDK's retries of failed responses) and
// assembles the stream.
func (c *call) attempt(body []byte) (*model.Response, error) {
	actx, cancel := context.WithCancel(c.ctx)
	draining := false // a complete stream's body is finished in the background
	defer func() {
		if !draining {
			cancel()
		}
	}()
	w := newWatch(c.p.idleTimeout, cancel)
	defer w.stop()
	c.streamed, c.retryable = false, false

	retries := max(0, c.p.maxRetries-c.attempts)
	sent := 0 // the attempts of this Post: the SDK retries while sent <= retries
	// The SDK sends the request (auth, headers, its retries, error statuses); its
	// stream is not read. The body is decoded here in one pass instead: the SDK's
	// decoder buffers each event anew and unmarshals it reflectively, which cost
	// over 80% of the time and almost all allocations of assembling a response.
	var res *http.Response
	// The body is the one encoded in body.go (with "stream":true), sent as it is. As a
	// byte slice the SDK gives each attempt a reader of its own: a bytes.Reader it would
	// rewind and send again while the failed attempt's connection may still be writing
	// it (a server answers 529 before reading the whole body) — a data race on the reader.
	err := c.p.client.Post(actx, "v1/messages", nil, &res,
		option.WithRequestBody("application/json", body),
		option.WithResponseInto(&res),
		option.WithMaxRetries(retries),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			c.attempts++
			sent++
			w.armFirst(c.p.firstByte)
			res, err := next(r)
			if err != nil || res.StatusCode >= 300 {
				// The SDK may now wait out a retry-after; that silence is not idleness.
				w.stop()
				if err == nil {
					c.boundWait(res)
				}
				if sent <= retries && c.ctx.Err() == nil {
					c.announceRetry(res, err, sent-1)
				}
				return res, err
			}
			w.arm()
			c.streamed = true
			res.Body = &watchedBody{rc: res.Body, w: w}
			return res, nil
		}))
	if res != nil && res.Body != nil {
		defer func() {
			if !draining {
				res.Body.Close()
			}
		}()
	}

	var emit func(model.Delta)
	if c.onDelta != nil {
		emit = c.delta
	}
	acc := newAccumulator(emit)
	if err == nil {
		// Reading stops at message_stop: the response is complete then, and a server
		// that kept the connection open afterwards must not hold it back.
		err = assemble(res, acc)
	}
	if isFormatError(err) {
		return nil, c.fail(malformed(err.Error()), w)
	}
	if err != nil {
		err = c.fail(c.classify(err), w)
		code := sema.CodeOf(err)
		transient := code == model.CodeOverloaded || code == model.CodeRateLimited || code == model.CodeNetwork
		c.retryable = transient && c.advised == 0 && (c.streamed || w.firstByteFired())
		return nil, err
	}
	if !acc.stopped {
		// Ended cleanly but early: a proxy or the connection cut the response.
		c.retryable = c.ctx.Err() == nil
		return nil, c.fail(malformed("the stream ended before message_stop"), w)
	}
	resp, err := acc.response()
	if err != nil {
		return nil, c.fail(malformed(err.Error()), w)
	}
	if wb, ok := res.Body.(*watchedBody); ok {
		// Reading stopped at message_stop: the rest of the body is read in the
		// background, so that the connection can carry the next request.
		draining = true
		wb.w.stop()
		go httpclient.Drain(wb.rc, cancel)
	}
	return resp, nil
}

// fail gives cancellation by the caller and the idle watchdog precedence over whatever
// error the interrupted read produced.
func (c *call) fail(err error, w *watch) error {
	if cerr := c.ctx.Err(); cerr != nil {
		return cancelled(cerr)
	}
	if w.firstByteFired() {
		return sema.Errorf(model.CodeNetwork, "the Anthropic API at %s sent nothing within %s of the request; check the network (or the proxy at ANTHROPIC_BASE_URL) and try again", c.p.baseURL, c.p.firstByte).
			With("first_byte_timeout", c.p.firstByte.String()).With("retries", c.attempts-1)
	}
	if w.fired() {
		return sema.Errorf(model.CodeNetwork, "the Anthropic API stream sent nothing for %s; check the network (or the proxy at ANTHROPIC_BASE_URL) and try again", c.p.idleTimeout).
			With("idle_timeout", c.p.idleTimeout.String())
	}
	return err
}

// announceRetry tells the caller's retry observer (model.WithRetryObserver) about a
// failed attempt the SDK is about to send again: retry n (0-based) of this Post, after
// an error response res or a failed connection (err). For a response it also fixes the
// wait, through the retry-after-ms header the SDK obeys: the server's advice, else
// backoff — so the wait announced is the wait the SDK keeps. For a failed connection the
// SDK picks a jittered wait itself, and the announced one is its longest.
func (c *call) announceRetry(res *http.Response, err error, n int) {
	if err != nil {
		wait := retry.Ceiling(n)
		model.ObserveRetry(c.ctx, model.Retry{Attempt: c.attempts, Wait: wait, Reason: "the connection failed"})
		return
	}
	// The SDK sends again what retry.Transient calls transient: its rule is the same.
	if !retry.Transient(res) {
		return
	}
	wait, ok := retryAfter(res.Header)
	if !ok || wait < 0 {
		wait = c.p.backoff(n)
	}
	res.Header.Set("retry-after-ms", strconv.FormatInt(wait.Milliseconds(), 10))
	model.ObserveRetry(c.ctx, model.Retry{Attempt: c.attempts, Wait: wait, Status: res.StatusCode})
}

// boundWait keeps the SDK from waiting out a retry-after longer than maxWait: such a
// response is marked not to be retried (x-should-retry: false, which the SDK obeys over
// the status), and the advice is kept for the error.
func (c *call) boundWait(res *http.Response) {
	d, ok := retryAfter(res.Header)
	if !ok || d <= c.p.maxWait {
		return
	}
	res.Header.Set("x-should-retry", "false")
	c.advised = d
}

// retryAfter reads retry-after-ms, else retry-after (seconds or an HTTP date), as the
// SDK does.
func retryAfter(h http.Header) (time.Duration, bool) {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("retry-after")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t), true
	}
	return 0, false
}

func defaultHTTPClient() *http.Client {
	t := httpclient.Transport()
	t.ResponseHeaderTimeout = defaultHeaderTimeout
	return &http.Client{Transport: t}
}

func cancelled(err error) error {
	return &sema.Error{
		Code:    model.CodeCancelled,
		Message: "the model call was cancelled before the response was complete: " + err.Error(),
		Err:     err,
	}
}
