package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/sema-agent/sema/permission"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader on two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func askReq(tool, input string, personOnly bool) permission.ApprovalRequest {
	return permission.ApprovalRequest{
		Tool:  tool,
		Input: json.RawMessage(input),
		Ask: permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerMode,
			Reason: "Allow " + tool + "?", PersonOnly: personOnly},
		Mode: permission.ModeDefault,
	}
}

const writeInput = `{"file_path":"notes.txt","content":"one\ntwo\n"}`

func TestApproverAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		answers    string
		personOnly bool
		want       permission.Behavior
		wantMsg    string // in the decision's message
		wantOut    string // in what the person saw
		noOut      string // not in what the person saw
	}{
		{"y", "y\n", false, permission.Allow, "allowed once", "[a]lways for this session", ""},
		{"yes, any case, blanks", "  YES \n", false, permission.Allow, "allowed once", "Allow?", ""},
		{"always", "a\n", false, permission.Allow, "for this session", "will not be asked again", ""},
		{"always spelled out", "always\n", false, permission.Allow, "for this session", "will not be asked again", ""},
		{"n", "n\n", false, permission.Deny, "answered no", "[n]o", ""},
		{"empty line", "\n", false, permission.Deny, "was not y, a or n", "not an answer", ""},
		{"garbage", "sure thing\n", false, permission.Deny, `"sure thing"`, "not an answer", ""},
		{"EOF", "", false, permission.Deny, "input ended", "no answer", ""},
		{"answer without newline, then EOF", "y", false, permission.Allow, "allowed once", "", ""},
		{"person-only offers no always", "y\n", true, permission.Allow, "allowed once", "asked every time", "[a]lways"},
		{"person-only always is once", "a\n", true, permission.Allow, "allowed once", "allowed once", "will not be asked again"},
		{"person-only n", "n\n", true, permission.Deny, "answered no", "", ""},
		{"escape sequences in the answer are spelled out", "\x1b[2Kq\n", false, permission.Deny, `\x1b[2Kq`, `\x1b[2Kq`, "\x1b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			a := newTermApprover(strings.NewReader(c.answers), &out, "/work")
			d, err := a.Approve(context.Background(), askReq("Write", writeInput, c.personOnly))
			if err != nil {
				t.Fatal(err)
			}
			if d.Behavior != c.want || !strings.Contains(d.Reason, c.wantMsg) {
				t.Fatalf("decision %+v; want %s with %q", d, c.want, c.wantMsg)
			}
			if !strings.Contains(out.String(), c.wantOut) {
				t.Errorf("output lacks %q:\n%s", c.wantOut, out.String())
			}
			if c.noOut != "" && strings.Contains(out.String(), c.noOut) {
				t.Errorf("output has %q:\n%s", c.noOut, out.String())
			}
		})
	}
}

// TestApproverAlwaysScope: "always" covers the same exact Bash command and the same
// file path (however it is spelled), never a different one, and never a person-only
// question.
func TestApproverAlwaysScope(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		first       permission.ApprovalRequest
		second      permission.ApprovalRequest
		secondAsked bool
	}{
		{"same Write path", askReq("Write", writeInput, false), askReq("Write", writeInput, false), false},
		{"same path spelled absolute", askReq("Write", writeInput, false), askReq("Write", `{"file_path":"/work/notes.txt","content":"x"}`, false), false},
		{"same path spelled with dots", askReq("Write", writeInput, false), askReq("Write", `{"file_path":"./sub/../notes.txt","content":"x"}`, false), false},
		{"other path", askReq("Write", writeInput, false), askReq("Write", `{"file_path":"other.txt","content":"x"}`, false), true},
		{"other file tool, same path", askReq("Write", writeInput, false), askReq("Edit", `{"file_path":"notes.txt","old_string":"a","new_string":"b"}`, false), true},
		{"same path, person-only", askReq("Write", writeInput, false), askReq("Write", writeInput, true), true},
		{"same Bash command", askReq("Bash", `{"command":"npm test"}`, false), askReq("Bash", `{"command":"npm test"}`, false), false},
		{"longer Bash command", askReq("Bash", `{"command":"npm test"}`, false), askReq("Bash", `{"command":"npm test && rm -rf /tmp/x"}`, false), true},
		{"other tool entirely", askReq("WebFetch", `{"url":"https://a.example"}`, false), askReq("WebFetch", `{"url":"https://b.example"}`, false), false},
		{"another tool", askReq("WebFetch", `{"url":"https://a.example"}`, false), askReq("mcp__db__query", `{}`, false), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// One "a" answer and then the end of the input: a second question that is
			// put is denied (no answer), one that is covered is allowed without reading.
			var out bytes.Buffer
			a := newTermApprover(strings.NewReader("a\n"), &out, "/work")
			if d, _ := a.Approve(context.Background(), c.first); d.Behavior != permission.Allow {
				t.Fatalf("first answer: %+v", d)
			}
			before := strings.Count(out.String(), "Allow?")
			d, _ := a.Approve(context.Background(), c.second)
			asked := strings.Count(out.String(), "Allow?") > before
			if asked != c.secondAsked {
				t.Fatalf("second question asked=%v, want %v\n%s", asked, c.secondAsked, out.String())
			}
			if want := map[bool]permission.Behavior{true: permission.Deny, false: permission.Allow}[c.secondAsked]; d.Behavior != want {
				t.Fatalf("second decision %+v, want %s", d, want)
			}
		})
	}
}

// TestApproverAfterEOFDeniesAtOnce: once the input has ended, later questions are
// denied without waiting for a line that cannot come.
func TestApproverAfterEOFDeniesAtOnce(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	a := newTermApprover(strings.NewReader("y\n"), &out, "/work")
	for i, want := range []permission.Behavior{permission.Allow, permission.Deny, permission.Deny, permission.Deny} {
		d, err := a.Approve(context.Background(), askReq("Write", fmt.Sprintf(`{"file_path":"f%d","content":""}`, i), false))
		if err != nil || d.Behavior != want {
			t.Fatalf("question %d: %+v %v; want %s", i, d, err, want)
		}
	}
}

// TestApproverCancellation: a question waiting for an answer is denied when the run is
// cancelled (Ctrl-C), and nothing typed later is taken for it.
func TestApproverCancellation(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	defer pw.Close()
	out := &syncBuffer{}
	a := newTermApprover(pr, out, "/work")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan permission.ApprovalDecision)
	go func() {
		d, _ := a.Approve(ctx, askReq("Write", writeInput, false))
		done <- d
	}()
	cancel()
	d := <-done
	if d.Behavior != permission.Deny || !strings.Contains(d.Reason, "cancelled") {
		t.Fatalf("decision %+v", d)
	}
	if !strings.Contains(out.String(), "cancelled") {
		t.Fatalf("the person was not told: %s", out.String())
	}
}

func TestRenderInput(t *testing.T) {
	t.Parallel()
	var long strings.Builder
	for i := 1; i <= 25; i++ {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	longJSON, _ := json.Marshal(map[string]string{"file_path": "big.txt", "content": long.String()})
	cases := []struct {
		name    string
		tool    string
		input   string
		want    []string // every one appears in the rendering
		notWant []string
	}{
		{"bash command and description", "Bash", `{"command":"go test ./...","description":"run the tests"}`,
			[]string{"$ go test ./...", "# run the tests"}, nil},
		{"bash multi-line command is shown whole", "Bash", `{"command":"echo a\necho b","run_in_background":true}`,
			[]string{"$ echo a", "  echo b", "# runs in the background"}, nil},
		{"write shows path, size and lines", "Write", `{"file_path":"a.txt","content":"alpha\r\nbeta\r\n"}`,
			[]string{"path: a.txt (2 lines, 13 bytes)", "│ alpha", "│ beta"}, []string{`\x0d`}},
		{"write is cut after 20 lines", "Write", string(longJSON),
			[]string{"│ line 1", "│ line 20", "… 5 lines more"}, []string{"line 21"}},
		{"edit shows removed and added lines", "Edit", `{"file_path":"m.go","old_string":"a := 1\nb := 2","new_string":"a := 3","replace_all":true}`,
			[]string{"path: m.go (every occurrence)", "- a := 1", "- b := 2", "+ a := 3"}, nil},
		{"multiedit numbers its edits", "MultiEdit", `{"file_path":"m.go","edits":[{"old_string":"x","new_string":"y"},{"old_string":"p","new_string":"q"}]}`,
			[]string{"path: m.go (2 edits)", "edit 1:", "- x", "+ y", "edit 2:", "- p", "+ q"}, nil},
		{"notebook edit", "NotebookEdit", `{"notebook_path":"n.ipynb","cell_id":"c1","new_source":"print(1)"}`,
			[]string{"notebook: n.ipynb, cell c1, replace", "│ print(1)"}, nil},
		{"other tools as JSON", "WebFetch", `{"url":"https://example.com","prompt":"summarize"}`,
			[]string{`"url": "https://example.com"`, `"prompt": "summarize"`}, nil},
		{"terminal escapes are spelled out", "Bash", `{"command":"rm -rf build\u001b[2K\rls"}`,
			[]string{`$ rm -rf build\x1b[2K\x0dls`}, []string{"\x1b", "\r"}},
		{"bidirectional overrides are spelled out", "Write", `{"file_path":"a\u202etxt.exe","content":"x"}`,
			[]string{`a\u202etxt.exe`}, []string{"\u202e"}},
		{"input that is not an object", "Write", `"just text"`, []string{`"just text"`}, nil},
		{"a file tool with an unexpected input falls back to JSON", "Edit", `{"file_path":"a"}`, []string{`"file_path": "a"`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := strings.Join(renderInput(c.tool, json.RawMessage(c.input)), "\n")
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("rendering lacks %q:\n%s", w, got)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(got, w) {
					t.Errorf("rendering has %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestQuestionShowsTheCallAndTheSentence: the question names the tool and its target,
// renders the input, and carries the gate's sentence and reason.
func TestQuestionShowsTheCallAndTheSentence(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	a := newTermApprover(strings.NewReader("n\n"), &out, "/work")
	req := askReq("Write", writeInput, true)
	req.Ask.Reason = "Writing .bashrc needs a person's yes."
	req.Ask.DecidedBy = permission.LayerSafety
	a.Approve(context.Background(), req)
	for _, want := range []string{"Write notes.txt", "│ one", "│ two", "Writing .bashrc needs a person's yes. (reason: safety)", "Allow? [y]es once / [n]o"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("question lacks %q:\n%s", want, out.String())
		}
	}
}
