package agent

import (
	"context"
	"time"

	"github.com/sema-agent/sema/internal/pageanswer"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
	"github.com/sema-agent/sema/tools/web"
)

// WebFetchOptions configure the WebFetch tool (package tools/web) the runner mounts on
// every leg, read-only legs included: it changes no file, and the permission gate judges
// each call by its URL. The zero value (and a nil Deps.WebFetch) is the default of every
// field.
type WebFetchOptions struct {
	// Off leaves WebFetch off every leg. A tool of the same name in Deps.Tools also
	// replaces the runner's. Default false: mounted.
	Off bool
	// Raw makes a call return the page's Markdown (cut at web.DefaultMaxMarkdown
	// characters) instead of the leg's model's answer to the call's prompt. Default
	// false: a small side request to the leg's own model answers the prompt from the
	// page, and its tokens count in the run's usage.
	Raw bool
	// AllowPrivate lets WebFetch connect to addresses that are not public: loopback,
	// private and link-local networks, carrier-grade NAT, and their IPv6 equivalents.
	// Default false: refused (web.CodeAddressRefused), so that a fetch cannot reach the
	// machine or the network it runs in.
	AllowPrivate bool
	// PlainHTTP fetches http:// URLs over plain HTTP as written. Default false: they are
	// fetched as https://, as Claude Code's WebFetch does.
	PlainHTTP bool
	// MaxBytes is how much of a page's body is read; a longer page is cut and the answer
	// says so. Zero: web.DefaultMaxBytes (10 MiB). Negative: refused
	// (config.webfetch_invalid).
	MaxBytes int64
	// Timeout bounds one fetch, redirects and body included (not the model's answer).
	// Zero: web.DefaultTimeout (30 s). Negative: refused (config.webfetch_invalid).
	Timeout time.Duration
}

func (d *Deps) webFetch() WebFetchOptions {
	if d.WebFetch == nil {
		return WebFetchOptions{}
	}
	return *d.WebFetch
}

// validateWebFetch is the door's part for Deps.WebFetch.
func validateWebFetch(deps *Deps) error {
	o := deps.webFetch()
	if o.MaxBytes < 0 {
		return configError(CodeWebFetchInvalid, "Deps.WebFetch.MaxBytes is %d; give a size in bytes, or 0 for %d", o.MaxBytes, web.DefaultMaxBytes)
	}
	if o.Timeout < 0 {
		return configError(CodeWebFetchInvalid, "Deps.WebFetch.Timeout is %s; give a duration, or 0 for %s", o.Timeout, web.DefaultTimeout)
	}
	return nil
}

// webFetchTool is the leg's WebFetch, or nil when the deployment turned it off or
// mounts its own tool of that name (which then answers alone).
func (l *leg) webFetchTool() tools.Tool {
	o := l.deps.webFetch()
	if o.Off {
		return nil
	}
	for _, t := range l.deps.Tools {
		if t.Spec().Name == web.Name {
			return nil
		}
	}
	cfg := web.Config{AllowPrivate: o.AllowPrivate, PlainHTTP: o.PlainHTTP, MaxBytes: o.MaxBytes, Timeout: o.Timeout}
	if !o.Raw {
		cfg.Summarize = l.summarizePage
	}
	return web.New(cfg)
}

// summarizePage is WebFetch's Summarizer: a request to the leg's own model, without
// tools, holding the page and the prompt (package pageanswer).
func (l *leg) summarizePage(ctx context.Context, markdown, prompt, url string) (string, error) {
	req := &model.Request{Model: l.spec.Model, System: pageanswer.System, MaxTokens: l.spec.MaxTokens,
		Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock(pageanswer.Ask(markdown, prompt, url))}}}}
	resp, err := l.deps.Provider.Stream(ctx, req, nil)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	l.sideUsage = l.sideUsage.Add(resp.Usage)
	l.mu.Unlock()
	return pageanswer.Answer(resp)
}
