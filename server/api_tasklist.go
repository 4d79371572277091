package server

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
)

// taskStatuses are the words GET /v1/tasks?status= takes: the service's own and the
// result statuses a leg ends with.
var taskStatuses = []string{
	client.StatusQueued, client.StatusRunning, client.StatusAwaitingApproval,
	"completed", "max_turns", "budget_exceeded", "error", "cancelled",
}

// listTasks is GET /v1/tasks?status=S1,S2&limit=N&before=CURSOR: the tenant's tasks,
// newest first, a page at a time. The cursor is the last task of the page (its
// creation time and id, opaque to the caller), so a page is stable while new tasks
// arrive in front of it.
func (s *Server) listTasks(w http.ResponseWriter, r *http.Request, t *tenant) {
	ctx := r.Context()
	q := `SELECT id, session_id, status, checkpoint_id, result, created_ms, updated_ms, spec, schedule_id
		FROM sema_serve_tasks WHERE tenant = ?`
	args := []any{t.name}
	if v := r.URL.Query().Get("status"); v != "" {
		var marks []string
		for _, st := range strings.Split(v, ",") {
			if !slices.Contains(taskStatuses, st) {
				writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "unknown status %q; use a comma-separated list of %s", st, strings.Join(taskStatuses, ", ")).With("field", "status"))
				return
			}
			marks = append(marks, "?")
			args = append(args, st)
		}
		q += ` AND status IN (` + strings.Join(marks, ", ") + `)`
	}
	limit, ok := intParam(w, r, "limit", 50, 1, 500)
	if !ok {
		return
	}
	if v := r.URL.Query().Get("before"); v != "" {
		ms, id, ok := parseTaskCursor(v)
		if !ok {
			writeErr(w, r, http.StatusBadRequest, sema.Errorf(CodeBadRequest, "before must be the next cursor of an earlier page, unchanged").With("field", "before"))
			return
		}
		q += ` AND (created_ms < ? OR (created_ms = ? AND id < ?))`
		args = append(args, ms, ms, id)
	}
	// One row more than the page says whether there is a next one.
	args = append(args, limit+1)
	rs, err := s.b.db().query(ctx, q+` ORDER BY created_ms DESC, id DESC LIMIT ?`, args...)
	list, err := collect(rs, err, func(rs rows) (task client.Task, err error) {
		var result, spec string
		var created, updated int64
		if err := rs.Scan(&task.TaskID, &task.SessionID, &task.Status, &task.CheckpointID, &result, &created, &updated, &spec, &task.ScheduleID); err != nil {
			return task, err
		}
		fillTask(&task, result, spec, created, updated)
		return task, nil
	})
	if err != nil {
		s.internal(w, r, err)
		return
	}
	out := client.TaskList{Tasks: list}
	if len(list) > limit {
		out.Tasks = list[:limit]
		last := out.Tasks[limit-1]
		out.Next = taskCursor(last.CreatedAt.UnixMilli(), last.TaskID)
	}
	writeJSON(w, http.StatusOK, out)
}

// fillTask completes a task read from its row: the question only while it waits on
// it, the result when a leg ended, the prompt from the stored spec.
func fillTask(task *client.Task, result, spec string, created, updated int64) {
	if task.Status != client.StatusAwaitingApproval {
		task.CheckpointID = ""
	}
	if result != "" {
		task.Result = json.RawMessage(result)
	}
	var sp storedSpec
	if json.Unmarshal([]byte(spec), &sp) == nil {
		task.Prompt = sp.Prompt
	}
	task.CreatedAt, task.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
}

func taskCursor(ms int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(ms, 10) + ":" + id))
}

func parseTaskCursor(c string) (int64, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", false
	}
	msText, id, ok := strings.Cut(string(b), ":")
	ms, err := strconv.ParseInt(msText, 10, 64)
	if !ok || err != nil || id == "" {
		return 0, "", false
	}
	return ms, id, true
}
