package shellchange

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A plain scope names its stage directory itself; any other is hashed, so that no scope
// can name a directory outside the stage root. ForgetStages removes a scope's stages
// and no other's.
func TestStageDirectories(t *testing.T) {
	if got := scopeDirName("0a1b-c2"); got != "0a1b-c2" {
		t.Fatalf("a plain scope: %q", got)
	}
	for _, s := range []string{"../x", "a/b", "", ".hidden"} {
		if got := scopeDirName(s); !strings.HasPrefix(got, "h-") || strings.ContainsAny(got, "/.") {
			t.Errorf("scope %q names %q", s, got)
		}
	}
	state := t.TempDir()
	for _, scope := range []string{"one", "two"} {
		if err := os.MkdirAll(filepath.Join(scopeDir(state, scope), "leg"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := ForgetStages(state, "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(scopeDir(state, "one")); !os.IsNotExist(err) {
		t.Fatalf("the forgotten scope's stages stay: %v", err)
	}
	if _, err := os.Stat(scopeDir(state, "two")); err != nil {
		t.Fatalf("another scope's stages went: %v", err)
	}
	if err := ForgetStages("", "one"); err != nil {
		t.Fatalf("no state directory: %v", err)
	}
}
