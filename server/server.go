// Package server is `sema serve`: the agent core as an HTTP service with server-sent
// events. A task submitted over the API is a row in the service's tables and a job in
// River's queue, enqueued in one transaction; any worker process that shares the store
// runs it with an agent.Runner, writing each event to the store before anyone reads it,
// so a stream resumes from any process (Last-Event-ID) and a crashed worker's task is
// picked up by another. Questions park (on_ask park is the service's default) and wait
// for a decision over the API; the decision is claimed once, in a row-level atomic
// update, and enqueues the resume.
//
// The service holds no task state in memory beyond the legs it is running: a restarted
// process, or another one, goes on from the store.
package server

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/pricing"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/settings"
	"go.opentelemetry.io/otel/trace"
)

// Error codes of the service, beyond those of the packages it calls.
const (
	// CodeStoreFailed: the service's database could not be opened, migrated or written.
	CodeStoreFailed = "serve.store_failed"
	// CodeUnauthorized: no bearer token, or one the service does not know (a deleted
	// tenant's included).
	CodeUnauthorized = "auth.unauthorized"
	// CodeNotFound: no such task, session or checkpoint for this tenant — another
	// tenant's id included, so an answer never confirms that an id exists.
	CodeNotFound = "request.not_found"
	// CodeBadRequest: a body that is not the JSON the endpoint takes.
	CodeBadRequest = "request.invalid"
	// CodeUnknownField: a body with a field the endpoint does not know.
	CodeUnknownField = "request.unknown_field"
	// CodeRootOutsideBase: a cwd or added directory that does not resolve inside the
	// tenant's base directory.
	CodeRootOutsideBase = "tenant.root_outside_base"
	// CodeRootMoved: a leg's cwd or added directory no longer resolves to the directory
	// the task was submitted with (a link replaced part of it): the leg does not start.
	CodeRootMoved = "tenant.root_moved"
	// CodeConcurrencyLimit: the tenant has as many tasks queued or running as it may.
	CodeConcurrencyLimit = "tenant.concurrency_limit"
	// CodeTokenLimit: the tenant has spent its tokens for the day.
	CodeTokenLimit = "tenant.token_limit"
	// CodeTenantInvalid: a tenant name or base directory that cannot be used.
	CodeTenantInvalid = "tenant.invalid"
	// CodeNotRunnable: an operation on a task or session in a state that does not allow
	// it (a cancel of a finished task, a rewind of a session a task is running in).
	CodeNotRunnable = "task.conflict"
	// CodeShuttingDown: the process is stopping and takes no new work.
	CodeShuttingDown = "serve.shutting_down"
	// CodeConfigInvalid: a Config field out of its range (a negative count or duration).
	CodeConfigInvalid = "serve.config_invalid"
)

// Config is what a service needs. Home or Postgres says where it keeps its state. Its
// counts and durations are zero for their defaults; a negative one is refused
// (serve.config_invalid).
type Config struct {
	// Home is the state directory (SQLite), used when Postgres is empty.
	Home string
	// Postgres is a postgres:// URL: sessions, history, the service's tables and River's
	// queue in that database, shared by every process that names it.
	Postgres string
	// OpenProvider opens the provider for a task's model word ("" is the default
	// model). It returns the provider and the model name to put in the spec.
	OpenProvider func(model string) (model.Provider, string, error)
	// Models are the model words, beyond the default (""), that a task may name: a task
	// naming any other is refused (tenant.policy_model) before OpenProvider sees it, so
	// a tenant reaches only the operator's providers, and a provider cache keyed by the
	// word holds at most these. Empty: the default model only.
	Models []string
	// ManagedSettings is the machine's managed policy (settings.Load with
	// settings.Managed; sema serve reads /etc/sema/managed-settings.json, or
	// --managed-settings): it applies to every task of every tenant, above the
	// workspace's settings files, which the tenant writes. Nil: none.
	ManagedSettings *settings.File
	// Prices are the models' prices for budgets (nil: the built-in table).
	Prices map[string]pricing.Price
	// Workers is how many tasks this process runs at once (0: 16).
	Workers int
	// RescueAfter is how long a job may run without its process before another takes
	// it (0: one minute).
	RescueAfter time.Duration
	// SessionLease is the lease of a running leg on its session (0: the runner's
	// default); a crashed process's sessions are free again after it.
	SessionLease time.Duration
	// Heartbeat is how often a working process writes its heartbeat and looks for dead
	// ones (0: DefaultHeartbeat); DeadAfter is how old a heartbeat is when its process is
	// taken for dead and its legs rescued (0: DefaultDeadAfter). See recovery.go.
	Heartbeat, DeadAfter time.Duration
	// ModelWait is how long a task's model call that keeps failing in a way that may
	// pass (overloaded, rate-limited, unreachable) is tried again before the task fails
	// (0: DefaultModelWait); ModelBackoff caps the wait between tries (0:
	// DefaultModelBackoff). See modelwait.go.
	ModelWait, ModelBackoff time.Duration
	// Poll is how often event streams and idle workers look at the store for work other
	// processes did (0: 200 ms).
	Poll time.Duration
	// Logger receives structured logs (nil: JSON on standard error).
	Logger *slog.Logger
	// TracerProvider receives OpenTelemetry spans of tasks, turns and tool calls (nil:
	// none). sema serve sets one when an OTLP endpoint is configured.
	TracerProvider trace.TracerProvider
	// NoWorker serves the API without running tasks (a process that only answers).
	NoWorker bool
	// Queues are the River queues whose tasks this process runs: the queues of the
	// tenants whose base directories exist on this machine (see TenantConfig.Queue).
	// Empty: the default queue only.
	Queues []string
	// WebhooksPrivate lets every webhook's address be on this machine or a private
	// network (a tenant's otherwise may not: webhook.url_private). For a service whose
	// tenants are all trusted, and for tests.
	WebhooksPrivate bool
	// WebhookBackoff is the wait after a delivery's first failed try, doubled after each
	// later one up to ten minutes (0: one second). See webhookdelivery.go.
	WebhookBackoff time.Duration
	// WebhookLinkLife is how long the approval link in a task.needs_person delivery
	// works (0: one hour). A delivery carries one only with PublicURL set.
	WebhookLinkLife time.Duration
	// PublicURL is where people reach this service ("https://sema.example.com"): the
	// base of the approval links it makes (empty: the scheme and host of the request
	// that makes one).
	PublicURL string
	// ScheduleMinInterval is the shortest interval a schedule may fire at (0: ten
	// seconds); a shorter one is refused (schedule.cron_invalid). See schedules.go.
	ScheduleMinInterval time.Duration
	// ScheduleCatchUp is what a working process does with a schedule's tick that is
	// more than a minute late (every process was down): "once" (the default, "") fires
	// it once, however many ticks were missed; "skip" fires none and waits for the next.
	ScheduleCatchUp string
}

// Server is one `sema serve` process.
type Server struct {
	cfg     Config
	b       backend
	log     *slog.Logger
	metrics *metrics
	mux     *http.ServeMux

	// running are the tasks this process runs now, to cancel at once on a cancel
	// request that reaches this process (others see the flag in the store).
	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	// wake wakes this process's event streams when it appends an event.
	wake *broadcaster
	// live passes the model's text as it streams to the event streams that ask for it.
	live *liveText
	// modes are the mode controls of the legs this process runs (taskmode.go).
	modes legModes
	// hooks sends the tenants' webhook deliveries (webhookdelivery.go); nil in a process
	// that runs no tasks.
	hooks *deliverer
	// events writes the legs' events (group commit).
	events *eventLog
	// stopWatch ends the watch for cancel requests (see watchCancels).
	stopWatch context.CancelFunc
	stopping  chan struct{}
	stopOnce  sync.Once
	// rec is a working process's heartbeat and rescuer of dead workers' legs.
	rec *recovery
	// console serves the web console's pages (console.go); linkRate limits the link
	// endpoints per address (links.go), signinRate the console's sign-in.
	console    http.Handler
	linkRate   rateLimit
	signinRate rateLimit
}

// New opens the service's store and migrates it. Start runs the workers; Handler serves
// the API.
func New(ctx context.Context, cfg Config) (*Server, error) {
	for _, f := range []struct {
		name string
		neg  bool
	}{
		{"Workers", cfg.Workers < 0}, {"RescueAfter", cfg.RescueAfter < 0},
		{"SessionLease", cfg.SessionLease < 0}, {"Poll", cfg.Poll < 0},
		{"Heartbeat", cfg.Heartbeat < 0}, {"DeadAfter", cfg.DeadAfter < 0},
		{"ModelWait", cfg.ModelWait < 0}, {"ModelBackoff", cfg.ModelBackoff < 0},
		{"ScheduleMinInterval", cfg.ScheduleMinInterval < 0},
	} {
		if f.neg {
			return nil, sema.Errorf(CodeConfigInvalid, "Config.%s cannot be negative; leave it zero for the default", f.name).With("field", f.name)
		}
	}
	if cfg.Workers == 0 {
		cfg.Workers = 16
	}
	if cfg.RescueAfter == 0 {
		cfg.RescueAfter = time.Minute
	}
	if cfg.Poll == 0 {
		cfg.Poll = 200 * time.Millisecond
	}
	cfg.Heartbeat = cmp.Or(cfg.Heartbeat, DefaultHeartbeat)
	cfg.DeadAfter = cmp.Or(cfg.DeadAfter, DefaultDeadAfter)
	cfg.ModelWait = cmp.Or(cfg.ModelWait, DefaultModelWait)
	cfg.ModelBackoff = cmp.Or(cfg.ModelBackoff, DefaultModelBackoff)
	cfg.ScheduleMinInterval = cmp.Or(cfg.ScheduleMinInterval, DefaultScheduleMinInterval)
	if err := checkCatchUp(cfg.ScheduleCatchUp); err != nil {
		return nil, err
	}
	if cfg.DeadAfter < 2*cfg.Heartbeat {
		// A live process that misses one beat (a pause, a slow store) would be taken for
		// dead and its legs run twice over.
		return nil, sema.Errorf(CodeConfigInvalid, "Config.DeadAfter (%s) must be at least twice Config.Heartbeat (%s)", cfg.DeadAfter, cfg.Heartbeat).With("field", "DeadAfter")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OpenProvider == nil {
		return nil, sema.Errorf(CodeStoreFailed, "the service needs a way to open model providers (Config.OpenProvider)")
	}
	b, err := openBackend(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, b: b, log: cfg.Logger, metrics: newMetrics(),
		running: map[string]context.CancelCauseFunc{}, wake: newBroadcaster(), live: newLiveText(),
		signinRate: rateLimit{burst: signinBurst, every: signinEvery},
		stopping:   make(chan struct{}),
	}
	if pg, ok := b.(*pgBackend); ok {
		pg.wake = s.wake.notify
	}
	s.events = newEventLog(s)
	s.metrics.reg.MustRegister(newTaskStates(s))
	if s.console, err = s.newConsole(ctx); err != nil {
		b.close()
		return nil, err
	}
	s.routes()
	return s, nil
}

func openBackend(ctx context.Context, cfg Config) (backend, error) {
	if cfg.Postgres != "" {
		b, err := openPostgres(ctx, cfg.Postgres)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	b, err := openSQLite(ctx, cfg.Home)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// txNotifier is a backend that tells other processes about appended events from inside
// the transaction that appends them: the word goes out as it commits, for no statement
// of its own.
type txNotifier interface {
	notifyIn(ctx context.Context, c conn, taskIDs []string) error
}

// heldCommitter is a backend that commits held writes, and the word to other processes,
// as one batch: statements known before any is sent need no transaction opened and
// closed around them, one round trip each.
type heldCommitter interface {
	commitHeld(ctx context.Context, taskIDs []string, hs []*heldWrites) error
}

// notifyIn tells other processes, in the transaction c, that the streams of tasks ids
// grew, when the backend can reach them.
func (s *Server) notifyIn(ctx context.Context, c conn, ids []string) error {
	if n, ok := s.b.(txNotifier); ok && len(ids) > 0 {
		return n.notifyIn(ctx, c, ids)
	}
	return nil
}

// Start starts the workers (unless Config.NoWorker): River's client fetches this
// process's share of the queued tasks until Shutdown.
func (s *Server) Start(ctx context.Context) error {
	if s.cfg.NoWorker {
		return s.b.startQueue(ctx, nil, queueConfig{})
	}
	w := river.NewWorkers()
	if err := river.AddWorkerSafely(w, &taskWorker{s: s}); err != nil {
		return err
	}
	queues := s.cfg.Queues
	if len(queues) == 0 {
		queues = []string{river.QueueDefault}
	}
	for _, q := range queues {
		if !validQueue(q) {
			return sema.Errorf(CodeTenantInvalid, "queue name %q must be 1-128 letters, digits, '-' or '_'", q)
		}
	}
	// Before taking jobs: a dead predecessor's legs on this machine are rescued at once,
	// and the heartbeat row exists before the first leg is recorded.
	s.rec = newRecovery(s)
	if err := s.rec.beat(ctx); err != nil {
		return err
	}
	if err := s.rec.rescueDead(ctx); err != nil {
		return err
	}
	s.rec.pruneSpend(ctx)
	if err := s.b.startQueue(ctx, w, queueConfig{
		workers: s.cfg.Workers, rescueAfter: s.cfg.RescueAfter, queues: queues, poll: s.cfg.Poll,
	}); err != nil {
		return err
	}
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	recDone, hooksDone, schedDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	s.stopWatch = func() { stop(); <-recDone; <-hooksDone; <-schedDone }
	s.hooks = newDeliverer(s)
	go func() { defer close(hooksDone); s.hooks.run(wctx) }()
	go func() { defer close(schedDone); s.runSchedules(wctx) }()
	go s.watchCancels(wctx)
	go s.rec.run(wctx, recDone)
	return nil
}

// Shutdown stops taking work: new requests are refused (503), running legs finish
// until ctx ends, and then they are cancelled and left queued for another process.
// Close releases the store afterwards.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stopping) })
	err := s.b.stopQueue(ctx, s.cancelLegs)
	return err
}

// cancelLegs ends the legs this process runs, for another process to go on with: their
// finished turns are in the store.
func (s *Server) cancelLegs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cancel := range s.running {
		cancel(errShutdown)
	}
}

// Close releases the store. Call it after Shutdown.
func (s *Server) Close() error {
	if s.stopWatch != nil {
		s.stopWatch()
	}
	s.events.close()
	return s.b.close()
}

// newID mints a random RFC 4122 version 4 UUID, as the stores mint their ids.
func newID() string { return session.NewID() }

func nowMS() int64 { return time.Now().UnixMilli() }
