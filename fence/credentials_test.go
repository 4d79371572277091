package fence

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// TestCredentialStoresAreRefused: with home a read root, every spelling of a path in a
// credential store — direct, relative, through "..", through a link to the store, the
// store's own target behind a link, one made after New, a settings addition — is
// refused (fs.path_denied) for reads and writes, under the open face too; Denied and
// MayContainDenied agree; the rest of home is not refused.
func TestCredentialStoresAreRefused(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	root := filepath.Join(home, "proj")
	dotfiles := filepath.Join(home, "dotfiles", "kube")
	for _, d := range []string{root, filepath.Join(home, ".ssh"), dotfiles, filepath.Join(home, ".config")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("k"), 0o600)
	os.WriteFile(filepath.Join(dotfiles, "config"), []byte("k"), 0o600)
	os.Symlink(dotfiles, filepath.Join(home, ".kube"))
	os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(root, "keys"))
	os.WriteFile(filepath.Join(home, "notes.txt"), []byte("n"), 0o600)
	open := string(FaceOpen)
	for _, face := range []*string{nil, &open} {
		f, err := New(context.Background(), Config{Env: env.NewHost(), Root: root, AdditionalReadDirectories: []string{home},
			Home: home, Hidden: []string{"~/vault", "private"}, TaskReadFace: face, TaskWriteFace: face})
		if err != nil {
			t.Fatal(err)
		}
		// Made after New: judged by path.
		os.MkdirAll(filepath.Join(home, ".aws"), 0o700)
		os.WriteFile(filepath.Join(home, ".aws", "credentials"), []byte("k"), 0o600)
		for _, p := range []string{
			filepath.Join(home, ".ssh", "id_rsa"), filepath.Join(home, ".ssh"), "../.ssh/id_rsa", "keys/id_rsa",
			filepath.Join(root, "..", ".ssh", "id_rsa"), filepath.Join(home, ".kube", "config"), filepath.Join(dotfiles, "config"),
			filepath.Join(home, ".aws", "credentials"), filepath.Join(home, ".bash_history"), filepath.Join(home, ".config", "gh", "hosts.yml"),
			filepath.Join(home, ".config", "git", "credentials"), filepath.Join(home, "vault", "x"), filepath.Join(home, "private"),
		} {
			for _, kind := range []Kind{Read, Write} {
				_, err := f.Resolve(context.Background(), p, kind)
				var se *sema.Error
				if !asSema(err, &se) || se.Code != CodeDenied {
					t.Errorf("face %v: Resolve(%s, %s) = %v, want %s", face != nil, p, kind, err, CodeDenied)
				}
			}
		}
		for _, c := range []string{filepath.Join(home, ".ssh", "id_rsa"), filepath.Join(dotfiles, "config"), filepath.Join(home, ".netrc")} {
			if !f.Denied(c) {
				t.Errorf("Denied(%s) = false", c)
			}
		}
		if !f.MayContainDenied(home) || !f.MayContainDenied(filepath.Join(home, ".ssh")) || f.MayContainDenied(root) {
			t.Errorf("MayContainDenied: home %v, ~/.ssh %v, root %v; want true, true, false",
				f.MayContainDenied(home), f.MayContainDenied(filepath.Join(home, ".ssh")), f.MayContainDenied(root))
		}
		if _, err := f.Resolve(context.Background(), filepath.Join(home, "notes.txt"), Read); err != nil {
			t.Errorf("a plain file in home was refused: %v", err)
		}
		os.RemoveAll(filepath.Join(home, ".aws"))
	}
	// Without a home, only absolute additions are judged.
	f, err := New(context.Background(), Config{Env: env.NewHost(), Root: root, AdditionalReadDirectories: []string{home}, Hidden: []string{filepath.Join(home, "vault"), "private"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Resolve(context.Background(), filepath.Join(home, ".ssh", "id_rsa"), Read); err != nil {
		t.Errorf("a fence without a home refused ~/.ssh: %v", err)
	}
	if _, err := f.Resolve(context.Background(), filepath.Join(home, "vault", "x"), Read); err == nil {
		t.Error("an absolute addition was not refused without a home")
	}
}

func asSema(err error, out **sema.Error) bool {
	se, ok := err.(*sema.Error)
	*out = se
	return ok
}
