package main

import (
	"encoding/binary"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/model/anthropic/anthropictest"
	"github.com/sema-agent/sema/session/sqlitedb"
	"github.com/sema-agent/sema/statedir"
)

// An --add-dir or --add-read-dir that names no directory is refused by name (exit 2,
// config.add_dir_invalid) before anything runs; one that exists runs.
func TestAddDirMustExist(t *testing.T) {
	w := newPromptWorld(t)
	file := writeFile(t, filepath.Join(w.root, "notes.txt"), "x")
	cases := []struct {
		flag, dir, says string
	}{
		{"--add-dir", "../nowhere", "--add-dir ../nowhere: no such directory"},
		{"--add-read-dir", filepath.Join(w.root, "gone"), "--add-read-dir " + filepath.Join(w.root, "gone") + ": no such directory"},
		{"--add-dir", file, "is a file, not a directory"},
	}
	for _, c := range cases {
		code, out, errs := w.run(t, strings.NewReader(""), "-p", "hello", c.flag, c.dir)
		if code != exitUsage || !strings.Contains(errs, c.says) || !strings.Contains(errs, "(config.add_dir_invalid)") {
			t.Errorf("%s %s: exit %d, stderr %q; want exit 2 saying %q", c.flag, c.dir, code, errs, c.says)
		}
		if strings.Contains(out, "done") {
			t.Errorf("%s %s: the run went ahead: %s", c.flag, c.dir, out)
		}
	}
	if code, _, errs := w.run(t, strings.NewReader(""), "-p", "hello", "--add-dir", ".."); code != exitOK {
		t.Errorf("--add-dir of an existing directory: exit %d\n%s", code, errs)
	}
}

// A model request sent again is said on stderr in text output — with the status that
// failed and the wait — and not in JSON output, whose stderr stays for failures.
func TestRetryNotice(t *testing.T) {
	w := newPromptWorld(t)
	for _, format := range []string{"text", "json"} {
		srv := anthropictest.NewServer(t,
			anthropictest.Turn{Status: 529, Header: http.Header{"Retry-After-Ms": {"1"}}},
			anthropictest.Turn{Text: "fine"})
		t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
		t.Setenv("ANTHROPIC_BASE_URL", srv.URL())
		code, out, errs := w.run(t, strings.NewReader(""), "-p", "hello", "--model", "anthropic/claude-sonnet-4-5", "--output-format", format)
		if code != exitOK || !strings.Contains(out, "fine") {
			t.Fatalf("%s: exit %d\nstdout %s\nstderr %s", format, code, out, errs)
		}
		said := strings.Contains(errs, "sema: retrying the model request in 0s (HTTP 529)\n")
		if said != (format == "text") {
			t.Errorf("%s output: stderr %q", format, errs)
		}
	}
}

// The retry's wait is spelled as a person reads it.
func TestWaitText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		480 * time.Millisecond:   "500ms",
		1740 * time.Millisecond:  "1.7s",
		8 * time.Second:          "8s",
		42400 * time.Millisecond: "42s",
	} {
		if got := waitText(d); got != want {
			t.Errorf("waitText(%v) = %q, want %q", d, got, want)
		}
	}
}

// The demo ends by saying how to install sema when none is on PATH.
func TestDemoSaysHowToInstall(t *testing.T) {
	if s := demoNextSteps(false); !strings.Contains(s, "go install ./cmd/sema") || !strings.Contains(s, "ANTHROPIC_API_KEY") {
		t.Errorf("without sema on PATH: %q", s)
	}
	if s := demoNextSteps(true); strings.Contains(s, "go install") {
		t.Errorf("with sema on PATH: %q", s)
	}
}

// --model takes Claude Code's aliases and bare ids: the request names the resolved
// model, and a dollar budget works because the price follows the resolved id. An
// unknown name is refused with the models sema knows.
func TestModelAliases(t *testing.T) {
	w := newPromptWorld(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	for ref, want := range map[string]string{"sonnet": "claude-sonnet-4-5", "opus": "claude-opus-4-5", "claude-haiku-4-5": "claude-haiku-4-5"} {
		srv := anthropictest.NewServer(t, anthropictest.Turn{Text: "fine", Usage: anthropictest.Usage{InputTokens: 1000, OutputTokens: 100}})
		t.Setenv("ANTHROPIC_BASE_URL", srv.URL())
		code, out, errs := w.run(t, strings.NewReader(""), "-p", "hello", "--model", ref, "--max-budget-usd", "1", "--output-format", "json")
		if code != exitOK {
			t.Fatalf("--model %s: exit %d\n%s\n%s", ref, code, out, errs)
		}
		if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Body["model"] != want {
			t.Errorf("--model %s sent %v, want model %s", ref, reqs, want)
		}
		var res struct {
			Cost float64 `json:"total_cost_usd"`
		}
		if json.Unmarshal([]byte(out), &res); res.Cost <= 0 {
			t.Errorf("--model %s: total_cost_usd %v in %s; want the resolved model's price", ref, res.Cost, out)
		}
	}
	code, _, errs := w.run(t, strings.NewReader(""), "-p", "hello", "--model", "sonet")
	if code != exitUsage || !strings.Contains(errs, `unknown model "sonet"`) || !strings.Contains(errs, "claude-sonnet-4-5") || !strings.Contains(errs, "(config.model_unknown)") {
		t.Errorf("--model sonet: exit %d, %s", code, errs)
	}
}

// A state database whose middle pages were zeroed (a disk that lost a block) is refused
// as store.corrupt, exit 1, with what to do — never read as "no session to continue"
// nor shown as SQLite's bare message — and left as it was.
func TestZeroedMiddleOfTheStateDatabase(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	home, root := t.TempDir(), t.TempDir()
	for range 6 {
		scriptedRun(t, home, root)
	}
	path := filepath.Join(home, statedir.DatabaseName)
	db, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.BigEndian.Uint16(db[16:18]))
	mid := len(db) / pageSize / 2 * pageSize
	copy(db[mid:mid+pageSize], make([]byte, pageSize))
	if v := integrity(t, db); v == "ok" {
		t.Fatalf("zeroing page %d left a sound database; the test damages nothing", mid/pageSize)
	}
	for _, args := range [][]string{
		{"run", "--continue", "--cwd", root, "--sandbox", "off", "--model", "scripted/" + writeFile(t, filepath.Join(t.TempDir(), "s.json"), `{"turns":[{"text":"done"}]}`), "go on"},
		{"sessions", "list", "--cwd", root},
	} {
		o := runOn(t, db, append(args, "--output-format", "text"))
		if o.code != exitError || o.errCode != sqlitedb.CodeCorrupt || !strings.Contains(o.stderr, "Move it aside") || o.changed {
			t.Errorf("%q on a zeroed page: exit %d, code %q, changed %v\n%s", args[:2], o.code, o.errCode, o.changed, o.stderr)
		}
	}
}
