package tui

import (
	"cmp"
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
)

// Options configure a session's screen.
type Options struct {
	// Backend runs the prompts. Required.
	Backend Backend
	// Approver, when set, is the back-end's approver: its questions become dialogs.
	Approver *Approver
	// Model names the model for the status line.
	Model string
	// Demo marks the scripted demo model: the status line says so on every frame.
	Demo bool
	// Mode is the permission mode the session starts in ("" reads as default).
	// Starting in bypassPermissions puts it in the Shift+Tab cycle.
	Mode permission.Mode
	// Sandbox is the sandbox setting until the first leg reports what it got.
	Sandbox string
	// NoColor renders without colours (NO_COLOR).
	NoColor bool
	// Prompt, when set, is sent as the first prompt.
	Prompt string
	// Welcome, when set, is the conversation's first line (the demo's explanation).
	Welcome string
	// Resume opens the session picker first (sema --resume with no id); the back-end
	// must offer Sessions.
	Resume bool
	// History, when set, is the prompt history Up, Down and Ctrl-R walk; each prompt
	// sent is added to it.
	History *History
	// Roots are the task's roots, the first the task's own: @ completes the paths
	// under them. None: @ is plain text.
	Roots []string
}

// Model is the session's Bubble Tea model. Its Update only reads messages and returns
// commands, and View depends only on the state, so tests drive it without a terminal.
type Model struct {
	opts   Options
	ctx    context.Context // the session's: ends when the screen closes
	wg     *sync.WaitGroup // the legs' goroutines, waited for after the screen closes
	width  int
	height int
	dark   bool
	styles styles
	md     *markdown

	entries   []*entry
	streaming *entry // the assistant entry text is streaming into; nil between
	tools     map[string]*entry

	input   textarea.Model
	shell   bool // the input is a shell line (shellmode.go)
	queue   []string
	running bool
	leg     int                // the number of the latest leg, to drop a stale leg's messages
	cancel  context.CancelFunc // interrupts the running leg
	inbox   chan tea.Msg       // the legs' events and the approver's questions, in order

	question *QuestionMsg
	note     *denyNote // the sentence of a denial being typed (dialog.go); nil when none
	saving   *savePick // where the rule of "allow always" is kept (dialog.go); nil when none
	plan     *planView // the plan gate's rendered plan and its scroll (plan.go); nil when none
	picker   *picker   // the open /resume or /rewind picker; nil when none
	mode     permission.Mode
	modes    *modeChanges
	bypass   bool // bypassPermissions is in the cycle
	sandbox  string

	usage       model.Usage
	cost        float64
	costUnknown bool

	ctrlC    bool // a Ctrl-C on the empty input waits for its second
	quitting bool

	// The input's helpers: the history walk and search (history.go), the @ list
	// (complete.go), expanded tool calls and scrollback (expand.go).
	walk       histWalk
	search     *histSearch
	histFailed bool
	comp       *completion
	compShut   bool
	paths      []pathItem
	walking    bool
	expand     bool
	scrolled   bool
	scrollTop  int

	facts facts // what the events said, for the slash commands and the status line

	questions *questionsPicker // the open /questions picker (questions.go); nil when none
	waiting   int              // the parked questions last said to wait
}

// New returns the model of a session. ctx is the session's: cancelling it stops the
// legs and the question loop.
func New(ctx context.Context, opts Options) *Model {
	in := newInput()
	mode := opts.Mode
	if mode == "" {
		mode = permission.ModeDefault
	}
	m := &Model{
		opts: opts, ctx: ctx, wg: &sync.WaitGroup{}, width: 80, height: 24, dark: true,
		tools: map[string]*entry{}, input: in, mode: mode, modes: &modeChanges{},
		bypass: mode == permission.ModeBypassPermissions, sandbox: opts.Sandbox,
	}
	if opts.Welcome != "" {
		m.add(&entry{kind: entryNotice, text: sanitize(opts.Welcome)})
	}
	m.inbox = newInbox()
	if opts.Approver != nil {
		m.inbox = opts.Approver.inbox
	}
	m.restyle()
	return m
}

// Wait waits for the legs the session started to end; call it after cancelling the
// session's context, so that each leg's session is released before the process exits.
func (m *Model) Wait() { m.wg.Wait() }

// Init implements tea.Model.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{tea.RequestBackgroundColor, m.listen(), m.checkParked()}
	if p := strings.TrimSpace(m.opts.Prompt); p != "" {
		m.remember(p)
		cmds = append(cmds, m.submit(p))
	}
	if m.opts.Resume {
		cmds = append(cmds, m.sessionCommand("/resume"))
	}
	return tea.Batch(cmds...)
}

// eventMsg carries one event of leg number leg.
type eventMsg struct {
	leg int
	ev  agent.Event
}

// legDoneMsg says leg number leg ended; err is a refusal before it started.
type legDoneMsg struct {
	leg int
	err error
}

// modeMsg is the back-end's answer to mode change number seq.
type modeMsg struct {
	seq  int64
	mode permission.Mode
	err  error
	prev permission.Mode // the mode before the change, in force if it is refused
}

// modeChanges orders the mode changes sent to the back-end (Shift+Tab pressed fast).
type modeChanges struct {
	seq    int64 // the latest change's number; the model's goroutine only
	latest atomic.Int64
	mu     sync.Mutex
}

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.input.SetWidth(max(10, msg.Width-4))
		return m, nil
	case tea.BackgroundColorMsg:
		m.dark = msg.IsDark()
		m.restyle()
		return m, nil
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case eventMsg:
		if msg.leg == m.leg {
			m.event(msg.ev)
		}
		return m, m.listen()
	case legDoneMsg:
		if msg.leg != m.leg {
			return m, m.listen()
		}
		return m, tea.Batch(m.legDone(msg.err), m.listen(), m.checkParked())
	case pickerMsg:
		return m, m.pickerUpdate(msg)
	case QuestionMsg:
		q := msg
		m.question, m.plan = &q, nil
		return m, m.listen()
	case pathsMsg:
		m.paths, m.walking = append(make([]pathItem, 0, len(msg.items)), msg.items...), true
		if m.comp != nil {
			m.comp.items = matchPaths(m.paths, m.comp.query, completionRows)
		}
		return m, nil
	case commandMsg:
		msg(m)
		return m, nil
	case modeMsg:
		if msg.seq != m.modes.seq {
			return m, nil // a later change is on its way
		}
		if msg.err != nil {
			m.add(&entry{kind: entryError, text: "the mode did not change: " + msg.err.Error()})
			m.mode = cmp.Or(msg.mode, msg.prev) // the mode in force, not the one asked for
			return m, nil
		}
		m.mode = msg.mode
		return m, nil
	}
	return m, m.typed(msg)
}

// submit sends a line: a slash command runs at once, a prompt starts a leg or, while one
// runs, waits in the queue.
func (m *Model) submit(text string) tea.Cmd {
	if strings.HasPrefix(text, "/") {
		return m.command(text)
	}
	if m.running {
		m.queue = append(m.queue, text)
		return nil
	}
	return m.start(text)
}

// start runs prompt as a new leg. The leg's goroutine feeds its messages to the inbox,
// which the model reads one at a time (listen), so a slow screen never drops an event.
func (m *Model) start(prompt string) tea.Cmd {
	// A "!" line runs on the back-end's shell; a prompt goes with the images it names.
	var run func(context.Context, func(agent.Event)) error
	if strings.HasPrefix(prompt, "!") {
		m.add(&entry{kind: entryUser, text: prompt})
		run = m.legRun(prompt)
	} else if prompt, run = m.attach(prompt); run != nil {
		m.add(&entry{kind: entryUser, text: prompt})
	}
	if run == nil {
		return m.dequeue() // refused, and said why
	}
	m.runLeg(run)
	return nil
}

// runLeg runs a leg — a prompt's, a shell line's, or the answer of a parked question —
// on a goroutine of its own: its events and its end come through the inbox, and Esc
// interrupts it.
func (m *Model) runLeg(run func(context.Context, func(agent.Event)) error) {
	m.leg++
	leg, ctx := m.leg, m.ctx
	legCtx, cancel := context.WithCancel(ctx)
	m.cancel, m.running = cancel, true
	ch, wg := m.inbox, m.wg
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		send := func(msg tea.Msg) {
			select {
			case ch <- msg:
			case <-ctx.Done(): // the screen closed: nobody reads any more
			}
		}
		err := run(legCtx, func(ev agent.Event) { send(eventMsg{leg: leg, ev: ev}) })
		send(legDoneMsg{leg: leg, err: err})
	}()
}

// listen waits for the inbox's next message. Exactly one listen is pending at a time:
// Init starts it and each inbox message's Update starts the next.
func (m *Model) listen() tea.Cmd {
	ch, ctx := m.inbox, m.ctx
	return func() tea.Msg {
		select {
		case msg := <-ch:
			return msg
		case <-ctx.Done():
			return nil
		}
	}
}

// legDone closes the running leg and starts the first queued prompt.
func (m *Model) legDone(err error) tea.Cmd {
	m.running, m.cancel = false, nil
	m.streaming = nil
	if m.question != nil {
		// The leg ended with its question open (an interrupt): the approver has
		// already refused it; the dialog goes with the leg.
		m.question.answer(ChoiceDeny)
		m.question, m.note = nil, nil
	}
	if err != nil {
		m.add(&entry{kind: entryError, text: err.Error()})
	}
	return m.dequeue()
}

// dequeue starts the first queued prompt, if there is one.
func (m *Model) dequeue() tea.Cmd {
	if len(m.queue) > 0 {
		p := m.queue[0]
		m.queue = m.queue[1:]
		return m.start(p)
	}
	return nil
}

// event folds one event of the running leg into the conversation and the counters.
func (m *Model) event(ev agent.Event) {
	m.facts.note(ev)
	child := ev.ParentToolUseID != ""
	switch ev.Type {
	case agent.EventInit:
		if !child && ev.Manifest != nil {
			m.mode = permission.Mode(ev.Manifest.Mode.Effective)
			m.sandbox = sandboxWord(ev.Manifest.Shell)
		}
	case agent.EventText:
		if child {
			return
		}
		if m.streaming == nil {
			m.streaming = &entry{kind: entryAssistant}
			m.add(m.streaming)
		}
		m.streaming.appendText(ev.Text)
		m.streaming.cache = ""
	case agent.EventAssistant:
		if ev.Response != nil {
			m.usage = m.usage.Add(ev.Response.Usage)
		}
		if child || ev.Message == nil {
			return
		}
		if thinking := blockText(ev.Message, model.KindThinking); thinking != "" {
			m.addBefore(m.streaming, &entry{kind: entryThinking, text: thinking})
		}
		text := blockText(ev.Message, model.KindText)
		switch {
		case m.streaming != nil:
			if text != m.streaming.text { // the whole response is what was said
				m.streaming.text, m.streaming.paras = text, paragraphs{}
			}
			m.streaming.cache = ""
		case text != "":
			m.add(&entry{kind: entryAssistant, text: text})
		}
		m.streaming = nil
	case agent.EventToolUse:
		m.streaming = nil
		e := &entry{kind: entryTool, text: summary(ev.ToolUse.Name, ev.ToolUse.Input), child: child,
			call: &toolCall{name: ev.ToolUse.Name, input: ev.ToolUse.Input}}
		m.tools[ev.ToolUse.ID] = e
		m.add(e)
	case agent.EventToolResult:
		if e := m.tools[ev.ToolResult.ID]; e != nil {
			e.done, e.failed, e.code = true, ev.ToolResult.IsError, ev.ToolResult.Code
			e.call.output = ev.ToolResult.Text
			if e.failed {
				e.detail = firstLine(strings.TrimSpace(ev.ToolResult.Text))
			}
			e.cache = ""
		}
	case agent.EventPermission:
		if ev.Denial != nil && !child {
			m.add(&entry{kind: entryNotice, text: "denied: " + summary(ev.Denial.Tool, ev.Denial.Input) + " — " + sanitize(ev.Denial.Reason)})
		}
	case agent.EventNotice:
		if ev.Notice != nil && !child {
			m.add(&entry{kind: entryNotice, text: sanitize(ev.Notice.Message)})
		}
	case agent.EventResult:
		if child || ev.Result == nil {
			return
		}
		m.result(ev.Result)
	}
}

// result adds what a leg's end says: its cost, and why it stopped when it did not finish.
func (m *Model) result(r *agent.TaskResult) {
	if r.TotalCostUSD == nil {
		m.costUnknown = true
	} else {
		m.cost += *r.TotalCostUSD
	}
	switch {
	case r.Error != nil && r.Error.Code == agent.CodeCancelled:
		m.add(&entry{kind: entryNotice, text: "interrupted"})
	case r.Error != nil && m.saidByTool(r.Error):
		// A refused shell line: its tool line says it already.
	case r.Error != nil:
		m.add(&entry{kind: entryError, text: sanitize(r.Error.Message) + " (" + r.Error.Code + ")"})
	case r.Status != "completed":
		m.add(&entry{kind: entryNotice, text: "the turn stopped: " + string(r.Status)})
	}
}

// blockText joins the text of msg's blocks of one kind.
func blockText(msg *model.Message, kind model.BlockKind) string {
	var parts []string
	for _, b := range msg.Content {
		if b.Kind == kind && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

func (m *Model) add(e *entry) { m.entries = append(m.entries, e) }

// addBefore puts e just before the entry at (the thinking before the text it led to);
// at the end when at is nil or gone.
func (m *Model) addBefore(at, e *entry) {
	for i, x := range m.entries {
		if x == at {
			m.entries = append(m.entries[:i], append([]*entry{e}, m.entries[i:]...)...)
			return
		}
	}
	m.add(e)
}
