package openai

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
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
)

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
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// MaxRetries is how many times a transient failure (429, 5xx, a connection error
	// before the response started) is retried, with the SDK's exponential backoff and
	// the server's retry-after. Zero means DefaultMaxRetries (2); negative means none.
	MaxRetries int
	// StreamIdleTimeout is how long a call may wait for the next byte from the server
	// (the response headers, or the next piece of the stream) before it is abandoned
	// with model.network. Time spent in onDelta counts, so onDelta must not block.
	// Zero means DefaultStreamIdleTimeout (10 minutes, long enough for a local server
	// to load a model); negative disables the limit.
	StreamIdleTimeout time.Duration
	// Header holds extra request headers (OpenRouter's "HTTP-Referer", a proxy's
	// token, …). It cannot replace Authorization; use APIKey for that.
	Header http.Header
}

// Provider streams Chat Completions. It is safe for concurrent use: a call keeps all
// of its state on its own stack.
type Provider struct {
	client  oai.Client
	baseURL string
	// official is true for api.openai.com, which wants max_completion_tokens (newer
	// models refuse max_tokens); compatible servers get the older max_tokens, which
	// every one of them understands.
	official bool
	custom   bool
	idle     time.Duration
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
		hc = http.DefaultClient
	}
	idle := cfg.StreamIdleTimeout
	switch {
	case idle == 0:
		idle = DefaultStreamIdleTimeout
	case idle < 0:
		idle = 0
	}

	opts := []option.RequestOption{
		option.WithBaseURL(base + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(retries),
	}
	for k, vs := range cfg.Header {
		if strings.EqualFold(k, "Authorization") {
			continue
		}
		for _, v := range vs {
			opts = append(opts, option.WithHeaderAdd(k, v))
		}
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Provider{
		// The client is built from explicit options only: oai.NewClient would also read
		// OPENAI_* variables (an admin key, an organization, custom headers, a base URL)
		// that this Config did not ask for. Execute, the one method used, needs nothing
		// else from the client.
		client:   oai.Client{Options: opts},
		baseURL:  base,
		official: u.Hostname() == "api.openai.com",
		custom:   custom,
		idle:     idle,
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

// Stream sends req as one streaming Chat Completions call and assembles the answer.
// See the package documentation for the translation and the assembly rules.
func (p *Provider) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, cancelled(err)
	}
	if req == nil || strings.TrimSpace(req.Model) == "" {
		return nil, sema.Errorf(model.CodeConfig, "no model name was given: pass one with --model, such as openai/gpt-4.1")
	}
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}

	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := newWatchdog(p.idle, cancel)
	defer wd.stop()
	c := &capture{}

	var raw *http.Response
	err = p.client.Post(callCtx, "chat/completions", params, &raw,
		option.WithJSONSet("stream", true),
		option.WithHeader("Accept", "text/event-stream"),
		option.WithMiddleware(c.middleware(wd)),
	)
	if err != nil {
		if raw != nil && raw.Body != nil {
			raw.Body.Close()
		}
		return nil, p.requestError(ctx, callCtx, err, c, req.Model)
	}
	defer raw.Body.Close()

	if ct := raw.Header.Get("Content-Type"); strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return nil, sema.Errorf(model.CodeMalformedStream,
			"%s answered with %s instead of an event stream: check that the server supports streaming Chat Completions", p.endpoint(), ct)
	}

	a := newAssembler(req.Model, onDelta)
	if err := a.read(raw.Body); err != nil {
		return nil, p.streamError(ctx, callCtx, err)
	}
	return a.response(), nil
}

// endpoint is the URL calls go to, for messages.
func (p *Provider) endpoint() string { return p.baseURL + "/chat/completions" }
