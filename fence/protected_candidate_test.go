package fence

import (
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
)

// ProtectedCandidate is a filter before IsProtected: it may admit more, never less. Every
// name at which IsProtected says a path becomes protected (its directory unprotected),
// spelled in any case on a case-insensitive env, passes it; ProtectedSpots are protected.
func TestProtectedCandidateNeverMissesWhatIsProtected(t *testing.T) {
	t.Parallel()
	base := realTempDir(t)
	tree(t, base, "root/")
	for _, fold := range []bool{false, true} {
		cfg := Config{Root: base + "/root"}
		if fold {
			cfg.Env = foldEnv{env.NewHost()}
		}
		f := newFence(t, cfg)
		var names []string
		names = append(names, protectedDirs...)
		names = append(names, protectedFiles...)
		for _, s := range protectedSubdirs {
			names = append(names, s[1])
		}
		names = append(names, "main.go", "bin", "src", "user", "Makefile", ".github", ".gitignore", "git")
		for _, n := range names {
			for _, spelled := range []string{n, strings.ToUpper(n), strings.ToUpper(n[:1]) + n[1:]} {
				for _, parent := range []string{"/root/a", "/root/.config", "/root/.local", "/root/x/.CONFIG"} {
					p := base + parent + "/" + spelled
					if prot, _ := f.IsProtected(p); prot && !ProtectedCandidate(spelled) {
						t.Errorf("fold %v: %s is protected but ProtectedCandidate(%q) is false", fold, p, spelled)
					}
				}
			}
		}
		for _, s := range ProtectedSpots() {
			if prot, _ := f.IsProtected(base + "/root/" + s + "/x"); !prot {
				t.Errorf("the spot %s is not protected", s)
			}
		}
	}
}

// Class 10: the startup and configuration places of a home directory are protected; the
// same bare names elsewhere in a repository are not.
func TestHomeStartupPlacesAreProtected(t *testing.T) {
	t.Parallel()
	base := realTempDir(t)
	tree(t, base, "home/", "repo/")
	f := newFence(t, Config{Root: base + "/repo", AdditionalDirectories: []string{base + "/home"}})
	for rel, want := range map[string]bool{
		"home/.bashrc": true, "home/.profile": true, "home/.bash_aliases": true, "home/.pam_environment": true,
		"home/.xprofile": true, "home/.xsessionrc": true, "home/.xinitrc": true, "home/.login": true,
		"home/.gitconfig": true, "home/.config/git/config": true, "home/.local/bin/git": true,
		"home/.config/systemd/user/x.service": true, "home/.config/autostart/x.desktop": true,
		"home/.config/environment.d/x.conf": true, "home/.ssh/authorized_keys": true, "home/.ssh/rc": true,
		"home/.config/fish/config.fish": true,
		"home/notes.txt":                false, "home/.config/htop/htoprc": false, "home/.local/share/x": false,
		"repo/bin/tool": false, "repo/src/git/x.go": false, "repo/systemd/x.service": false,
		"repo/local/bin/x": false, "repo/user/x": false,
	} {
		if got, _ := f.IsProtected(base + "/" + rel); got != want {
			t.Errorf("%s: protected %v, want %v", rel, got, want)
		}
	}
}
