// Package shellscantest holds test material shared by the packages that judge shell text:
// shellscan itself, the permission gate and the shell tools.
package shellscantest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Marker is the file every hostile command below creates when bash runs it. The commands name
// it relatively, so run them in a fresh temporary directory: they touch nothing else.
const Marker = "sema-marker"

// Case is one hostile command.
type Case struct {
	// Name describes the spelling; tests use it as the subtest name.
	Name string
	// Cmd is the command text, exactly as a model would send it to bash.
	Cmd string
}

// LexerHostile are spellings of one escape class: text bash reads differently from
// mvdan.cc/sh. Run by plain bash, each one creates Marker in its working directory, while the
// parser's reading, taken at its word, is echo, cat or ls alone — read-only, and matched by a
// rule such as Bash(echo *) — or a text it cannot parse. Every analysis must refuse them.
var LexerHostile = []Case{
	{"continuation forms $( in double quotes", "echo \"$\\\n(touch " + Marker + ")\""},
	{"continuation forms $( unquoted", "echo $\\\n(touch " + Marker + ")"},
	{"continuation forms $( in a here-document", "cat <<E\n$\\\n(touch " + Marker + ")\nE"},
	{"continuation forms ${ in double quotes", "echo \"$\\\n{x:-$(touch " + Marker + ")}\""},
	{"continuation forms <(", "cat <\\\n(touch " + Marker + ")"},
	{"continuation forms &&", "echo a &\\\n& touch " + Marker},
	{"continuation joins the here-document delimiter", "cat <<E\nE\\\n\ntouch " + Marker + "\nE"},
	{"continuation at the end of a comment", "echo a # note \\\ntouch " + Marker},
	{"continuation in a comment after a quote", "echo 'a' #\\\ntouch " + Marker},
	{"escaped carriage return before a newline", "echo a\\\r\ntouch " + Marker},
	{"escaped carriage return after a blank", "echo a \\\r\ntouch " + Marker},
	{"carriage return before a mid-word #", "echo a\r#;touch " + Marker},
	{"carriage return after the command word", "ls\r#;touch " + Marker},
	{"continuation inside the command word", "ec\\\nho \"$\\\n(touch " + Marker + ")\""},
}

// BashCreatesMarker runs cmd with plain bash (no startup files) in a fresh temporary directory
// that is also its home, and reports whether it created Marker: the calibration that shows a
// hostile case really has an effect. It skips the test when bash is not installed.
func BashCreatesMarker(t testing.TB, cmd string) bool {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("the calibration runs bash, which is not installed")
	}
	dir := t.TempDir()
	c := exec.Command(bash, "--noprofile", "--norc", "-c", cmd)
	c.Dir = dir
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LC_ALL=C"}
	_ = c.Run() // the exit status says nothing about the effect; the marker does
	_, err = os.Stat(filepath.Join(dir, Marker))
	return err == nil
}
