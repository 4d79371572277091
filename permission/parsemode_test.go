package permission

import (
	"testing"

	"github.com/sema-agent/sema"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	for _, m := range Modes() {
		got, err := ParseMode(string(m))
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	for _, bad := range []string{"", "Default", "DEFAULT", "accept_edits", "acceptedits", "bypass", "yolo", " default", "default ", "plan\n"} {
		_, err := ParseMode(bad)
		if !sema.IsCode(err, CodeModeInvalid) {
			t.Errorf("ParseMode(%q) error = %v, want %s", bad, err, CodeModeInvalid)
		}
	}
}
