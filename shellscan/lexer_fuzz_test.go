package shellscan

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sema-agent/sema/shellscan/shellscantest"
)

// The lexer-agreement oracle runs a text the analyzer calls read-only under real bash, in a
// shell where nothing real can run: PATH is an empty directory and every builtin is disabled,
// so each simple command bash executes — whatever the analyzer thought it was — falls through
// to command_not_found_handle, which hands its argv to a recorder script. The recorded argv
// lists are then compared with the parser's segments. bash running a command the parser did
// not see, or with other literal words, or writing a file, means the two lexers read the text
// differently while the analyzer said read-only.

// recorderScript writes its arguments, NUL-terminated, to a file of its own in SEMA_RECLOG.
const recorderScript = "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$SEMA_RECLOG/$$\"\n"

// lexerRig is the part of the oracle shared by every input: bash and the startup file that
// turns every command into a recorded call.
type lexerRig struct {
	bash    string
	dir     string // holds the recorder and the startup file
	envFile string
}

var (
	rigOnce sync.Once
	rig     *lexerRig
	rigErr  error
)

// sharedRig builds the rig once per test binary, in a directory removed when the process
// exits normally (testing's TempDir is per test, and the rig outlives them).
func sharedRig() (*lexerRig, error) {
	rigOnce.Do(func() {
		bash, err := exec.LookPath("bash")
		if err != nil {
			rigErr = err
			return
		}
		dir, err := os.MkdirTemp("", "sema-lexer-rig-")
		if err != nil {
			rigErr = err
			return
		}
		rec := filepath.Join(dir, "rec")
		if err := os.WriteFile(rec, []byte(recorderScript), 0o755); err != nil {
			rigErr = err
			return
		}
		out, err := exec.Command(bash, "--noprofile", "--norc", "-c", "compgen -b").Output()
		if err != nil {
			rigErr = err
			return
		}
		var builtins []string
		for _, b := range strings.Fields(string(out)) {
			if b != "enable" {
				builtins = append(builtins, b)
			}
		}
		// enable goes last: it disables itself with the rest in one call.
		env := "command_not_found_handle() { " + rec + " \"$@\"; }\nenable -n " + strings.Join(builtins, " ") + " enable\n"
		envFile := filepath.Join(dir, "env.sh")
		if err := os.WriteFile(envFile, []byte(env), 0o644); err != nil {
			rigErr = err
			return
		}
		rig = &lexerRig{bash: bash, dir: dir, envFile: envFile}
	})
	return rig, rigErr
}

// run runs src under the rig in fresh directories and returns the argv lists bash executed
// and the names of the files it left in its working directory.
func (r *lexerRig) run(t *testing.T, src string) (calls [][]string, left []string) {
	t.Helper()
	base := t.TempDir()
	work, logDir, tmp, bin := filepath.Join(base, "work"), filepath.Join(base, "log"), filepath.Join(base, "tmp"), filepath.Join(base, "bin")
	for _, d := range []string{work, logDir, tmp, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, r.bash, "--noprofile", "--norc", "-c", src)
	c.Dir = work
	c.Env = []string{"PATH=" + bin, "HOME=" + work, "TMPDIR=" + tmp, "LC_ALL=C",
		"BASH_ENV=" + r.envFile, "SEMA_RECLOG=" + logDir}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	var stderr bytes.Buffer
	c.Stderr = &stderr
	err := c.Run()
	if ctx.Err() != nil {
		t.Fatalf("%q: bash did not finish (the analyzer saw no loop): %s", src, stderr.String())
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running bash: %v", err)
	}
	entries, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(logDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		argv := strings.Split(string(data), "\x00")
		calls = append(calls, argv[:len(argv)-1])
	}
	entries, err = os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		left = append(left, e.Name())
	}
	return calls, left
}

// argvMatches reports whether a recorded argv can come from the segment's words: a Static word
// is exactly one argument equal to its value, any other word stands for any number of
// arguments (an expansion may yield none or several).
func argvMatches(words []Word, argv []string) bool {
	if len(words) == 0 {
		return len(argv) == 0
	}
	w := words[0]
	if w.Static {
		return len(argv) > 0 && argv[0] == w.Lit && argvMatches(words[1:], argv[1:])
	}
	for n := 0; n <= len(argv); n++ {
		if argvMatches(words[1:], argv[n:]) {
			return true
		}
	}
	return false
}

func lexerSeeds(f *testing.F) {
	for _, c := range shellscantest.LexerHostile {
		f.Add(c.Cmd)
	}
	for _, c := range readOnlyAccepted {
		f.Add(c)
	}
	for _, c := range []string{
		"echo a \\\n  b \\\n\tc",
		"ls \\\n# x",
		"echo $'a\\x41\\101\\u00e9\\n' \"b\\\"c\" 'd\\e'",
		"echo a#b c # d\necho e",
		"cat <<E\nx $y\nE\necho z",
		"cat <<'E'\n$(x)\nE",
		"echo {a,b} ~ a=~ *",
		"echo \"$HOME\" ${PWD} $#",
		"(echo a; { echo b; }) | cat",
		"echo a\tb\t\t c",
		"echo é ✓ 日本",
		"echo a\\ b \\\" \\$x",
		"echo a;\techo b&&echo c||echo d",
		"echo a\r\necho b",
		"echo $'\\c?'",
		`echo $'\777\1\08\x\xg\e\E\q\''`,
		"cat <<-E\n\tx\n\tE\necho y",
		"echo a\\",
		"echo 'a'\"b\"c\\ d",
		"echo \"a\\b\\$\\`\\\\\"",
		"ls #x\\\necho",
		"echo a#\\\nb",
		"echo a\\#b \\#c",
	} {
		f.Add(c)
	}
}

// FuzzLexerAgreement: wherever bash would run something other than the parser's segments, the
// analyzer must not call the text read-only. Only texts the analyzer accepts are run, and only
// under the recording rig, so nothing real executes.
func FuzzLexerAgreement(f *testing.F) {
	lexerSeeds(f)
	r, err := sharedRig()
	if err != nil {
		f.Skipf("the lexer oracle needs bash: %v", err)
	}
	f.Cleanup(func() {
		// The rig is shared by every fuzz target of the binary; this is the only one.
		_ = os.RemoveAll(r.dir)
	})
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil {
			return
		}
		v := ReadOnly(s, nil)
		if s.Ambiguous() != "" && v.OK {
			t.Fatalf("%q: read-only although ambiguous (%s)", src, s.Ambiguous())
		}
		if !v.OK || len(src) > 2048 {
			return
		}
		calls, left := r.run(t, src)
		if len(left) > 0 {
			t.Fatalf("%q: read-only, but bash left %q in its directory", src, left)
		}
		used := make([]bool, len(s.Segments))
	next:
		for _, argv := range calls {
			for i, seg := range s.Segments {
				if !used[i] && argvMatches(seg.Words, argv) {
					used[i] = true
					continue next
				}
			}
			t.Fatalf("%q: read-only, but bash ran %q, which is none of the parsed segments %s", src, argv, segmentsText(s))
		}
	})
}

func segmentsText(s *Script) string {
	var b strings.Builder
	for _, seg := range s.Segments {
		b.WriteString("[")
		for i, w := range seg.Words {
			if i > 0 {
				b.WriteString(" ")
			}
			if w.Static {
				b.WriteString(strconv.Quote(w.Lit))
			} else {
				b.WriteString("<" + w.Raw + ">")
			}
		}
		b.WriteString("]")
	}
	return b.String()
}
