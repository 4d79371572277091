// Package console is sema serve's web console: server-rendered pages where a person
// sees a tenant's tasks live, submits and cancels them, and answers their parked
// questions, from any browser — a phone's included. It is a client of the API and
// nothing more: every page calls the API in-process with the signed-in tenant's token,
// so the API's tenant isolation, validation and claim-once decisions are the console's
// too. The session cookie holds the token sealed (AES-GCM) with a key the service keeps
// in its store; the token is never in a URL, a page or a log.
package console

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
)

//go:embed templates static
var assets embed.FS

// CodeConfigInvalid: a console made without the API or with a key of the wrong size.
const CodeConfigInvalid = "console.config_invalid"

// Config is what the console needs.
type Config struct {
	// API is the service's API handler; the console calls it in-process.
	API http.Handler
	// Key seals the session cookies: 32 bytes, the same on every process that serves
	// the console of one deployment.
	Key []byte
	// PublicURL is where people reach the service (sema serve --public-url): its
	// origin is trusted for the console's forms, and an https one makes the cookie
	// Secure behind a proxy that ends TLS.
	PublicURL string
	// Logger receives the console's failures (nil: slog.Default()).
	Logger *slog.Logger
}

// Console is the console's handler.
type Console struct {
	cfg   Config
	aead  cipher.AEAD
	mux   *http.ServeMux
	pages map[string]*template.Template
	cop   *http.CrossOriginProtection
	log   *slog.Logger
}

const (
	sessionCookie = "sema_console"
	// anonCookie carries the CSRF token of the forms shown before sign-in (the
	// sign-in form, a link's page).
	anonCookie = "sema_console_csrf"
	// sessionLife is how long a sign-in lasts.
	sessionLife = 12 * time.Hour
	// sealContext binds a sealed cookie to its use.
	sealContext = "sema console session v1"
)

// New returns the console's handler.
func New(cfg Config) (*Console, error) {
	if cfg.API == nil {
		return nil, sema.Errorf(CodeConfigInvalid, "the console needs the API's handler (Config.API)")
	}
	if len(cfg.Key) != 32 {
		return nil, sema.Errorf(CodeConfigInvalid, "the console's key must be 32 bytes, not %d", len(cfg.Key))
	}
	block, err := aes.NewCipher(cfg.Key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, aead: aead, log: cfg.Logger, cop: http.NewCrossOriginProtection()}
	if c.log == nil {
		c.log = slog.Default()
	}
	if cfg.PublicURL != "" {
		if u, err := url.Parse(cfg.PublicURL); err == nil && u.Scheme != "" && u.Host != "" {
			if err := c.cop.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
				return nil, sema.Errorf(CodeConfigInvalid, "the public URL %q has no usable origin: %v", cfg.PublicURL, err)
			}
		}
	}
	if err := c.parse(); err != nil {
		return nil, err
	}
	c.routes()
	return c, nil
}

func (c *Console) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	files := http.StripPrefix("/static/", http.FileServerFS(static))
	m.HandleFunc("GET /static/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			// The files are named by the pages; their list is nobody's business.
			c.render(w, r, http.StatusNotFound, "notfound", page{Title: "Not found"})
			return
		}
		files.ServeHTTP(w, r)
	})
	m.HandleFunc("GET /{$}", c.signedIn(c.home))
	m.HandleFunc("GET /signin", c.signinPage)
	m.HandleFunc("POST /signin", c.signin)
	m.HandleFunc("POST /signout", c.signedIn(c.signout))
	m.HandleFunc("GET /api/tasks", c.signedInJSON(c.taskGroups))
	m.HandleFunc("GET /api/tasks/{id}", c.signedInJSON(c.taskStatus))
	m.HandleFunc("POST /tasks", c.signedIn(c.submit))
	m.HandleFunc("GET /tasks/{id}", c.signedIn(c.taskPage))
	m.HandleFunc("GET /tasks/{id}/panel", c.signedIn(c.panel))
	m.HandleFunc("GET /tasks/{id}/events", c.signedIn(c.events))
	m.HandleFunc("POST /tasks/{id}/decision", c.signedIn(c.decide))
	m.HandleFunc("POST /tasks/{id}/cancel", c.signedIn(c.cancel))
	m.HandleFunc("POST /tasks/{id}/link", c.signedIn(c.makeLink))
	m.HandleFunc("GET /approve/{token}", c.linkPage)
	m.HandleFunc("POST /approve/{token}", c.linkDecide)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.render(w, r, http.StatusNotFound, "notfound", page{Title: "Not found"})
	})
	c.mux = m
}

// ServeHTTP answers with the console's security headers on every answer: scripts only
// from the console's own files (no inline script), never framed, no sniffing, and no
// Referer — a link's page must not hand its URL to anything it points at.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	if r.Method == http.MethodPost {
		// A form posted from another site is refused before anything reads it, whatever
		// cookie it carries: the browser's Sec-Fetch-Site or Origin says where it is from.
		if err := c.cop.Check(r); err != nil {
			c.render(w, r, http.StatusForbidden, "error", page{Title: "Refused", Error: "This form was sent from another site, so it was refused. Open the console directly and try again."})
			return
		}
	}
	c.mux.ServeHTTP(w, r)
}

// session is what the sealed cookie holds.
type session struct {
	Token string `json:"t"`
	CSRF  string `json:"c"`
	Exp   int64  `json:"e"`
}

func (c *Console) seal(s session) string {
	plain, _ := json.Marshal(s)
	nonce := make([]byte, c.aead.NonceSize())
	rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(c.aead.Seal(nonce, nonce, plain, []byte(sealContext)))
}

func (c *Console) open(v string) (*session, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(raw) < c.aead.NonceSize() {
		return nil, false
	}
	n := c.aead.NonceSize()
	plain, err := c.aead.Open(nil, raw[:n], raw[n:], []byte(sealContext))
	if err != nil {
		return nil, false
	}
	var s session
	if json.Unmarshal(plain, &s) != nil || s.Token == "" || time.Now().Unix() > s.Exp {
		return nil, false
	}
	return &s, true
}

// secure reports whether cookies must be Secure: the request came over TLS, or the
// public URL says people reach the service over https (a proxy ends TLS).
func (c *Console) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(c.cfg.PublicURL, "https://")
}

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		Secure: c.secure(r), SameSite: http.SameSiteStrictMode})
}

func (c *Console) sessionOf(r *http.Request) (*session, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, false
	}
	return c.open(ck.Value)
}

// anonCSRF is the CSRF token of a form shown without a session, from its cookie,
// made and set when there is none.
func (c *Console) anonCSRF(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(anonCookie); err == nil && len(ck.Value) == 43 {
		return ck.Value
	}
	v := randomToken()
	c.setCookie(w, r, anonCookie, v, 0)
	return v
}

// anonCSRFOK checks a form posted without a session against its cookie.
func anonCSRFOK(r *http.Request) bool {
	ck, err := r.Cookie(anonCookie)
	return err == nil && len(ck.Value) == 43 && sameString(ck.Value, r.PostFormValue("csrf"))
}

func sameString(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func randomToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// signedIn runs h for a request with a valid session, checking a POST's CSRF token;
// a page without one goes to the sign-in page.
func (c *Console) signedIn(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.sessionOf(r)
		if !ok {
			if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, "/events") && !strings.HasSuffix(r.URL.Path, "/panel") {
				http.Redirect(w, r, "/signin", http.StatusSeeOther)
				return
			}
			c.render(w, r, http.StatusUnauthorized, "error", page{Title: "Signed out", Error: "Your session has ended. Sign in again."})
			return
		}
		if r.Method == http.MethodPost && !sameString(s.CSRF, r.PostFormValue("csrf")) {
			c.render(w, r, http.StatusForbidden, "error", page{Title: "Refused", Error: "This form is stale or was not sent by the console. Reload the page and try again."})
			return
		}
		h(w, r, s)
	}
}

// signedInJSON is signedIn for the pages' scripts: JSON answers, 401 when signed out.
func (c *Console) signedInJSON(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.sessionOf(r)
		if !ok {
			writeJSON(w, http.StatusUnauthorized, client.Error{Code: "auth.unauthorized", Message: "sign in again"})
			return
		}
		h(w, r, s)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// api is the API as token sees it, called in-process for request r.
func (c *Console) api(r *http.Request, token string) *client.Client {
	cl := client.New("http://sema.console", token)
	cl.HTTP = &http.Client{Transport: inproc{api: c.cfg.API, from: r}}
	return cl
}

// errorText is what a person reads of an API error: its sentence, with its code for
// whoever reports it.
func errorText(err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Message + " (" + e.Code + ")"
	}
	return "the service did not answer; try again"
}

func codeOf(err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// signinPage shows the sign-in form.
func (c *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.sessionOf(r); ok {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "signin", page{Title: "Sign in", CSRF: c.anonCSRF(w, r)})
}

// signin checks the token by calling the API with it, and seals it into the cookie.
func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !anonCSRFOK(r) {
		c.render(w, r, http.StatusForbidden, "signin", page{Title: "Sign in", CSRF: c.anonCSRF(w, r), Error: "The form was stale; sign in again."})
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	fail := func(status int, msg string) {
		c.render(w, r, status, "signin", page{Title: "Sign in", CSRF: c.anonCSRF(w, r), Error: msg})
	}
	if token == "" {
		fail(http.StatusBadRequest, "Enter your API token (it starts with sema_).")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.api(r, token).Tasks(ctx, client.TaskFilter{Limit: 1}); err != nil {
		if codeOf(err) == "auth.unauthorized" {
			fail(http.StatusUnauthorized, "That token was not accepted. Check it and try again.")
			return
		}
		fail(http.StatusBadGateway, "The service could not check the token: "+errorText(err))
		return
	}
	c.setCookie(w, r, sessionCookie, c.seal(session{Token: token, CSRF: randomToken(), Exp: time.Now().Add(sessionLife).Unix()}), int(sessionLife/time.Second))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request, _ *session) {
	c.setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}
