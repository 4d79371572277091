package settingsload

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/settings"
)

// reader serves the files of a map and says which paths were asked for.
type reader struct {
	files map[string]string
	asked []string
}

func (r *reader) read(_ context.Context, path string) ([]byte, error) {
	r.asked = append(r.asked, path)
	if s, ok := r.files[path]; ok {
		return []byte(s), nil
	}
	return nil, fs.ErrNotExist
}

// The layers come back lowest first whatever order they were given in, and an absent
// workspace file is no error.
func TestLoadOrdersTheLayers(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r := &reader{files: map[string]string{filepath.Join(root, settings.ProjectFile): `{"model": "project"}`}}
	flag := settings.File{Layer: settings.Flag, Path: "flag.json"}
	user := settings.File{Layer: settings.User, Path: "user.json"}
	managed := settings.File{Path: "managed.json"}
	_, files, err := Load(context.Background(), Input{Files: []settings.File{flag, user}, Managed: &managed, Root: root, Read: r.read})
	if err != nil {
		t.Fatal(err)
	}
	var got []settings.Layer
	for _, f := range files {
		got = append(got, f.Layer)
	}
	if want := []settings.Layer{settings.User, settings.Project, settings.Flag, settings.Managed}; !slices.Equal(got, want) {
		t.Errorf("layers %v, want %v", got, want)
	}
}

// A deployment's file of a workspace layer is refused; a read that fails otherwise than
// by absence is returned as it is.
func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	_, _, err := Load(context.Background(), Input{Files: []settings.File{{Layer: settings.Project}}, Read: (&reader{}).read})
	var se *sema.Error
	if !errors.As(err, &se) || se.Code != settings.CodeSettingsInvalid {
		t.Errorf("a project file among the deployment's: %v", err)
	}
	boom := errors.New("boom")
	_, _, err = Load(context.Background(), Input{Root: t.TempDir(), Read: func(context.Context, string) ([]byte, error) { return nil, boom }})
	if !errors.Is(err, boom) {
		t.Errorf("a failed read: %v", err)
	}
}

// A trusted workspace's own claudeCompat reads Claude Code's files too; an untrusted
// one's does not.
func TestTrustedWorkspaceTurnsOnClaudeCompat(t *testing.T) {
	t.Parallel()
	for _, trust := range []bool{true, false} {
		root := t.TempDir()
		claude := filepath.Join(root, ".claude", "settings.json")
		r := &reader{files: map[string]string{filepath.Join(root, settings.ProjectFile): `{"claudeCompat": true}`}}
		merged, _, err := Load(context.Background(), Input{Trust: trust, Root: root, Read: r.read})
		if err != nil {
			t.Fatal(err)
		}
		if asked := slices.Contains(r.asked, claude); asked != trust {
			t.Errorf("trust %v: %s read: %v (asked %v)", trust, claude, asked, r.asked)
		}
		if merged.ClaudeCompat != trust {
			t.Errorf("trust %v: merged ClaudeCompat %v", trust, merged.ClaudeCompat)
		}
	}
}
