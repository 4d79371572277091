package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 1 << 20

// errStalled and errNoFirstByte are the cancellation causes the watchdog sets.
var (
	errStalled     = errors.New("the server sent nothing for too long")
	errNoFirstByte = errors.New("the server sent no first byte in time")
)

// apiError is what an error response said, in whichever of the shapes compatible
// servers use.
type apiError struct {
	Status  int
	Message string
	Type    string
	Code    string
}

// capture records the attempts of one call: how many were made, and the retry-after
// the last response advised when that was too long to wait.
type capture struct {
	attempts int
	// advised is the retry-after of the last response when it asked for more than
	// Provider.maxWait; 0 otherwise.
	advised time.Duration
}

// statusError is an error response that ended the request.
type statusError struct{ apiError }

func (e *statusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// retryAfter reads retry-after-ms, else retry-after (seconds, or an HTTP date), as the
// official SDKs do. A value too large for a Duration is the largest Duration.
func retryAfter(h http.Header) (time.Duration, bool) {
	for _, f := range [...]struct {
		name string
		unit time.Duration
	}{{"retry-after-ms", time.Millisecond}, {"retry-after", time.Second}} {
		v := strings.TrimSpace(h.Get(f.name))
		if v == "" {
			continue
		}
		if n, err := strconv.ParseFloat(v, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			if math.IsNaN(n) || n < 0 {
				continue
			}
			if d := n * float64(f.unit); d < math.MaxInt64 {
				return time.Duration(d), true
			}
			return math.MaxInt64, true
		}
		if f.unit == time.Second {
			if t, err := http.ParseTime(v); err == nil {
				return max(0, time.Until(t)), true
			}
		}
	}
	return 0, false
}

// parseAPIError reads an error body in any of the shapes seen in the wild.
func parseAPIError(status int, body []byte) apiError {
	ae := apiError{Status: status}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) == nil {
		src := top
		if e, ok := top["error"]; ok {
			var inner map[string]json.RawMessage
			if json.Unmarshal(e, &inner) == nil {
				src = inner
			} else {
				ae.Message = jsonText(e)
				src = nil
			}
		}
		if src != nil {
			ae.Message = jsonText(src["message"])
			ae.Type = jsonText(src["type"])
			ae.Code = jsonText(src["code"])
			if ae.Message == "" {
				ae.Message = jsonText(top["detail"])
			}
		}
	} else {
		ae.Message = strings.TrimSpace(string(body))
	}
	if ae.Message == "" {
		ae.Message = strings.TrimSpace(http.StatusText(status))
	}
	ae.Message = clip(oneLine(ae.Message), 300)
	return ae
}

// jsonText renders a JSON scalar as text: strings unquoted, numbers as written, null
// and absent as "".
func jsonText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// cancelled is the error of a call whose ctx ended.
func cancelled(err error) *sema.Error {
	return &sema.Error{Code: model.CodeCancelled, Message: "the model call was cancelled", Err: err}
}

// interrupted reports the error for a call that ended because ctx (the caller's) or
// callCtx (the watchdog's) ended, or nil when neither did.
func (p *Provider) interrupted(ctx, callCtx context.Context, err error) *sema.Error {
	if ctx.Err() != nil {
		return cancelled(ctx.Err())
	}
	if errors.Is(context.Cause(callCtx), errNoFirstByte) {
		return &sema.Error{Code: model.CodeNetwork,
			Message: fmt.Sprintf("%s sent nothing within %s of the request and the call was abandoned: check that the server is running and not overloaded, or raise the first-byte timeout", p.baseURL, p.firstByte),
			Err:     err, Detail: map[string]any{"base_url": p.baseURL, "first_byte_timeout": p.firstByte.String()}}
	}
	if errors.Is(context.Cause(callCtx), errStalled) {
		return &sema.Error{Code: model.CodeNetwork,
			Message: fmt.Sprintf("%s sent nothing for %s and the call was abandoned: check that the server is running and not overloaded, or raise the stream idle timeout", p.baseURL, p.idle),
			Err:     err, Detail: map[string]any{"base_url": p.baseURL, "idle_timeout": p.idle.String()}}
	}
	return nil
}

// stalled reports that the watchdog abandoned the attempt of callCtx.
func stalled(callCtx context.Context) bool {
	cause := context.Cause(callCtx)
	return errors.Is(cause, errStalled) || errors.Is(cause, errNoFirstByte)
}

// requestError maps an error of the request phase (before the stream started).
func (p *Provider) requestError(ctx, callCtx context.Context, err error, c *capture, modelName string) error {
	if e := p.interrupted(ctx, callCtx, err); e != nil {
		return e
	}
	var he *statusError
	if errors.As(err, &he) {
		se := p.apiFailure(he.apiError, c.attempts, modelName, err)
		if c.advised > 0 {
			se = p.tooLongAWait(se, he.apiError, c.advised)
		}
		return se
	}
	return &sema.Error{Code: model.CodeNetwork,
		Message: fmt.Sprintf("cannot reach %s (%s): check the base URL and your network connection", p.baseURL, netReason(err)),
		Err:     err, Detail: map[string]any{"base_url": p.baseURL, "attempts": c.attempts}}
}

// apiFailure maps an error response (or an error the server reported inside the
// stream, with Status 0) to a coded error.
func (p *Provider) apiFailure(ae apiError, attempts int, modelName string, cause error) *sema.Error {
	detail := map[string]any{"status": ae.Status, "base_url": p.baseURL}
	if ae.Type != "" {
		detail["type"] = ae.Type
	}
	if ae.Code != "" {
		detail["error_code"] = ae.Code
	}
	if attempts > 0 {
		detail["attempts"] = attempts
	}
	mk := func(code, format string, args ...any) *sema.Error {
		return &sema.Error{Code: code, Message: fmt.Sprintf(format, args...), Err: cause, Detail: detail}
	}
	msg := ae.Message
	low := strings.ToLower(ae.Code + " " + ae.Type + " " + msg)
	refusedInput := ae.Status == 0 || ae.Status == http.StatusBadRequest || ae.Status == http.StatusRequestEntityTooLarge ||
		ae.Status == http.StatusUnprocessableEntity
	switch {
	case ae.Code == "context_length_exceeded" || ae.Status == http.StatusRequestEntityTooLarge ||
		(refusedInput && (strings.Contains(low, "context length") || strings.Contains(low, "context_length") ||
			strings.Contains(low, "context window") || strings.Contains(low, "maximum context"))):
		return mk(model.CodeContextTooLong, "the conversation is too long for model %q (%s): start a new session or use a model with a larger context window", modelName, msg)
	case ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden ||
		ae.Code == "invalid_api_key" || ae.Type == "authentication_error":
		if p.custom {
			return mk(model.CodeAuth, "%s refused the credentials (%s): set %s to a key this server accepts", p.baseURL, statusText(ae, msg), EnvAPIKey)
		}
		return mk(model.CodeAuth, "OpenAI refused the API key (%s): set %s to a valid key", statusText(ae, msg), EnvAPIKey)
	case ae.Status == http.StatusNotFound || ae.Code == "model_not_found":
		if p.custom {
			return mk(model.CodeNotFound, "%s does not serve model %q (%s): check the model name, and that the base URL ends with the API version (such as /v1)", p.baseURL, modelName, msg)
		}
		return mk(model.CodeNotFound, "model %q was not found (%s): check the model name and that your key has access to it", modelName, msg)
	case ae.Code == "insufficient_quota":
		return mk(model.CodeRateLimited, "the account's quota is exhausted (%s): check the plan and billing of the key in %s", msg, EnvAPIKey)
	case ae.Status == http.StatusTooManyRequests || ae.Code == "rate_limit_exceeded" || ae.Type == "rate_limit_error":
		if ae.Status == 0 {
			return mk(model.CodeRateLimited, "the server stopped the response at a rate limit (%s): wait a minute and retry", msg)
		}
		return mk(model.CodeRateLimited, "the rate limit was still exceeded after %s (%s): wait a minute and retry, or lower the request rate", attemptsText(attempts), msg)
	case ae.Status == 0:
		return mk(model.CodeOverloaded, "%s reported an error during the response (%s): retry later", p.baseURL, msg)
	case ae.Status >= 500:
		return mk(model.CodeOverloaded, "%s failed with a server error after %s (%d: %s): retry later", p.baseURL, attemptsText(attempts), ae.Status, msg)
	default:
		return mk(model.CodeBadRequest, "the server refused the request (%d: %s): check the model name and the request options", ae.Status, msg)
	}
}

// tooLongAWait is the error of a response that advised a wait beyond MaxRetryAfter:
// the call stops instead of sleeping that long, and says how long the server asked
// for. A 429 is model.rate_limited; another status keeps the code apiFailure gave it.
func (p *Provider) tooLongAWait(se *sema.Error, ae apiError, advised time.Duration) *sema.Error {
	code := se.Code
	if ae.Status == http.StatusTooManyRequests {
		code = model.CodeRateLimited
	}
	secs := int64(advised / time.Second)
	if advised%time.Second != 0 {
		secs++
	}
	detail := make(map[string]any, len(se.Detail)+2)
	for k, v := range se.Detail {
		detail[k] = v
	}
	detail["retry_after_seconds"] = secs
	detail["max_retry_after"] = p.maxWait.String()
	return &sema.Error{Code: code,
		Message: fmt.Sprintf("%s asked to wait %s before retrying (%d: %s), longer than the %s this provider waits: try again later, or raise MaxRetryAfter",
			p.baseURL, advised.Round(time.Second), ae.Status, ae.Message, p.maxWait),
		Err: se.Err, Detail: detail}
}

func statusText(ae apiError, msg string) string {
	if ae.Status == 0 {
		return msg
	}
	return fmt.Sprintf("%d: %s", ae.Status, msg)
}

func attemptsText(n int) string {
	if n <= 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// streamError maps an error that ended the stream after it started.
func (p *Provider) streamError(ctx, callCtx context.Context, err error) error {
	if e := p.interrupted(ctx, callCtx, err); e != nil {
		return e
	}
	var se *sema.Error
	if errors.As(err, &se) {
		return se
	}
	var ae *streamAPIError
	if errors.As(err, &ae) {
		return p.apiFailure(ae.apiError, 0, "", err)
	}
	return &sema.Error{Code: model.CodeNetwork,
		Message: fmt.Sprintf("the connection to %s broke during the response (%s): retry the task", p.baseURL, netReason(err)),
		Err:     err, Detail: map[string]any{"base_url": p.baseURL}}
}

// netReason names a transport failure in a few words.
func netReason(err error) string {
	var dns *net.DNSError
	var te interface{ Timeout() bool }
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &dns):
		return "the host name does not resolve"
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
		return "the server closed the connection"
	case errors.As(err, &te) && te.Timeout():
		return "timed out"
	default:
		return clip(oneLine(err.Error()), 200)
	}
}

// watchdog abandons an attempt (cancels its context with a cause) when nothing has
// arrived for too long: the first byte of a response within firstByte of sending the
// request (errNoFirstByte), then each next byte within idle (errStalled). Without a
// first-byte limit the idle limit covers the wait for the response too. Activity is a
// timestamp store, so the per-read cost is one atomic write; the timer re-checks it
// when it fires.
type watchdog struct {
	idle, firstByte time.Duration
	cancel          context.CancelCauseFunc
	last            atomic.Int64

	mu    sync.Mutex
	timer *time.Timer
	limit time.Duration // the wait being timed; 0 while paused
	cause error
}

// newWatchdog returns nil when neither limit is set; a nil watchdog ignores every call.
func newWatchdog(idle, firstByte time.Duration, cancel context.CancelCauseFunc) *watchdog {
	if idle <= 0 && firstByte <= 0 {
		return nil
	}
	return &watchdog{idle: idle, firstByte: firstByte, cancel: cancel}
}

// request starts the wait for the first byte of a response.
func (w *watchdog) request() {
	if w == nil {
		return
	}
	if w.firstByte > 0 {
		w.set(w.firstByte, errNoFirstByte)
	} else {
		w.set(w.idle, errStalled)
	}
}

// respond switches to the idle limit once a response has started.
func (w *watchdog) respond() {
	if w != nil {
		w.set(w.idle, errStalled)
	}
}

func (w *watchdog) pause() {
	if w != nil {
		w.set(0, nil)
	}
}

func (w *watchdog) stop() { w.pause() }

func (w *watchdog) set(d time.Duration, cause error) {
	w.touch()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.limit, w.cause = max(d, 0), cause
	switch {
	case w.limit == 0:
		if w.timer != nil {
			w.timer.Stop()
		}
	case w.timer == nil:
		w.timer = time.AfterFunc(d, w.fire)
	default:
		w.timer.Reset(d)
	}
}

func (w *watchdog) touch() {
	if w != nil {
		w.last.Store(time.Now().UnixNano())
	}
}

func (w *watchdog) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.limit == 0 {
		return
	}
	quiet := time.Duration(time.Now().UnixNano() - w.last.Load())
	if quiet < w.limit {
		w.timer.Reset(w.limit - quiet)
		return
	}
	w.limit = 0
	w.cancel(w.cause)
}

// touchReader marks activity on every read that returned bytes.
type touchReader struct {
	io.ReadCloser
	wd *watchdog
}

func (r *touchReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if n > 0 {
		r.wd.touch()
	}
	return n, err
}
