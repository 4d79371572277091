package tui

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/session"
)

// Sessions is what a back-end offers, beyond Backend, to move between sessions: the
// directory's sessions to pick from, continuing one of them, and starting afresh. The
// screen asks for it with a type assertion, so a back-end without it (a service client
// that cannot list) still drives the screen; /resume, /rewind and /clear then say so.
type Sessions interface {
	// List returns the sessions of the back-end's directory, newest first.
	List(ctx context.Context) ([]SessionSummary, error)
	// Switch makes the next prompt continue session id and returns its recent
	// conversation to show.
	Switch(ctx context.Context, id string) (SessionView, error)
	// Clear makes the next prompt start a new session; the current one stays stored.
	Clear()
	// Turns lists the current session's turns with the files each changed.
	Turns(ctx context.Context) ([]TurnSummary, error)
	// Rewind rewinds the current session (agent.Runner.Rewind; the session is filled
	// in); the ledger names the files relative to the session's root.
	Rewind(ctx context.Context, spec agent.RewindSpec) (*agent.RewindResult, error)
}

// SessionSummary is one line of the session picker.
type SessionSummary struct {
	// ID names the session (what sema --resume takes).
	ID string
	// Title is the session's first prompt, as the runner records it.
	Title string
	// Mode is the permission mode its newest leg ran in.
	Mode string
	// UpdatedAt is its last activity.
	UpdatedAt time.Time
}

// SessionView is a session as the screen shows it after a switch.
type SessionView struct {
	SessionSummary
	// Turns is the number of its newest turn.
	Turns int
	// Recent are its last messages, oldest first.
	Recent []Said
}

// Said is one message of a conversation.
type Said struct {
	// Role is "user" or "assistant".
	Role string
	// Text is the message's text (tool calls and results left out).
	Text string
}

// TurnSummary is one line of the rewind picker.
type TurnSummary struct {
	// N numbers the turn from 1 across the session's legs (agent.RewindSpec.ToTurn).
	N int
	// Prompt is the prompt that led to the turn, when it was that prompt's first.
	Prompt string
	// Said is the first of what the model said, or the calls it made.
	Said string
	// Files are the files changed in the turn, relative to the session's root.
	Files []string
}

// codeNoSession refuses what needs a session before the first prompt started one.
const codeNoSession = "tui.no_session"

// recentSaid is how many messages a switch shows of the session it continues.
const recentSaid = 6

var _ Sessions = (*Local)(nil)

// WithStores gives Local the stores its runner writes (the session store, which must
// offer session.Admin to list, and the file history), for Sessions. It returns l.
func (l *Local) WithStores(store session.Store, hist history.Store) *Local {
	l.store, l.hist = store, hist
	return l
}

// List implements Sessions: the root sessions of the task root, as `sema sessions list`.
func (l *Local) List(ctx context.Context) ([]SessionSummary, error) {
	admin, err := session.AsAdmin(l.store)
	if err != nil {
		return nil, err
	}
	root, err := l.root(ctx)
	if err != nil {
		return nil, err
	}
	all, err := admin.List(ctx, session.Filter{Root: root, RootsOnly: true, Limit: 50})
	if err != nil {
		return nil, err
	}
	out := make([]SessionSummary, 0, len(all))
	for _, s := range all {
		out = append(out, summaryOf(s))
	}
	return out, nil
}

func summaryOf(s session.Session) SessionSummary {
	mode := s.EffectiveMode
	if mode == "" {
		mode = s.Mode
	}
	return SessionSummary{ID: s.ID, Title: s.Title, Mode: mode, UpdatedAt: s.UpdatedAt}
}

// root is the canonical task root, the key sessions are stored under.
func (l *Local) root(ctx context.Context) (string, error) {
	abs, err := filepath.Abs(l.base.Root)
	if err != nil {
		return "", err
	}
	c, ok, err := fence.Canonicalize(ctx, env.NewHost(), abs)
	if err != nil || !ok {
		return "", sema.Errorf("config.root_invalid", "the directory %s does not resolve; start sema in a directory that exists", l.base.Root)
	}
	return c, nil
}

// Switch implements Sessions. A running leg is not interrupted: the screen switches only
// between legs.
func (l *Local) Switch(ctx context.Context, id string) (SessionView, error) {
	if l.store == nil {
		return SessionView{}, sema.Errorf(session.CodeAdminUnsupported, "this back-end was given no session store to switch in")
	}
	s, err := l.store.Get(ctx, id)
	if err != nil {
		return SessionView{}, err
	}
	chain, err := l.store.Transcript(ctx, id, "")
	if err != nil {
		return SessionView{}, err
	}
	view := SessionView{SessionSummary: summaryOf(s)}
	for _, t := range readChain(chain) {
		view.Turns = max(view.Turns, t.turn)
		if t.text != "" {
			view.Recent = append(view.Recent, Said{Role: t.role, Text: t.text})
		}
	}
	if n := len(view.Recent); n > recentSaid {
		view.Recent = view.Recent[n-recentSaid:]
	}
	l.mu.Lock()
	l.session = id
	l.legs = max(l.legs, 1) // the next leg continues id, not the command line's first spec
	l.mu.Unlock()
	return view, nil
}

// Clear implements Sessions: the next leg starts a new session as a first leg with no
// --resume does; later legs continue that one.
func (l *Local) Clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.session = ""
	l.base.Resume = nil
}

// current is the session the legs continue, refused before there is one.
func (l *Local) current() (string, error) {
	l.mu.Lock()
	id := l.session
	l.mu.Unlock()
	if id == "" {
		return "", sema.Errorf(codeNoSession, "there is no session yet; send a prompt first")
	}
	if l.store == nil {
		return "", sema.Errorf(session.CodeAdminUnsupported, "this back-end was given no session store to read turns from")
	}
	return id, nil
}

// Turns implements Sessions: the turns of the current session's conversation (from its
// root to its head), each with the files file history recorded at its start.
func (l *Local) Turns(ctx context.Context) ([]TurnSummary, error) {
	id, err := l.current()
	if err != nil {
		return nil, err
	}
	s, err := l.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	chain, err := l.store.Transcript(ctx, id, "")
	if err != nil {
		return nil, err
	}
	files, err := l.turnFiles(ctx, s)
	if err != nil {
		return nil, err
	}
	var out []TurnSummary
	prompt := ""
	for _, t := range readChain(chain) {
		switch t.role {
		case "user":
			prompt = t.text
		case "assistant":
			said := t.text
			if said == "" {
				said = strings.Join(t.tools, ", ")
			}
			out = append(out, TurnSummary{N: t.turn, Prompt: prompt, Said: said, Files: files[t.turn]})
			prompt = ""
		}
	}
	return out, nil
}

// turnFiles maps each turn to the files changed in it: the records of the newest turn
// boundary minted for it (a turn rewound and run again has a later one), relative to the
// session's root.
func (l *Local) turnFiles(ctx context.Context, s session.Session) (map[int][]string, error) {
	out := map[int][]string{}
	if l.hist == nil {
		return out, nil
	}
	scope := s.HistoryScope()
	bounds, err := l.hist.Boundaries(ctx, scope)
	if err != nil {
		return nil, err
	}
	newest := map[int]int64{}
	for _, b := range bounds {
		if b.Kind == history.KindTurn {
			newest[b.Turn] = b.ID
		}
	}
	recs, err := l.hist.Records(ctx, scope, 0)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Boundary == 0 || newest[r.Turn] != r.Boundary {
			continue
		}
		p := relTo(s.Root, r.Key)
		if !slices.Contains(out[r.Turn], p) {
			out[r.Turn] = append(out[r.Turn], p)
		}
	}
	return out, nil
}

// Rewind implements Sessions on the current session.
func (l *Local) Rewind(ctx context.Context, spec agent.RewindSpec) (*agent.RewindResult, error) {
	id, err := l.current()
	if err != nil {
		return nil, err
	}
	spec.SessionID = id
	res, err := l.runner.Rewind(ctx, spec)
	if res != nil && res.Ledger != nil {
		if s, gerr := l.store.Get(ctx, id); gerr == nil {
			for i, e := range res.Ledger.Entries {
				res.Ledger.Entries[i].Path = relTo(s.Root, e.Path)
			}
		}
	}
	return res, err
}

// relTo is path relative to root when it lies under it, else path.
func relTo(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return path
}

// said is one transcript message decoded for the screen.
type said struct {
	role  string
	turn  int
	text  string
	tools []string
}

// readChain decodes the prompts and responses of a transcript chain (tool results,
// markers and notes are left out); a response carries its turn number.
func readChain(chain []session.Entry) []said {
	var out []said
	turn := 0
	for _, e := range chain {
		switch e.Kind {
		case "user":
			var m model.Message
			if json.Unmarshal(e.Payload, &m) == nil {
				out = append(out, said{role: "user", turn: turn, text: blockText(&m, model.KindText)})
			}
		case "assistant":
			var a struct {
				Turn    int           `json:"turn"`
				Message model.Message `json:"message"`
			}
			if json.Unmarshal(e.Payload, &a) != nil {
				continue
			}
			turn = a.Turn
			s := said{role: "assistant", turn: turn, text: blockText(&a.Message, model.KindText)}
			for _, b := range a.Message.Content {
				if b.Kind == model.KindToolUse {
					s.tools = append(s.tools, summary(b.Name, b.Input))
				}
			}
			out = append(out, s)
		}
	}
	return out
}
