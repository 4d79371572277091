package server

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/settings"
	"github.com/sema-agent/sema/worktree"
)

// legStart is what a leg reads as it starts: its tenant's managed settings, policy (the
// stored JSON; empty when none) and daily token budget (0 when none), and the task's
// last stored event, which the leg's own events follow.
type legStart struct {
	settings []settings.File
	policy   string
	perDay   int64
	lastSeq  int64
}

// qLegStart reads a leg's start in one statement, where four were four round trips on
// Postgres. Each is read as it was on its own: a missing row is NULL. Nothing writes the
// task's events between this read and the leg's first event but the leg itself (another
// attempt of the task stops at the session's lease before it emits any).
const qLegStart = `SELECT
	(SELECT data FROM sema_serve_tenant_settings WHERE tenant = ?),
	(SELECT policy FROM sema_serve_policies WHERE tenant = ?),
	(SELECT tokens_per_day FROM sema_serve_tenants WHERE name = ?),
	(SELECT COALESCE(MAX(seq), 0) FROM sema_serve_events WHERE task_id = ?)`

// readLegStart reads what task t's leg starts with. A store failure is returned as it is
// (the leg is tried again); settings that no longer parse are their settings code.
func (s *Server) readLegStart(ctx context.Context, t *taskRow) (*legStart, error) {
	var data, policy sql.NullString
	var perDay, lastSeq sql.NullInt64
	if err := queryRow(ctx, s.b.db(), qLegStart, []any{t.tenant, t.tenant, t.tenant, t.id}, &data, &policy, &perDay, &lastSeq); err != nil {
		return nil, err
	}
	files, err := parseTenantSettings(t.tenant, []byte(data.String))
	if err != nil {
		return nil, err
	}
	return &legStart{settings: files, policy: policy.String, perDay: perDay.Int64, lastSeq: lastSeq.Int64}, nil
}

// legPlan is what a leg runs with: its spec and runner, the answer it resumes with (if
// any), the tenant's spend it counts against, and the calls already announced on the
// task's stream by an earlier attempt.
type legPlan struct {
	spec      agent.TaskSpec
	runner    *agent.Runner
	answer    *agent.Answer
	spend     *legSpend
	announced map[string]bool
}

// planLeg readies t's next leg and marks the task running. A nil plan means the leg does
// not run: the error is then the job's answer — nil or finish's when the task ended
// here (a refused spec, policy or decision), the store's when River should try again.
func (s *Server) planLeg(ctx context.Context, t *taskRow, legs *legStream) (*legPlan, error) {
	start, err := s.readLegStart(ctx, t)
	if err != nil && sema.CodeOf(err) == "" {
		return nil, err // the store is down for now; River tries again
	}
	if err != nil {
		return nil, s.finish(ctx, t, errorResult(t.sessionID, err), nil)
	}
	if err := rootsUnmoved(t.spec.TaskSpec); err != nil {
		return nil, s.finish(ctx, t, errorResult(t.sessionID, err), nil)
	}
	spec, runner, err := s.prepare(t, legs, start.settings)
	if err != nil {
		return nil, s.finish(ctx, t, errorResult(t.sessionID, err), nil)
	}
	var answer *agent.Answer
	if t.decision != "" {
		answer = new(agent.Answer)
		if err := json.Unmarshal([]byte(t.decision), answer); err != nil {
			return nil, s.finish(ctx, t, errorResult(t.sessionID, err), nil)
		}
		s.observeApprovalWait(ctx, answer.CheckpointID)
	}
	beganNow, err := s.place(ctx, t, &spec, answer != nil)
	if err != nil {
		return nil, err
	}
	spend, err := s.applyPolicy(ctx, t, start, &spec)
	if err != nil {
		if sema.CodeOf(err) == "" {
			return nil, err // the store is down for now; River tries again
		}
		return nil, s.finish(ctx, t, errorResult(t.sessionID, err), nil)
	}
	spend.legs = legs
	if err := s.markRunning(ctx, t, beganNow); err != nil {
		return nil, err
	}
	legs.seq = start.lastSeq
	p := &legPlan{spec: spec, runner: runner, answer: answer, spend: spend, announced: map[string]bool{}}
	if legs.seq > 0 {
		if p.announced, err = s.announcedCalls(ctx, t.id); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// rootsUnmoved refuses a leg whose roots no longer resolve to themselves. The task's
// cwd and added directories were checked inside the tenant's base when it was submitted,
// and stored as they resolved then; every later leg — after a decision, a crash, in the
// queue — resolves them again. Were a part of one replaced by a link since (a command
// of the task can do that inside its root), the link's target, anywhere, would be the
// leg's root; a path that still resolves to itself is still where it was checked.
func rootsUnmoved(spec client.TaskSpec) error {
	check := func(field, p string) error {
		if p == "" {
			return nil
		}
		if real, err := filepath.EvalSymlinks(p); err != nil || real != p {
			return sema.Errorf(CodeRootMoved, "%s no longer resolves to the directory the task was submitted with (a link replaced part of it, or it is gone); the leg does not start", field).With("field", field)
		}
		return nil
	}
	if err := check("cwd", spec.Cwd); err != nil {
		return err
	}
	for j, dirs := range [][]string{spec.AddDirs, spec.AddReadDirs} {
		for i, d := range dirs {
			if err := check(fmt.Sprintf("%s[%d]", []string{"add_dirs", "add_read_dirs"}[j], i), d); err != nil {
				return err
			}
		}
	}
	return nil
}

// prepare turns a stored task into the runner's spec and a runner for its model, whose
// calls wait out a model outage with notices in the leg's stream, under the server's
// managed settings and its tenant's (tenantFiles).
func (s *Server) prepare(t *taskRow, legs *legStream, tenantFiles []settings.File) (agent.TaskSpec, *agent.Runner, error) {
	if !s.operatorModel(t.spec.Model) {
		// Queued under another process's models: still only the operator's are opened.
		return agent.TaskSpec{}, nil, sema.Errorf(CodePolicyModel, "the model %q is not one of the service's models", t.spec.Model)
	}
	provider, modelName, err := s.cfg.OpenProvider(t.spec.Model)
	if err != nil {
		return agent.TaskSpec{}, nil, err
	}
	onAsk := agent.OnAskPark
	if t.spec.OnAsk == "deny" {
		onAsk = agent.OnAskDeny
	}
	spec := agent.TaskSpec{
		Prompt:                    t.spec.Prompt,
		Root:                      t.spec.Cwd,
		Model:                     modelName,
		PermissionMode:            permission.Mode(t.spec.PermissionMode),
		AllowedTools:              t.spec.AllowedTools,
		DisallowedTools:           t.spec.DisallowedTools,
		AdditionalDirectories:     t.spec.AddDirs,
		AdditionalReadDirectories: t.spec.AddReadDirs,
		MaxTurns:                  t.spec.MaxTurns,
		MaxBudgetUSD:              t.spec.MaxBudgetUSD,
		OnAsk:                     onAsk,
		Worktree:                  worktreeRef(t.spec.TaskSpec),
	}
	store, err := s.newTurnStore(legs)
	if err != nil {
		return agent.TaskSpec{}, nil, err
	}
	deps := agent.Deps{
		Provider: s.patient(provider, legs), Prices: s.cfg.Prices, Store: store, History: s.b.history(),
		SessionLease: s.cfg.SessionLease,
		Settings:     &agent.SettingsOptions{Managed: s.cfg.ManagedSettings, Tenant: tenantFiles},
	}
	if d, ok := s.b.(interface{ stateDir() string }); ok {
		deps.StateDir = d.stateDir()
	}
	return spec, agent.New(deps), nil
}

// markRunning marks the task running as its leg starts; beganNow also records where
// in the session its first leg began (t.headAtStart), in the same statement.
func (s *Server) markRunning(ctx context.Context, t *taskRow, beganNow bool) error {
	if beganNow {
		_, err := s.b.db().exec(ctx, `UPDATE sema_serve_tasks SET status = ?, updated_ms = ?, began = 1, head_at_start = ? WHERE id = ? AND status IN (?, ?)`,
			client.StatusRunning, nowMS(), t.headAtStart, t.id, client.StatusQueued, client.StatusRunning)
		return err
	}
	_, err := s.b.db().exec(ctx, `UPDATE sema_serve_tasks SET status = ?, updated_ms = ? WHERE id = ? AND status IN (?, ?)`,
		client.StatusRunning, nowMS(), t.id, client.StatusQueued, client.StatusRunning)
	return err
}

// place says where in its session the task's leg starts: a new session, a resume with
// the prompt, a fork, the resume of a decision, or — when an earlier attempt already
// recorded the prompt — a continuation without it. It reports whether this is the
// task's first leg (beganNow): its start (the session's head now) is then recorded as
// the task is marked running, before the leg writes anything.
func (s *Server) place(ctx context.Context, t *taskRow, spec *agent.TaskSpec, answering bool) (beganNow bool, err error) {
	if t.kind == kindFork && t.sessionID == "" {
		spec.Resume = &agent.Resume{SessionID: t.spec.Resume, Fork: true, At: t.spec.ForkAt}
		return false, nil
	}
	exists, head, err := s.sessionHead(ctx, t.sessionID)
	if err != nil {
		return false, err
	}
	if !t.began {
		t.began, t.headAtStart, beganNow = true, head, true
	}
	switch {
	case answering:
		spec.Prompt = ""
		spec.Resume = &agent.Resume{SessionID: t.sessionID}
	case !exists:
		spec.SessionID = t.sessionID
	case head == t.headAtStart:
		spec.Resume = &agent.Resume{SessionID: t.sessionID}
	default:
		spec.Prompt = ""
		spec.Resume = &agent.Resume{SessionID: t.sessionID, Continue: true}
	}
	if spec.Resume != nil {
		spec.Resume.Wait = false
		// A resumed session keeps the mode its last leg recorded unless the task names one.
	}
	return beganNow, nil
}

func (s *Server) sessionHead(ctx context.Context, id string) (bool, string, error) {
	if id == "" {
		return false, "", nil
	}
	sess, err := s.b.sessions().Get(ctx, id)
	if sema.IsCode(err, session.CodeNotFound) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	return true, sess.Head, nil
}

// adoptFork records the session a fork task's leg created: the task runs in it from now
// on, and the tenant owns it.
func (s *Server) adoptFork(ctx context.Context, t *taskRow, sessionID string) error {
	exists, head, err := s.sessionHead(ctx, sessionID)
	if err != nil || !exists {
		return err
	}
	err = s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
		if _, err := c.exec(ctx, `UPDATE sema_serve_tasks SET session_id = ?, began = 1, head_at_start = ? WHERE id = ?`, sessionID, head, t.id); err != nil {
			return err
		}
		_, err := c.exec(ctx, `INSERT INTO sema_serve_sessions (id, tenant, created_ms) VALUES (?, ?, ?)`, sessionID, t.tenant, nowMS())
		return err
	})
	if err == nil {
		t.sessionID = sessionID
	}
	return err
}

func (s *Server) lastSeq(ctx context.Context, id string) (int64, error) {
	var n int64
	err := queryRow(ctx, s.b.db(), `SELECT COALESCE(MAX(seq), 0) FROM sema_serve_events WHERE task_id = ?`, []any{id}, &n)
	return n, err
}

// worktreeRef is the manifest's word on the worktree a task runs in: its root is
// .sema/worktrees/NAME of the repository (check made it so).
func worktreeRef(spec client.TaskSpec) *agent.WorktreeRef {
	if spec.Worktree == "" {
		return nil
	}
	repo := filepath.Dir(filepath.Dir(filepath.Dir(spec.Cwd)))
	return &agent.WorktreeRef{Name: spec.Worktree, Branch: worktree.BranchPrefix + spec.Worktree, Repo: repo}
}
