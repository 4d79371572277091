package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/sema-agent/sema"
)

// fetched is what one fetch found: a page, or a redirect to another site.
type fetched struct {
	page     *page
	redirect *redirect
}

// page is a response body as read.
type page struct {
	// start is the first URL requested (after the https upgrade); final is the URL the
	// body was read from, after same-site redirects.
	start, final string
	// contentType is the Content-Type header as sent ("" when none).
	contentType string
	body        []byte
	// cut reports that the body was longer than MaxBytes and was cut there.
	cut bool
}

// redirect is a redirect to another site, which fetch does not follow.
type redirect struct {
	from, to string
	status   int
}

// fetch gets u, following same-site redirects, within the configured timeout.
func (t *tool) fetch(ctx context.Context, u *url.URL) (fetched, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	u = t.upgrade(u)
	start := u.String()
	for hops := 0; ; hops++ {
		resp, err := t.get(ctx, u)
		if err != nil {
			return fetched{}, err
		}
		if !isRedirect(resp.StatusCode) {
			p, err := t.read(ctx, resp)
			if err != nil {
				return fetched{}, err
			}
			p.start, p.final = start, u.String()
			return fetched{page: p}, nil
		}
		drain(resp)
		loc := resp.Header.Get("Location")
		if loc == "" {
			return fetched{}, sema.Errorf(CodeFetchFailed, "%s answered %d, a redirect, without saying where to", u, resp.StatusCode)
		}
		next, err := u.Parse(loc)
		if err != nil {
			return fetched{}, sema.Errorf(CodeFetchFailed, "%s redirects to %q, which is not a URL: %v", u, loc, err)
		}
		next = t.upgrade(next)
		if !sameSite(u, next) {
			return fetched{redirect: &redirect{from: u.String(), to: next.String(), status: resp.StatusCode}}, nil
		}
		if hops == MaxRedirects {
			return fetched{}, sema.Errorf(CodeTooManyRedirects, "%s redirected more than %d times; WebFetch stopped following", start, MaxRedirects)
		}
		// The same host, yet the target is judged as any URL is: it must not carry
		// credentials or a refused scheme. Its address is judged when it is dialled.
		if next, err = checkURL(next.String(), t.cfg.AllowPrivate); err != nil {
			return fetched{}, err
		}
		u = next
	}
}

// upgrade fetches an http URL as https, unless the deployment keeps plain HTTP.
func (t *tool) upgrade(u *url.URL) *url.URL {
	if t.cfg.PlainHTTP || u.Scheme != "http" {
		return u
	}
	v := *u
	v.Scheme = "https"
	return &v
}

// get sends one GET request and classifies its failure.
func (t *tool) get(ctx context.Context, u *url.URL) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, sema.Errorf(CodeURLInvalid, "the URL %s cannot be requested: %v", u, err)
	}
	req.Header.Set("User-Agent", t.cfg.UserAgent)
	req.Header.Set("Accept", "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.5")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, t.failure(ctx, u, err)
	}
	return resp, nil
}

// read reads a final response's body, up to MaxBytes.
func (t *tool) read(ctx context.Context, resp *http.Response) (*page, error) {
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, sema.Errorf(CodeHTTPStatus, "the server answered %s", resp.Status).With("status", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, t.cfg.MaxBytes+1))
	if err != nil {
		return nil, t.failure(ctx, resp.Request.URL, err)
	}
	p := &page{contentType: resp.Header.Get("Content-Type"), body: body}
	if int64(len(body)) > t.cfg.MaxBytes {
		p.body, p.cut = body[:t.cfg.MaxBytes], true
	}
	return p, nil
}

// failure turns a transport error into a coded one: the guard's refusal keeps its
// code, a passed deadline is a timeout (whatever step it cut short), the dialer's own
// errors keep theirs, anything else is a failed fetch.
func (t *tool) failure(ctx context.Context, u *url.URL, err error) error {
	var se *sema.Error
	isSema := errors.As(err, &se)
	switch {
	case isSema && se.Code == CodeAddressRefused:
		return se
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return sema.Errorf(CodeTimeout, "fetching %s took longer than %s", u, t.cfg.Timeout)
	case isSema:
		return se
	}
	return sema.Errorf(CodeFetchFailed, "fetching %s failed: %s", u, plainError(err))
}

// plainError is err's text without the "Get \"url\": " prefix net/http puts on it, as
// the sentence around it names the URL already.
func plainError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// drain reads a little of a body nobody wants, so closing it is cheap, then closes it.
func drain(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
}

// sameSite reports whether a redirect from a to b stays on a's site: the same host and
// port under the same scheme, or http upgraded to https on the default ports. The host
// must match exactly — Claude Code also lets example.com and www.example.com redirect to
// each other, but a WebFetch(domain:example.com) rule does not name www.example.com, so
// following would fetch from a host the permission gate never judged.
func sameSite(a, b *url.URL) bool {
	if hostKey(a) != hostKey(b) {
		return false
	}
	if a.Scheme == b.Scheme {
		return portOf(a) == portOf(b)
	}
	return a.Scheme == "http" && b.Scheme == "https" && portOf(a) == "80" && portOf(b) == "443"
}

// hostKey is a URL's host as permission rules compare it.
func hostKey(u *url.URL) string {
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
}

// portOf is a URL's port, the scheme's default when none is written.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch u.Scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return fmt.Sprintf("?%s", u.Scheme)
}
