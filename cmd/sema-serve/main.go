// Command sema-serve is `sema serve`: the agent core as an HTTP service (package server).
// It is a binary of its own so that the service's dependencies — River, pgx, the
// Prometheus client — stay out of the agent's command line, which starts in milliseconds;
// `sema serve ARGS…` runs it (the sema-serve next to sema, else on PATH).
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/modelref"
	"github.com/sema-agent/sema/pricing"
	"github.com/sema-agent/sema/server"
	"github.com/sema-agent/sema/settings"
	"github.com/sema-agent/sema/statedir"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// serveOptions are `sema serve`'s flags.
type serveOptions struct {
	listen       string
	publicURL    string
	catchUp      string        // --schedule-catch-up
	webhookLink  time.Duration // --webhook-link-life
	store        string
	home         string
	model        string
	baseURL      string
	workers      int
	rescue       time.Duration
	lease        time.Duration
	heartbeat    time.Duration
	deadAfter    time.Duration
	modelWait    time.Duration
	modelBack    time.Duration
	grace        time.Duration
	noWorker     bool
	tenant       string
	base         string
	maxTasks     int
	tokensPerDy  int64
	queue        string
	queues       []string
	models       []string
	policy       string
	managed      string
	managedFile  *settings.File // read by runServe: the tenant commands run no task
	tenantFile   string         // tenant set --managed-settings
	noTenantFile bool           // tenant set --no-managed-settings
	tracer       *sdktrace.TracerProvider
	http         server.HTTPOptions
	connsPerIP   int
	reqsPerTnt   int
}

func main() {
	ctx := context.Background()
	cmd := newServeCmd(os.Stdout, os.Stderr)
	cmd.SetArgs(os.Args[1:])
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "sema serve: "+err.Error())
		var u *usageError
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a refusal of the command line's words (exit 2); anything else exits 1.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErr(err error) error { return &usageError{err} }

// codeUsage is the code of a command line that is incomplete.
const codeUsage = "config.usage"

func newServeCmd(stdout, stderr io.Writer) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "sema serve [--listen ADDR] [--store postgres://…]",
		Short: "Run sema as a service: an HTTP API with server-sent events (see /v1/openapi.json)",
		Long: `Run sema as a service: tasks submitted over HTTP run on River's queue, their events
stream from the store (server-sent events, resumable with Last-Event-ID), and questions
park until a decision arrives over the API.

With no --store, the service keeps everything in the state directory (SQLite: sessions
and history in sema.db, the service's tables and River's queue in serve.db). With
--store postgres://… (or SEMA_STORE), every process naming the same database shares the
tasks, streams and checkpoints.

Create a tenant's token first: sema serve token create --tenant NAME --base DIR`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), &o, stderr)
		},
	}
	addServeFlags(cmd, &o)
	cmd.AddCommand(newTokenCmd(&o, stdout), newTenantCmd(&o, stdout), newWebhookCmd(&o, stdout), newReplayCmd(&o, stdout), newScheduleCmd(&o, stdout))
	return cmd
}

// addServeFlags adds the flags of sema serve itself.
func addServeFlags(cmd *cobra.Command, o *serveOptions) {
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:7777", "address to serve the API on (loopback by default)")
	addStoreFlags(cmd, o)
	f.StringVar(&o.model, "model", "", "default model of tasks that name none (PROVIDER/MODEL; default: SEMA_MODEL, else by the API key set)")
	f.StringVar(&o.baseURL, "base-url", "", "the provider's base URL (an OpenAI-compatible server)")
	f.IntVar(&o.workers, "workers", 16, "tasks this process runs at once")
	f.DurationVar(&o.rescue, "rescue-after", time.Minute, "how long a task's job may go without its process before another process takes it")
	f.DurationVar(&o.lease, "session-lease", 0, "a running leg's lease on its session (default: the runner's)")
	f.DurationVar(&o.heartbeat, "heartbeat", server.DefaultHeartbeat, "how often a working process writes its heartbeat and looks for dead ones")
	f.DurationVar(&o.modelWait, "model-wait", server.DefaultModelWait, "how long a task waits out a model that fails in a way that may pass (overloaded, rate-limited, unreachable) before it fails")
	f.DurationVar(&o.modelBack, "model-backoff", server.DefaultModelBackoff, "the longest wait between a waiting task's tries of its model (the waits double from 1s)")
	f.DurationVar(&o.deadAfter, "dead-after", server.DefaultDeadAfter, "how old a working process's heartbeat is when its tasks are taken over by another")
	f.DurationVar(&o.grace, "shutdown-grace", 30*time.Second, "on SIGTERM/SIGINT, how long running legs may finish before they are left for another process")
	f.BoolVar(&o.noWorker, "no-worker", false, "serve the API only; run no tasks in this process")
	f.StringSliceVar(&o.models, "models", nil, "the models (PROVIDER/MODEL) a task may name besides the default (--model); any other is refused (tenant.policy_model). Default: the default only")
	f.StringVar(&o.managed, "managed-settings", "", "the managed policy every task runs under, above the workspace's settings (default: "+settings.ManagedFile+" when it exists)")
	f.StringSliceVar(&o.queues, "queues", nil, "the River queues whose tasks this process runs: those of the tenants whose base directories exist on this machine (default: default)")
	f.DurationVar(&o.http.ReadHeaderTimeout, "read-header-timeout", server.DefaultReadHeaderTimeout, "how long a client may take to send a request's headers")
	f.DurationVar(&o.http.ReadTimeout, "read-timeout", server.DefaultReadTimeout, "how long a client may take to send a whole request, body included (with or without a valid token)")
	f.DurationVar(&o.http.WriteTimeout, "write-timeout", server.DefaultWriteTimeout, "how long a client may take to read an answer; an event stream gets it for each write, so it stays open while its events flow")
	f.DurationVar(&o.http.IdleTimeout, "idle-timeout", server.DefaultIdleTimeout, "how long a keep-alive connection may stay open without a request")
	f.IntVar(&o.connsPerIP, "max-conns-per-ip", server.DefaultMaxConnsPerIP, "connections one client address may hold open at once; the next is answered 503 serve.too_many_connections (0: no limit, behind a reverse proxy that limits its clients)")
	f.IntVar(&o.reqsPerTnt, "max-requests-per-tenant", server.DefaultMaxRequestsPerTenant, "requests one tenant may have in progress at once, open event streams included; the next is answered 429 tenant.too_many_requests (0: no limit)")
	f.StringVar(&o.http.TLSCert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS only (with --tls-key)")
	f.StringVar(&o.http.TLSKey, "tls-key", "", "PEM private key file of --tls-cert")
	f.StringVar(&o.catchUp, "schedule-catch-up", "once", "a schedule's tick missed while every process was down: once (fire it once at start) or skip")
	f.DurationVar(&o.webhookLink, "webhook-link-life", time.Hour, "how long the approval link in a task.needs_person webhook call works (with --public-url)")
	f.StringVar(&o.publicURL, "public-url", "", "where people reach this service (https://sema.example.com): the base of approval links and the console's trusted origin (default: the scheme and host of each request)")

}

// check refuses a flag value out of its range by name: a zero or negative count or
// duration is never read as the default.
func (o *serveOptions) check() error {
	switch {
	case o.workers < 1:
		return sema.Errorf(codeUsage, "--workers must be at least 1, not %d (to run no tasks in this process, use --no-worker)", o.workers)
	case o.rescue <= 0:
		return sema.Errorf(codeUsage, "--rescue-after must be a positive duration such as 1m, not %s", o.rescue)
	case o.grace < 0:
		return sema.Errorf(codeUsage, "--shutdown-grace cannot be negative (0 hands running legs back at once), not %s", o.grace)
	case o.lease < 0:
		return sema.Errorf(codeUsage, "--session-lease cannot be negative (0: the runner's), not %s", o.lease)
	case o.connsPerIP < 0:
		return sema.Errorf(codeUsage, "--max-conns-per-ip cannot be negative (0: no limit), not %d", o.connsPerIP)
	case o.reqsPerTnt < 0:
		return sema.Errorf(codeUsage, "--max-requests-per-tenant cannot be negative (0: no limit), not %d", o.reqsPerTnt)
	case (o.http.TLSCert == "") != (o.http.TLSKey == ""):
		return sema.Errorf(server.CodeTLSInvalid, "--tls-cert and --tls-key go together: give the certificate and its key, or neither")
	case o.heartbeat <= 0:
		return sema.Errorf(codeUsage, "--heartbeat must be a positive duration such as 1s, not %s", o.heartbeat)
	case o.modelWait <= 0:
		return sema.Errorf(codeUsage, "--model-wait must be a positive duration such as 10m, not %s", o.modelWait)
	case o.modelBack <= 0:
		return sema.Errorf(codeUsage, "--model-backoff must be a positive duration such as 1m, not %s", o.modelBack)
	case o.webhookLink <= 0:
		return sema.Errorf(codeUsage, "--webhook-link-life must be a positive duration such as 1h, not %s", o.webhookLink)
	case o.catchUp != "once" && o.catchUp != "skip":
		return sema.Errorf(codeUsage, "--schedule-catch-up is once (a missed tick fires once at start) or skip, not %q", o.catchUp)
	case o.publicURL != "" && !publicURLOK(o.publicURL):
		return sema.Errorf(codeUsage, "--public-url must be an http:// or https:// URL with a host and no path, such as https://sema.example.com, not %q", o.publicURL)
	case o.deadAfter < 2*o.heartbeat:
		return sema.Errorf(codeUsage, "--dead-after must be at least twice --heartbeat (%s), not %s: a live process would be taken for dead", o.heartbeat, o.deadAfter)
	}
	// A zero timeout would be no timeout at all in the HTTP server: never a default.
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"--read-header-timeout", o.http.ReadHeaderTimeout}, {"--read-timeout", o.http.ReadTimeout},
		{"--write-timeout", o.http.WriteTimeout}, {"--idle-timeout", o.http.IdleTimeout},
	} {
		if f.v <= 0 {
			return sema.Errorf(codeUsage, "%s must be a positive duration such as 30s, not %s", f.name, f.v)
		}
	}
	if o.http.ReadHeaderTimeout > o.http.ReadTimeout {
		return sema.Errorf(codeUsage, "--read-header-timeout (%s) cannot be longer than --read-timeout (%s), which bounds the whole request", o.http.ReadHeaderTimeout, o.http.ReadTimeout)
	}
	o.http.MaxConnsPerIP, o.http.NoConnLimit = o.connsPerIP, o.connsPerIP == 0
	o.http.MaxRequestsPerTenant, o.http.NoTenantLimit = o.reqsPerTnt, o.reqsPerTnt == 0
	return nil
}

func addStoreFlags(cmd *cobra.Command, o *serveOptions) {
	cmd.Flags().StringVar(&o.store, "store", "", "postgres://… to share one Postgres database among processes (default: SEMA_STORE, else SQLite in the state directory)")
	cmd.Flags().StringVar(&o.home, "home", "", "state directory (default: $SEMA_HOME, else ~/.sema)")
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// openServer opens the service's store as the flags say.
func openServer(ctx context.Context, o *serveOptions, log *slog.Logger) (*server.Server, error) {
	home, err := statedir.Resolve(o.home)
	if err != nil {
		return nil, usageErr(err)
	}
	prices, err := pricing.LoadDir(home)
	if err != nil {
		return nil, usageErr(err)
	}
	var mu sync.Mutex
	providers := map[string]model.Provider{}
	names := map[string]string{}
	open := func(ref string) (model.Provider, string, error) {
		if ref != "" && !slices.Contains(o.models, ref) {
			// The service refuses such a task before it gets here; this keeps the cache
			// below to the default and --models whoever calls.
			return nil, "", sema.Errorf(server.CodePolicyModel, "the model %q is not one of the service's models (--models)", ref)
		}
		ref = cmp.Or(ref, o.model, os.Getenv("SEMA_MODEL"))
		mu.Lock()
		defer mu.Unlock()
		// One provider per model for the process: its HTTP connections are reused, and
		// a scripted model's script goes on across a task's legs.
		if p, ok := providers[ref]; ok {
			return p, names[ref], nil
		}
		p, name, err := modelref.Open(ref, o.baseURL)
		if err != nil {
			return nil, "", err
		}
		providers[ref], names[ref] = p, name
		return p, name, nil
	}
	cfg := server.Config{
		Home: home, Postgres: cmp.Or(o.store, os.Getenv("SEMA_STORE")), OpenProvider: open, Prices: prices, Models: o.models, ManagedSettings: o.managedFile,
		Workers: o.workers, RescueAfter: o.rescue, SessionLease: o.lease, Heartbeat: o.heartbeat, DeadAfter: o.deadAfter, ModelWait: o.modelWait, ModelBackoff: o.modelBack, NoWorker: o.noWorker, Logger: log, Queues: o.queues,
		PublicURL: o.publicURL, ScheduleCatchUp: o.catchUp, WebhookLinkLife: o.webhookLink,
	}
	if o.tracer != nil {
		cfg.TracerProvider = o.tracer
	}
	s, err := server.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// tracing returns the tracer provider of OpenTelemetry's OTLP/HTTP exporter when the
// standard variables name an endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; the exporter reads the rest of its settings from
// the OTEL_EXPORTER_OTLP_* variables too), else nil: no spans are made.
func tracing(ctx context.Context) (*sdktrace.TracerProvider, error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, sema.Errorf("serve.tracing_invalid", "cannot set up the OTLP exporter: %v; check the OTEL_EXPORTER_OTLP_* variables", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", cmp.Or(os.Getenv("OTEL_SERVICE_NAME"), "sema-serve")))
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

func runServe(ctx context.Context, o *serveOptions, stderr io.Writer) error {
	if err := o.check(); err != nil {
		return usageErr(err)
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	tp, err := tracing(ctx)
	if err != nil {
		return usageErr(err)
	}
	if tp != nil {
		o.tracer = tp
		defer func() {
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			tp.Shutdown(fctx) // sends the spans still batched
		}()
	}
	if o.managedFile, err = managedSettings(o.managed); err != nil {
		return usageErr(err)
	}
	s, err := openServer(ctx, o, log)
	if err != nil {
		return err
	}
	defer s.Close()
	hs, err := s.HTTPServer(o.http)
	if err != nil {
		return usageErr(err)
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return usageErr(sema.Errorf("serve.listen_failed", "cannot listen on %s: %v; pick another --listen address", o.listen, err))
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := s.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("serving", "listen", ln.Addr().String(), "store", storeName(o), "tls", hs.TLS())
	if !hs.TLS() && !loopback(ln.Addr()) {
		log.Warn("serving plain HTTP beyond this machine: tokens and task contents cross the network in clear; give --tls-cert and --tls-key, or listen on 127.0.0.1 behind a TLS reverse proxy", "listen", ln.Addr().String())
	}
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
	}
	log.Info("shutting down", "grace", o.grace.String())
	sctx, cancel := context.WithTimeout(context.Background(), o.grace)
	defer cancel()
	// Stop taking work first (the workers finish or hand back their legs), then close
	// the listener; open event streams end with the process.
	serr := s.Shutdown(sctx)
	hctx, hcancel := context.WithTimeout(context.Background(), time.Second)
	defer hcancel()
	hs.Shutdown(hctx)
	if serr != nil {
		log.Warn("legs still running at the deadline were handed back to the queue", "error", serr.Error())
	}
	return nil
}

// loopback reports whether a listener's address is reachable from this machine only.
func loopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

func storeName(o *serveOptions) string {
	if cmp.Or(o.store, os.Getenv("SEMA_STORE")) != "" {
		return "postgres"
	}
	return "sqlite"
}

// publicURLOK reports whether u can be the base of the console's links: an absolute
// http(s) URL of a host, served at its root.
func publicURLOK(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != "" && (p.Path == "" || p.Path == "/") && p.RawQuery == "" && p.User == nil
}
