package console

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sema-agent/sema/client"
)

// page is what every template gets.
type page struct {
	Page     string
	Title    string
	CSRF     string
	Error    string
	Notice   string
	SignedIn bool
	Groups   []group
	Modes    []string
	Form     submitForm
	Task     *taskView
	Question *question
	Link     *linkView
	// LinkURL is an approval link just made for the task's question.
	LinkURL string
}

type group struct {
	Key   string     `json:"key"`
	Name  string     `json:"name"`
	Tasks []taskItem `json:"tasks"`
}

// taskItem is a task as the home page lists it.
type taskItem struct {
	ID         string `json:"id"`
	Title      string `json:"title"`
	Status     string `json:"status"`
	StatusText string `json:"status_text"`
	Updated    string `json:"updated"`
	// Schedule names the schedule whose firing started the task; "" for one submitted.
	Schedule string `json:"schedule,omitempty"`
}

type taskView struct {
	taskItem
	Prompt       string
	CheckpointID string
	Cancellable  bool
	ResultText   string
}

type linkView struct {
	State     string
	StateText string
}

type submitForm struct {
	Prompt, Workspace, Mode string
}

// modes are the permission modes the submit form offers; the tenant's policy judges
// the word.
var modes = []string{"default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions"}

var statusText = map[string]string{
	client.StatusAwaitingApproval: "Needs you", client.StatusQueued: "Queued", client.StatusRunning: "Working",
	"completed": "Completed", "cancelled": "Cancelled", "error": "Failed",
	"max_turns": "Stopped: turn limit", "budget_exceeded": "Stopped: budget spent",
}

func statusOf(s string) string {
	if t, ok := statusText[s]; ok {
		return t
	}
	return s
}

// title is a task's prompt's first line, cut to fit a line of a phone.
func title(prompt string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return "(no prompt)"
	}
	if utf8.RuneCountInString(line) > 100 {
		r := []rune(line)
		line = string(r[:99]) + "…"
	}
	return line
}

func itemOf(t client.Task) taskItem {
	return taskItem{ID: t.TaskID, Title: title(t.Prompt), Status: t.Status, StatusText: statusOf(t.Status),
		Updated: t.UpdatedAt.UTC().Format("Jan 2 15:04 UTC"), Schedule: t.ScheduleID}
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t := c.pages[name]
	p.Page = name
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		c.log.Error("console page failed", "page", name, "error", err.Error())
		http.Error(w, "the page failed to render", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (c *Console) parse() error {
	base, err := template.New("").ParseFS(assets, "templates/layout.html", "templates/parts.html")
	if err != nil {
		return err
	}
	c.pages = map[string]*template.Template{}
	for _, name := range []string{"signin", "home", "task", "link", "error", "notfound"} {
		t, err := template.Must(base.Clone()).ParseFS(assets, "templates/"+name+".html")
		if err != nil {
			return err
		}
		c.pages[name] = t
	}
	c.pages["panel"] = base
	return nil
}

func apiCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 15*time.Second)
}

// groups reads the tenant's tasks as the home page shows them: every task that waits
// or works, and the newest of the rest.
func (c *Console) groups(r *http.Request, s *session) ([]group, error) {
	ctx, cancel := apiCtx(r)
	defer cancel()
	api := c.api(r, s.Token)
	live, err := api.Tasks(ctx, client.TaskFilter{Statuses: []string{client.StatusAwaitingApproval, client.StatusQueued, client.StatusRunning}, Limit: 500})
	if err != nil {
		return nil, err
	}
	ended, err := api.Tasks(ctx, client.TaskFilter{Statuses: []string{"completed", "max_turns", "budget_exceeded", "error", "cancelled"}, Limit: 50})
	if err != nil {
		return nil, err
	}
	gs := []group{{Key: "needs", Name: "Needs you", Tasks: []taskItem{}}, {Key: "working", Name: "Working", Tasks: []taskItem{}}, {Key: "done", Name: "Done", Tasks: []taskItem{}}}
	for _, t := range live.Tasks {
		i := 1
		if t.Status == client.StatusAwaitingApproval {
			i = 0
		}
		gs[i].Tasks = append(gs[i].Tasks, itemOf(t))
	}
	for _, t := range ended.Tasks {
		gs[2].Tasks = append(gs[2].Tasks, itemOf(t))
	}
	return gs, nil
}

func (c *Console) home(w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Tasks", CSRF: s.CSRF, SignedIn: true, Modes: modes, Form: submitForm{Mode: "default"}}
	gs, err := c.groups(r, s)
	if err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	p.Groups = gs
	c.render(w, r, http.StatusOK, "home", p)
}

// apiFailed answers an API refusal of a signed-in page: a token that stopped working
// ends the session.
func (c *Console) apiFailed(w http.ResponseWriter, r *http.Request, s *session, err error) {
	if codeOf(err) == "auth.unauthorized" {
		c.setCookie(w, r, sessionCookie, "", -1)
		http.Redirect(w, r, "/signin", http.StatusSeeOther)
		return
	}
	status := http.StatusBadGateway
	if codeOf(err) == "request.not_found" {
		status = http.StatusNotFound
	}
	c.render(w, r, status, "error", page{Title: "Error", CSRF: s.CSRF, SignedIn: true, Error: errorText(err)})
}

// taskGroups is the home page's poll: the groups as JSON.
func (c *Console) taskGroups(w http.ResponseWriter, r *http.Request, s *session) {
	gs, err := c.groups(r, s)
	if err != nil {
		writeJSON(w, statusOfErr(err), client.Error{Code: codeOf(err), Message: errorText(err)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"groups": gs})
}

func statusOfErr(err error) int {
	if e, ok := err.(*client.Error); ok && e.Status != 0 {
		return e.Status
	}
	return http.StatusBadGateway
}

// taskStatus is the task page's poll.
func (c *Console) taskStatus(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := apiCtx(r)
	defer cancel()
	t, err := c.api(r, s.Token).Task(ctx, r.PathValue("id"))
	if err != nil {
		writeJSON(w, statusOfErr(err), client.Error{Code: codeOf(err), Message: errorText(err)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": t.Status, "status_text": statusOf(t.Status), "checkpoint_id": t.CheckpointID})
}

func (c *Console) submit(w http.ResponseWriter, r *http.Request, s *session) {
	f := submitForm{Prompt: r.PostFormValue("prompt"), Workspace: strings.TrimSpace(r.PostFormValue("workspace")), Mode: r.PostFormValue("mode")}
	spec := client.TaskSpec{Prompt: f.Prompt, Cwd: f.Workspace}
	if f.Mode != "default" {
		spec.PermissionMode = f.Mode
	}
	ctx, cancel := apiCtx(r)
	defer cancel()
	t, err := c.api(r, s.Token).SubmitTask(ctx, spec)
	if err != nil {
		p := page{Title: "Tasks", CSRF: s.CSRF, SignedIn: true, Modes: modes, Form: f, Error: "The task was not submitted: " + errorText(err)}
		p.Groups, _ = c.groups(r, s)
		c.render(w, r, http.StatusBadRequest, "home", p)
		return
	}
	http.Redirect(w, r, "/tasks/"+url.PathEscape(t.TaskID), http.StatusSeeOther)
}

// taskPageData reads a task and, when it waits, its question.
func (c *Console) taskPageData(r *http.Request, s *session) (page, error) {
	ctx, cancel := apiCtx(r)
	defer cancel()
	api := c.api(r, s.Token)
	t, err := api.Task(ctx, r.PathValue("id"))
	if err != nil {
		return page{}, err
	}
	v := &taskView{taskItem: itemOf(*t), Prompt: t.Prompt, CheckpointID: t.CheckpointID, Cancellable: !t.Terminal(), ResultText: resultText(t)}
	p := page{Title: v.Title, CSRF: s.CSRF, SignedIn: true, Task: v}
	if t.Status == client.StatusAwaitingApproval && t.CheckpointID != "" {
		cps, err := api.Checkpoints(ctx, "open")
		if err != nil {
			return page{}, err
		}
		for _, cp := range cps {
			if cp.ID == t.CheckpointID {
				q := questionOf(cp.Tool, cp.Input, cp.Message, cp.Gate)
				q.CheckpointID, q.CSRF, q.Action = cp.ID, s.CSRF, "/tasks/"+url.PathEscape(t.TaskID)+"/decision"
				p.Question = q
			}
		}
	}
	switch r.URL.Query().Get("decided") {
	case "allow":
		p.Notice = "Approved: the task goes on."
	case "deny":
		p.Notice = "Denied: the model is told."
	}
	return p, nil
}

// resultText is what a person reads of an ended task's result: its answer, or its
// error.
func resultText(t *client.Task) string {
	if !t.Terminal() || len(t.Result) == 0 {
		return ""
	}
	var res struct {
		Result string `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(t.Result, &res)
	if res.Error != nil && res.Error.Message != "" {
		return res.Error.Message
	}
	return res.Result
}

func (c *Console) taskPage(w http.ResponseWriter, r *http.Request, s *session) {
	p, err := c.taskPageData(r, s)
	if err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "task", p)
}

// panel is the task page's status, question and buttons alone, for its script to
// swap in when the task's state changes.
func (c *Console) panel(w http.ResponseWriter, r *http.Request, s *session) {
	p, err := c.taskPageData(r, s)
	if err != nil {
		w.WriteHeader(statusOfErr(err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := c.pages["panel"].ExecuteTemplate(w, "panel", p); err != nil {
		c.log.Error("console panel failed", "error", err.Error())
	}
}

func (c *Console) decide(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	d := client.Decision{Decision: r.PostFormValue("decision"), Message: strings.TrimSpace(r.PostFormValue("message"))}
	if kind, v := r.PostFormValue("budget_kind"), strings.TrimSpace(r.PostFormValue("budget")); kind != "" && d.Decision == "allow" {
		// A budget question: the new limit goes with the allow; the API judges it.
		raise, ok := budgetRaise(kind, v)
		if !ok {
			p, perr := c.taskPageData(r, s)
			if perr != nil {
				c.apiFailed(w, r, s, perr)
				return
			}
			p.Error = "Give the new limit as a number above what is spent, then Approve."
			c.render(w, r, http.StatusBadRequest, "task", p)
			return
		}
		d.Budget = raise
	}
	ctx, cancel := apiCtx(r)
	defer cancel()
	_, err := c.api(r, s.Token).Decide(ctx, r.PostFormValue("checkpoint"), d)
	if err == nil {
		http.Redirect(w, r, "/tasks/"+url.PathEscape(id)+"?decided="+url.QueryEscape(d.Decision), http.StatusSeeOther)
		return
	}
	p, perr := c.taskPageData(r, s)
	if perr != nil {
		c.apiFailed(w, r, s, perr)
		return
	}
	status := statusOfErr(err)
	if codeOf(err) == "checkpoint.already_claimed" {
		p.Error = "This question was already decided; your answer was not used."
	} else {
		p.Error = "The decision was not taken: " + errorText(err)
	}
	c.render(w, r, status, "task", p)
}

// makeLink makes an approval link for the task's open question and shows it, for the
// person to send to whoever decides (a phone, a colleague without a token).
func (c *Console) makeLink(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := apiCtx(r)
	defer cancel()
	l, err := c.api(r, s.Token).CreateLink(ctx, r.PostFormValue("checkpoint"), 0)
	p, perr := c.taskPageData(r, s)
	if perr != nil {
		c.apiFailed(w, r, s, perr)
		return
	}
	if err != nil {
		p.Error = "No link was made: " + errorText(err)
		c.render(w, r, statusOfErr(err), "task", p)
		return
	}
	p.LinkURL = l.URL
	c.render(w, r, http.StatusOK, "task", p)
}

func (c *Console) cancel(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	ctx, cancel := apiCtx(r)
	defer cancel()
	if _, err := c.api(r, s.Token).Cancel(ctx, id); err != nil {
		p, perr := c.taskPageData(r, s)
		if perr != nil {
			c.apiFailed(w, r, s, perr)
			return
		}
		p.Error = "The task was not cancelled: " + errorText(err)
		c.render(w, r, statusOfErr(err), "task", p)
		return
	}
	http.Redirect(w, r, "/tasks/"+url.PathEscape(id), http.StatusSeeOther)
}

// events passes the task's event stream through with the session's token; the
// browser's EventSource resumes after a dropped connection with Last-Event-ID, which
// goes through to the API.
func (c *Console) events(w http.ResponseWriter, r *http.Request, s *session) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, "http://sema.console/v1/tasks/"+url.PathEscape(r.PathValue("id"))+"/events", nil)
	if err != nil {
		http.Error(w, "bad task id", http.StatusBadRequest)
		return
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		req.Header.Set("Last-Event-ID", v)
	}
	resp, err := inproc{api: c.cfg.API, from: r}.RoundTrip(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, io.LimitReader(resp.Body, 1<<20))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			// Each write has its own deadline: a stream outlives the server's write
			// timeout, and the API's keep-alives come every 15 s.
			rc.SetWriteDeadline(time.Now().Add(time.Minute))
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

func (c *Console) linkPage(w http.ResponseWriter, r *http.Request) {
	c.showLink(w, r, http.StatusOK, "", "")
}

// showLink renders a link's page: its question and buttons while open, else what
// became of it.
func (c *Console) showLink(w http.ResponseWriter, r *http.Request, status int, notice, errText string) {
	ctx, cancel := apiCtx(r)
	defer cancel()
	info, err := c.api(r, "").OpenLink(ctx, r.PathValue("token"))
	p := page{Title: "A question from sema", Notice: notice, Error: errText}
	if err != nil {
		st := statusOfErr(err)
		switch codeOf(err) {
		case "request.not_found":
			p.Error = "This link is not valid. Check that it was copied whole."
		case "link.rate_limited":
			p.Error = "Too many tries from this address; wait a few seconds and reload."
		default:
			p.Error = errorText(err)
		}
		c.render(w, r, st, "link", p)
		return
	}
	if notice == "" {
		// Right after its own decision the page says what was decided, not that the
		// link is used.
		p.Link = &linkView{State: info.State, StateText: linkStateText(info.State)}
	}
	if info.State == client.LinkOpen {
		q := questionOf(info.Tool, info.Input, info.Message, info.Gate)
		q.CSRF = c.anonCSRF(w, r)
		p.Question = q
	}
	c.render(w, r, status, "link", p)
}

func linkStateText(state string) string {
	switch state {
	case client.LinkUsed:
		return "This link was already used: the question is decided."
	case client.LinkExpired:
		return "This link has expired. Ask for a new one."
	case client.LinkRevoked:
		return "This question was already decided another way; the link does nothing now."
	}
	return "This question waits for your decision."
}

func (c *Console) linkDecide(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !anonCSRFOK(r) {
		c.showLink(w, r, http.StatusForbidden, "", "The form was stale; nothing was decided. Decide again.")
		return
	}
	d := client.LinkDecision{Decision: r.PostFormValue("decision"), Message: strings.TrimSpace(r.PostFormValue("message"))}
	ctx, cancel := apiCtx(r)
	defer cancel()
	if _, err := c.api(r, "").DecideLink(ctx, r.PathValue("token"), d); err != nil {
		msg := ""
		switch codeOf(err) {
		case "link.used", "link.expired", "link.revoked":
			// The page says what became of the link.
		default:
			msg = "Nothing was decided: " + errorText(err)
		}
		c.showLink(w, r, statusOfErr(err), "", msg)
		return
	}
	notice := "Approved: the task goes on."
	if d.Decision == "deny" {
		notice = "Denied: the model is told."
	}
	c.showLink(w, r, http.StatusOK, notice, "")
}

// budgetRaise reads the new limit a person typed for a budget question of kind tokens or
// usd; false when it is not a positive number.
func budgetRaise(kind, v string) (*client.BudgetRaise, bool) {
	v = strings.TrimPrefix(strings.ReplaceAll(v, ",", ""), "$")
	if kind == "usd" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return nil, false
		}
		return &client.BudgetRaise{MaxBudgetUSD: f}, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return nil, false
	}
	return &client.BudgetRaise{MaxTokensTotal: n}, true
}
