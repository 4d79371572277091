package settings

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
)

// CodeTrustInvalid refuses a trust record that cannot be read or written, or a
// workspace that is not a directory.
const CodeTrustInvalid = "config.trust_invalid"

// TrustFile is the record of trusted workspaces, in the state directory.
const TrustFile = "trusted-workspaces.json"

// Trust is the operator's record of the workspaces whose own settings (hooks, allow
// rules, environment, MCP servers) apply: a directory and everything below it. It lives
// in sema's state directory, which no tool can write, so a run cannot trust its own
// workspace.
type Trust struct{ path string }

// OpenTrust is the record kept in the state directory dir.
func OpenTrust(dir string) Trust { return Trust{path: filepath.Join(dir, TrustFile)} }

type trustDoc struct {
	Workspaces []string `json:"workspaces"`
}

// List returns the trusted directories, sorted.
func (t Trust) List() ([]string, error) {
	data, err := os.ReadFile(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		if hf := sema.HostFault(err, "read the trust record "+t.path); hf != nil {
			return nil, hf.With("path", t.path)
		}
		return nil, sema.Errorf(CodeTrustInvalid, "cannot read the trust record %s: %w", t.path, err).With("path", t.path)
	}
	var doc trustDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, sema.Errorf(CodeTrustInvalid, "the trust record %s is not {\"workspaces\": [...]}: %v; fix or remove it", t.path, err).With("path", t.path)
	}
	slices.Sort(doc.Workspaces)
	return doc.Workspaces, nil
}

// Trusted reports whether root, or a directory above it, is trusted.
func (t Trust) Trusted(root string) (bool, error) {
	list, err := t.List()
	if err != nil || len(list) == 0 {
		return false, err
	}
	dir, err := canonicalDir(root)
	if err != nil {
		return false, err
	}
	for _, w := range list {
		if dir == w || strings.HasPrefix(dir, strings.TrimSuffix(w, "/")+"/") {
			return true, nil
		}
	}
	return false, nil
}

// Add trusts dir (made canonical) and returns it.
func (t Trust) Add(dir string) (string, error) {
	dir, err := canonicalDir(dir)
	if err != nil {
		return "", err
	}
	list, err := t.List()
	if err != nil {
		return "", err
	}
	if !slices.Contains(list, dir) {
		list = append(list, dir)
	}
	return dir, t.write(list)
}

// Remove stops trusting dir and reports whether it was trusted by name.
func (t Trust) Remove(dir string) (bool, error) {
	if c, err := canonicalDir(dir); err == nil {
		dir = c
	}
	list, err := t.List()
	if err != nil {
		return false, err
	}
	i := slices.Index(list, dir)
	if i < 0 {
		return false, nil
	}
	return true, t.write(slices.Delete(list, i, i+1))
}

func (t Trust) write(list []string) error {
	slices.Sort(list)
	data, _ := json.MarshalIndent(trustDoc{Workspaces: list}, "", "  ")
	if err := os.MkdirAll(filepath.Dir(t.path), 0o700); err != nil {
		return sema.Errorf(CodeTrustInvalid, "cannot write the trust record %s: %w", t.path, err).With("path", t.path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(t.path), ".trust-*")
	if err == nil {
		_, err = tmp.Write(append(data, '\n'))
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), t.path)
		}
		if err != nil {
			os.Remove(tmp.Name())
		}
	}
	if err != nil {
		return sema.Errorf(CodeTrustInvalid, "cannot write the trust record %s: %w", t.path, err).With("path", t.path)
	}
	return nil
}

// canonicalDir is dir absolute with its symbolic links resolved; it must be a directory.
func canonicalDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = os.Stat(abs)
	}
	if err == nil && !fi.IsDir() {
		err = errors.New("not a directory")
	}
	if err != nil {
		return "", sema.Errorf(CodeTrustInvalid, "%s cannot be trusted: %v; name a directory that exists", dir, err).With("path", dir)
	}
	return abs, nil
}
