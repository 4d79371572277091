package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/settings"
)

// CodeRuleNotSaved: a rule of "allow always" could not be written to the settings file
// the person chose; it stays in force for the session.
const CodeRuleNotSaved = "rule_not_saved"

// ruleScope is where the rule of "allow always" is kept beyond the session.
type ruleScope int

const (
	scopeLocal   ruleScope = iota // the project's file of one person
	scopeProject                  // the project's shared file
	scopeUser                     // the person's file under home: every project
)

// The files, as the settings package names them.
const (
	localFile   = settings.LocalFile
	projectFile = settings.ProjectFile
	userFile    = settings.UserFile
)

// saveRule merges rule into permissions.allow of the scope's settings file and says
// which file it went to. Every other key of the file is kept as it was; a rule already
// there is not added twice; a file that is not a JSON object is refused and nothing is
// written. The file is read and replaced without following a symlink at its name, and a
// project's .sema directory must resolve inside the project, so a cloned repository
// cannot steer the write elsewhere. A new file is 0600, or 0644 when it is the project's
// shared one; an existing file keeps its mode.
func saveRule(scope ruleScope, root, home, rule string) (string, error) {
	base, rel, perm := root, localFile, fs.FileMode(0o600)
	switch scope {
	case scopeProject:
		rel, perm = projectFile, 0o644
	case scopeUser:
		base, rel = home, userFile
	}
	if base == "" {
		return "", notSaved(rule, "", "there is no directory to keep it in (no project root or home directory)")
	}
	dir, err := settingsDir(base, filepath.Dir(rel), scope == scopeUser)
	if err != nil {
		return "", notSaved(rule, filepath.Join(base, rel), err.Error())
	}
	path := filepath.Join(dir, filepath.Base(rel))
	data, err := readNoFollow(path)
	if err != nil {
		return "", notSaved(rule, path, err.Error())
	}
	out, err := mergeAllow(data, rule)
	if err != nil {
		return "", notSaved(rule, path, err.Error())
	}
	if out == nil {
		return path, nil // already there
	}
	if err := (&env.Host{}).WriteFile(context.Background(), path, out, perm); err != nil {
		return "", notSaved(rule, path, err.Error())
	}
	return path, nil
}

func notSaved(rule, path, why string) error {
	where := ""
	if path != "" {
		where = " in " + path
	}
	return &sema.Error{Code: CodeRuleNotSaved, Message: "the rule " + rule + " was not saved" + where + ": " + why +
		"; it stays allowed for this session (fix the file and allow it always again to keep it)"}
}

// settingsDir makes base/sub (the .sema directory) and returns it with its symlinks
// resolved. A project's directory must stay inside the project once resolved; the one
// under home may be a link (dotfiles often are).
func settingsDir(base, sub string, home bool) (string, error) {
	mode := fs.FileMode(0o755)
	if home {
		mode = 0o700
	}
	rbase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(rbase, sub)
	if err := os.MkdirAll(dir, mode); err != nil {
		return "", err
	}
	rdir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if !home && !fence.Contains(rbase, rdir) {
		return "", errors.New(sub + " leads outside the project (to " + rdir + "); it is not followed")
	}
	return rdir, nil
}

// readNoFollow reads path without following a symlink at its name; a missing file reads
// as nothing.
func readNoFollow(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, errors.New("the file is a symlink; it is not followed")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// mergeAllow adds rule to permissions.allow of the JSON object data (empty reads as
// {}) and returns the new document, or nil when the rule is there already. Every key
// keeps its value; the document is re-indented with its keys in order.
func mergeAllow(data []byte, rule string) ([]byte, error) {
	doc := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &doc); err != nil || doc == nil {
			return nil, errors.New("the file is not a JSON object (" + jsonWhy(err) + "); nothing was written")
		}
	}
	perms := map[string]json.RawMessage{}
	if raw, ok := doc["permissions"]; ok && !isJSONNull(raw) {
		if err := json.Unmarshal(raw, &perms); err != nil || perms == nil {
			return nil, errors.New(`its "permissions" is not an object; nothing was written`)
		}
	}
	var allow []string
	if raw, ok := perms["allow"]; ok && !isJSONNull(raw) {
		if err := json.Unmarshal(raw, &allow); err != nil {
			return nil, errors.New(`its "permissions.allow" is not a list of rules; nothing was written`)
		}
	}
	if slices.Contains(allow, rule) {
		return nil, nil
	}
	var err error
	if perms["allow"], err = plainJSON(append(allow, rule), ""); err != nil {
		return nil, err
	}
	if doc["permissions"], err = plainJSON(perms, ""); err != nil {
		return nil, err
	}
	return plainJSON(doc, "  ")
}

// plainJSON encodes v without escaping <, > and & (a rule like Bash(a && b) stays
// readable in the file), indented when indent is set.
func plainJSON(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func jsonWhy(err error) string {
	if err == nil {
		return "null"
	}
	return err.Error()
}

func isJSONNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }
