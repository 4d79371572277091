package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/session"
)

// The checkpoint endpoints: the open questions and their one-shot decisions.

// listCheckpoints is GET /v1/checkpoints?status=open|answered|all (default open).
func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request, t *tenant) {
	ctx := r.Context()
	q := `SELECT c.id, c.task_id, c.session_id, c.decided_ms, t.result FROM sema_serve_checkpoints c
		JOIN sema_serve_tasks t ON t.id = c.task_id WHERE c.tenant = ?`
	switch st := r.URL.Query().Get("status"); st {
	case "", "open":
		q += ` AND c.decided_ms = 0`
	case "answered":
		q += ` AND c.decided_ms <> 0`
	case "all":
	default:
		writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "unknown status %q; use open, answered or all", st))
		return
	}
	limit, ok := intParam(w, r, "limit", 100, 1, 1000)
	if !ok {
		return
	}
	type row struct {
		id, task, sess, result string
		decided                int64
	}
	rs, err := s.b.db().query(ctx, q+` ORDER BY c.created_ms LIMIT ?`, t.name, limit)
	list, err := collect(rs, err, func(rs rows) (x row, err error) {
		return x, rs.Scan(&x.id, &x.task, &x.sess, &x.decided, &x.result)
	})
	if err != nil {
		s.internal(w, r, err)
		return
	}
	out := []client.Checkpoint{}
	for _, x := range list {
		cp, err := s.b.sessions().Checkpoint(ctx, x.id)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		status := "open"
		if x.decided != 0 || cp.Decision != nil {
			status = "answered"
		}
		out = append(out, client.Checkpoint{
			ID: cp.ID, TaskID: x.task, SessionID: x.sess, Tool: cp.Tool, Input: cp.Args, InputSHA256: cp.ArgsSHA256,
			Gate: string(cp.Gate), Message: questionOf(x.result, cp.ID), Status: status, CreatedAt: cp.CreatedAt,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"checkpoints": out})
}

// decide is POST /v1/checkpoints/{id}/decision: one-shot. The claim is one row-level
// atomic update (decided_ms from 0 to now), in the transaction that queues the task's
// resume; a second decision — through this process or any other — finds the row taken
// and is answered 409 checkpoint.already_claimed.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, t *tenant) {
	ctx := r.Context()
	var d client.Decision
	if !decode(w, r, &d) {
		return
	}
	answer := agent.Answer{CheckpointID: r.PathValue("id"), Reason: d.Message}
	if d.Budget != nil {
		answer.Budget = &agent.BudgetRaise{MaxTokensTotal: d.Budget.MaxTokensTotal, MaxBudgetUSD: d.Budget.MaxBudgetUSD}
	}
	switch d.Decision {
	case "allow":
		answer.Allow = true
		if len(d.Input) > 0 && string(d.Input) != "null" {
			var obj map[string]any
			if json.Unmarshal(d.Input, &obj) != nil {
				writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "input must be a JSON object: the call's edited arguments"))
				return
			}
			answer.UpdatedInput = d.Input
		}
	case "deny":
		if len(d.Input) > 0 {
			writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "a deny carries no input"))
			return
		}
	default:
		writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "decision must be allow or deny, not %q", d.Decision))
		return
	}
	if status, err := s.checkBudgetAnswer(ctx, t, answer); err != nil {
		s.metrics.decisions.WithLabelValues(fmt.Sprint(status)).Inc()
		s.refuse(w, r, status, err)
		return
	}
	data, err := json.Marshal(answer)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	var taskID, taskTrace string
	status := http.StatusInternalServerError
	err = s.b.tx(ctx, func(c conn, enqueue enqueueFunc) error {
		var decided int64
		err := queryRow(ctx, c, `SELECT c.task_id, c.decided_ms, COALESCE(t.trace, '') FROM sema_serve_checkpoints c LEFT JOIN sema_serve_tasks t ON t.id = c.task_id
			WHERE c.id = ? AND c.tenant = ?`, []any{answer.CheckpointID, t.name}, &taskID, &decided, &taskTrace)
		if errors.Is(err, errNoRow) {
			status = http.StatusNotFound
			return sema.Errorf(CodeNotFound, "no such checkpoint")
		}
		if err != nil {
			return err
		}
		if decided == 0 {
			if err := admitRun(ctx, c, t); err != nil {
				if sema.IsCode(err, CodeConcurrencyLimit) {
					status = http.StatusTooManyRequests // the checkpoint stays open: decide again later
				}
				return err
			}
		}
		n, err := c.exec(ctx, `UPDATE sema_serve_checkpoints SET decided_ms = ?, decision = ? WHERE id = ? AND tenant = ? AND decided_ms = 0`,
			nowMS(), string(data), answer.CheckpointID, t.name)
		if err != nil {
			return err
		}
		if n == 0 {
			status = http.StatusConflict
			return sema.Errorf(session.CodeAlreadyClaimed, "the checkpoint was answered already; a decision is one-shot")
		}
		n, err = c.exec(ctx, `UPDATE sema_serve_tasks SET status = ?, decision = ?, updated_ms = ? WHERE id = ? AND status = ? AND checkpoint_id = ?`,
			client.StatusQueued, string(data), nowMS(), taskID, client.StatusAwaitingApproval, answer.CheckpointID)
		if err != nil {
			return err
		}
		if n == 0 {
			status = http.StatusConflict
			return sema.Errorf(session.CodeAlreadyClaimed, "the task no longer waits at this checkpoint (it was cancelled or answered)")
		}
		return enqueue(taskID, t.queue)
	})
	if err != nil {
		s.metrics.decisions.WithLabelValues(fmt.Sprint(status)).Inc()
		s.refuse(w, r, status, err)
		return
	}
	linkTaskTrace(ctx, taskTrace, taskID)
	if answer.UpdatedInput != nil || answer.Budget != nil {
		// An edit is judged by the resumed leg, against the task's deny rules, before it
		// claims anything (a raise too, against the spending): wait for that verdict, so a
		// refused edit is answered as such.
		if status, err := s.verdict(ctx, answer.CheckpointID, string(data)); err != nil {
			s.metrics.decisions.WithLabelValues(fmt.Sprint(status)).Inc()
			s.refuse(w, r, status, err)
			return
		}
	}
	s.metrics.decisions.WithLabelValues(d.Decision).Inc()
	// Who answered which question, in the words an operator audits: the token, never its
	// secret.
	s.log.Info("checkpoint decided", "request_id", requestID(r), "checkpoint_id", answer.CheckpointID, "task_id", taskID,
		"tenant", t.name, "token_id", t.tokenID, "decision", d.Decision, "edited", answer.UpdatedInput != nil)
	task, err := s.task(ctx, t, taskID)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, task)
}

// questionOf is the question's sentence from the result of the leg that parked at
// checkpoint id (the store keeps the call, the result its wording); "" when the task has
// moved on.
func questionOf(result, id string) string {
	var r struct {
		Checkpoint struct {
			ID      string `json:"id"`
			Message string `json:"message"`
		} `json:"checkpoint"`
	}
	if json.Unmarshal([]byte(result), &r) != nil || r.Checkpoint.ID != id {
		return ""
	}
	return r.Checkpoint.Message
}

// refusedAnswer reports whether err is a resumed leg's refusal of its decision's edit,
// which the leg makes before it claims the question.
func refusedAnswer(err error) bool {
	return sema.IsCode(err, agent.CodeEditDenied) || sema.IsCode(err, agent.CodeAnswerInvalid) || sema.IsCode(err, agent.CodeBudgetRaiseInvalid)
}

// checkBudgetAnswer refuses, before anything is recorded, an answer the leg would refuse
// for its budget (agent.CheckBudgetAnswer: a budget question allowed without a raise
// above the spending, a raise for another question), and a raise above the tenant's
// policy bound per task, which the person answering may not lift. A checkpoint not the
// tenant's is left for the decision's transaction to answer 404.
func (s *Server) checkBudgetAnswer(ctx context.Context, t *tenant, a agent.Answer) (int, error) {
	var one int
	err := queryRow(ctx, s.b.db(), `SELECT 1 FROM sema_serve_checkpoints WHERE id = ? AND tenant = ?`, []any{a.CheckpointID, t.name}, &one)
	if errors.Is(err, errNoRow) {
		return 0, nil
	}
	if err != nil {
		return http.StatusInternalServerError, err
	}
	cp, err := s.b.sessions().Checkpoint(ctx, a.CheckpointID)
	if err != nil {
		return 0, nil // the decision's transaction answers for a checkpoint it cannot read
	}
	raise, err := agent.CheckBudgetAnswer(cp, a)
	if err != nil {
		return http.StatusBadRequest, err
	}
	if raise == nil {
		return 0, nil
	}
	p, err := s.tenantPolicy(ctx, t)
	if err != nil {
		return http.StatusInternalServerError, err
	}
	if p.MaxUSDPerTask > 0 && raise.MaxBudgetUSD > p.MaxUSDPerTask {
		return http.StatusBadRequest, sema.Errorf(CodePolicyBudget, "budget.max_budget_usd %g is above the tenant's bound of %g; ask for %g or less", raise.MaxBudgetUSD, p.MaxUSDPerTask, p.MaxUSDPerTask)
	}
	if p.MaxTokensPerTask > 0 && raise.MaxTokensTotal > p.MaxTokensPerTask {
		return http.StatusBadRequest, sema.Errorf(CodePolicyBudget, "budget.max_tokens_total %d is above the tenant's bound of %d; ask for %d or less", raise.MaxTokensTotal, p.MaxTokensPerTask, p.MaxTokensPerTask)
	}
	return 0, nil
}

// refusal is what a checkpoint's decision column holds once the leg refused the
// decision: the refusal and the decision it refused.
type refusal struct {
	Refused  client.Error    `json:"refused"`
	Decision json.RawMessage `json:"decision"`
}

// reopen puts a task whose decision the leg refused back at its question: the task
// waits for a decision again, and the checkpoint is open, holding the refusal for the
// request that made the decision.
func (s *Server) reopen(ctx context.Context, taskID, checkpointID string, cause error) error {
	return s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
		var decision string
		if err := queryRow(ctx, c, `SELECT decision FROM sema_serve_checkpoints WHERE id = ?`, []any{checkpointID}, &decision); err != nil {
			return err
		}
		data, err := json.Marshal(refusal{Refused: client.Error{Code: sema.CodeOf(cause), Message: sema.MessageOf(cause)}, Decision: json.RawMessage(decision)})
		if err != nil {
			return err
		}
		if _, err := c.exec(ctx, `UPDATE sema_serve_checkpoints SET decided_ms = 0, decision = ? WHERE id = ?`, string(data), checkpointID); err != nil {
			return err
		}
		_, err = c.exec(ctx, `UPDATE sema_serve_tasks SET status = ?, decision = '', updated_ms = ? WHERE id = ? AND checkpoint_id = ?`,
			client.StatusAwaitingApproval, nowMS(), taskID, checkpointID)
		return err
	})
}

// decisionWait bounds how long a decision with an edit waits for the leg's verdict; a
// leg that has not judged it by then (no worker free) is answered 202, and a refusal
// then reopens the question as above.
const decisionWait = 10 * time.Second

// verdict waits until the resumed leg claimed checkpoint id or the task ended (nil), or
// the leg refused decision (the refusal, with its status).
func (s *Server) verdict(ctx context.Context, id, decision string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, decisionWait)
	defer cancel()
	for {
		cp, err := s.b.sessions().Checkpoint(ctx, id)
		if err == nil && cp.Decision != nil {
			return 0, nil
		}
		var stored, status string
		err = queryRow(ctx, s.b.db(), `SELECT c.decision, t.status FROM sema_serve_checkpoints c JOIN sema_serve_tasks t ON t.id = c.task_id WHERE c.id = ?`,
			[]any{id}, &stored, &status)
		if err == nil && (client.Task{Status: status}).Terminal() {
			return 0, nil // cancelled meanwhile: the decision was taken, nothing judged it
		}
		var ref refusal
		if err == nil && json.Unmarshal([]byte(stored), &ref) == nil && ref.Refused.Code != "" && string(ref.Decision) == decision {
			status := http.StatusBadRequest
			if ref.Refused.Code == agent.CodeEditDenied {
				status = http.StatusForbidden
			}
			return status, sema.Errorf(ref.Refused.Code, "%s; the question is open again: decide it anew", ref.Refused.Message)
		}
		select {
		case <-ctx.Done():
			return 0, nil
		case <-time.After(s.cfg.Poll):
		}
	}
}
