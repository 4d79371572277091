package anthropic

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// classify turns an error of the SDK into the final *sema.Error of the call. The SDK's
// error is not kept as the cause, so that no SDK type leaves the package; its facts go
// into the message and the detail.
func (c *call) classify(err error) error {
	var aerr *sdk.Error
	if errors.As(err, &aerr) {
		se := apiError(aerr, c.model, c.attempts-1)
		if c.advised > 0 {
			se = c.tooLongAWait(se, aerr.StatusCode)
		}
		return se
	}
	var rerr *readError
	if errors.As(err, &rerr) {
		return sema.Errorf(model.CodeNetwork, "the connection to the Anthropic API at %s broke while the response streamed (%v); check the network and try again", c.p.baseURL, rerr.err).
			With("retries", c.attempts-1)
	}
	var uerr *url.Error
	var nerr net.Error
	if errors.As(err, &uerr) || errors.As(err, &nerr) {
		return &sema.Error{
			Code:    model.CodeNetwork,
			Message: fmt.Sprintf("could not reach the Anthropic API at %s after %d retries (%v); check the network and ANTHROPIC_BASE_URL", c.p.baseURL, c.attempts-1, err),
			Detail:  map[string]any{"retries": c.attempts - 1},
			Err:     err,
		}
	}
	if c.streamed {
		// An error event the SDK could not read.
		return malformed(err.Error())
	}
	return sema.Errorf(model.CodeBadRequest, "the request to the Anthropic API could not be sent (%v); check the request's content", err)
}

// tooLongAWait is the error of a response that advised a wait beyond MaxRetryAfter: the
// call stops instead of sleeping that long, and says how long the API asked for. A 429
// is model.rate_limited; another status keeps the code apiError gave it.
func (c *call) tooLongAWait(se *sema.Error, status int) *sema.Error {
	code := se.Code
	if status == http.StatusTooManyRequests {
		code = model.CodeRateLimited
	}
	secs := int64((c.advised + time.Second - 1) / time.Second)
	out := &sema.Error{
		Code: code,
		Message: fmt.Sprintf("the Anthropic API asked to wait %s before retrying (status %d), longer than the %s this provider waits; try again later, or raise MaxRetryAfter",
			(time.Duration(secs) * time.Second).String(), status, c.p.maxWait),
		Detail: map[string]any{},
	}
	for k, v := range se.Detail {
		out.Detail[k] = v
	}
	out.Detail["retry_after_seconds"] = secs
	out.Detail["max_retry_after"] = c.p.maxWait.String()
	return out
}

// malformed is the error of a stream that broke the wire format.
func malformed(what string) *sema.Error {
	return sema.Errorf(model.CodeMalformedStream, "the Anthropic API stream broke the wire format (%s); try again, and if it persists check the proxy at ANTHROPIC_BASE_URL, if any", what)
}

// apiError maps an error answer of the API: an error status, or an error event in a
// stream that had started (status 2xx).
func apiError(e *sdk.Error, modelName string, retries int) *sema.Error {
	typ := string(e.Type())
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	detail := map[string]any{"status": e.StatusCode, "type": typ, "retries": retries}
	if e.RequestID != "" {
		detail["request_id"] = e.RequestID
	}
	build := func(code, format string, args ...any) *sema.Error {
		return &sema.Error{Code: code, Message: fmt.Sprintf(format, args...), Detail: detail}
	}
	if e.StatusCode < 300 {
		// The stream began and then carried an error event.
		switch typ {
		case "overloaded_error", "api_error":
			return build(model.CodeOverloaded, "the Anthropic API failed mid-response (%s: %s) after %d retries; try again in a few minutes", typ, msg, retries)
		case "rate_limit_error":
			return build(model.CodeRateLimited, "the Anthropic API rate limit cut the response off (%s) after %d retries; wait a minute and try again, or raise the workspace's rate limit", msg, retries)
		default:
			return build(model.CodeMalformedStream, "the Anthropic API stream ended with an error event (%s: %s); try again", typ, msg)
		}
	}
	switch status := e.StatusCode; {
	case status == http.StatusUnauthorized:
		return build(model.CodeAuth, "the Anthropic API rejected the API key (%s); set ANTHROPIC_API_KEY to a valid key", msg)
	case status == http.StatusForbidden:
		return build(model.CodeAuth, "the Anthropic API key may not do this (%s); check the key's workspace and its access to model %q", msg, modelName)
	case status == http.StatusNotFound || typ == "not_found_error":
		return build(model.CodeNotFound, "the Anthropic API does not know model %q (%s); check the model name (sema knows %s, and the aliases %s), and ANTHROPIC_BASE_URL if it is set",
			modelName, msg, strings.Join(knownModels(), ", "), strings.Join(model.Aliases, ", "))
	case status == http.StatusRequestEntityTooLarge:
		return build(model.CodeContextTooLong, "the request is larger than the Anthropic API accepts (%s); shorten the conversation or drop large attachments", msg)
	case status == http.StatusBadRequest && tooLong(msg):
		return build(model.CodeContextTooLong, "the prompt does not fit model %q's context window (%s); shorten or compact the conversation", modelName, msg)
	case status == http.StatusTooManyRequests:
		return build(model.CodeRateLimited, "the Anthropic API rate limit was still exceeded after %d retries (%s); wait a minute and try again, or raise the workspace's rate limit", retries, msg)
	case status >= 500 || typ == "overloaded_error":
		return build(model.CodeOverloaded, "the Anthropic API was overloaded or failing (%d %s: %s) after %d retries; try again in a few minutes", status, typ, msg, retries)
	default:
		return build(model.CodeBadRequest, "the Anthropic API refused the request (%d %s: %s); fix what it names and try again", status, typ, msg)
	}
}

// tooLong reports whether the message of a 400 says the prompt exceeds the context
// window ("prompt is too long: 208000 tokens > 200000 maximum", "input length and
// `max_tokens` exceed context limit: …").
func tooLong(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "prompt is too long") || strings.Contains(m, "exceed context limit")
}

// knownModels are the Anthropic models sema knows, newest first.
func knownModels() []string {
	var ids []string
	for _, k := range model.Catalog() {
		if k.Provider == "anthropic" {
			ids = append(ids, k.ID)
		}
	}
	return ids
}
