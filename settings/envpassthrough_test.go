package settings

import (
	"slices"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// envPassthrough is a list of names and NAME_* prefixes; anything else is refused by
// name, with the file named, and a provider's key with its own code.
func TestSettingsEnvPassthrough(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(`{"envPassthrough": ["GITHUB_TOKEN", "MYAPP_*"]}`), "/u/settings.json", User)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.EnvPassthrough, []string{"GITHUB_TOKEN", "MYAPP_*"}) {
		t.Fatalf("parsed %q", f.EnvPassthrough)
	}
	for doc, code := range map[string]string{
		`{"envPassthrough": "GITHUB_TOKEN"}`:        CodeSettingsInvalid,
		`{"envPassthrough": [1]}`:                   CodeSettingsInvalid,
		`{"envPassthrough": [""]}`:                  env.CodeEnvPassthroughInvalid,
		`{"envPassthrough": ["A=B"]}`:               env.CodeEnvPassthroughInvalid,
		`{"envPassthrough": ["*"]}`:                 env.CodeEnvPassthroughInvalid,
		`{"envPassthrough": ["*_TOKEN"]}`:           env.CodeEnvPassthroughInvalid,
		`{"envPassthrough": ["A?B"]}`:               env.CodeEnvPassthroughInvalid,
		`{"envPassthrough": ["ANTHROPIC_API_KEY"]}`: env.CodeEnvPassthroughRefused,
		`{"envPassthrough": ["OPENAI_API_KEY"]}`:    env.CodeEnvPassthroughRefused,
		`{"env_passthrough": ["X"]}`:                CodeSpecUnknownKey,
	} {
		_, err := Parse([]byte(doc), "/u/settings.json", User)
		if sema.CodeOf(err) != code {
			t.Errorf("%s: err %v, want %s", doc, err, code)
		} else if !strings.Contains(err.Error(), "/u/settings.json") {
			t.Errorf("%s: the refusal does not name the file: %v", doc, err)
		}
	}
}

// The layers' lists add up; an untrusted workspace's file may not widen the list, and
// the manifest says it was dropped.
func TestMergeEnvPassthroughTrust(t *testing.T) {
	t.Parallel()
	files := []File{
		{Path: "/u", Layer: User, EnvPassthrough: []string{"GITHUB_TOKEN"}},
		{Path: "/w/.sema/settings.json", Layer: Project, EnvPassthrough: []string{"AWS_*", "GITHUB_TOKEN"}},
		{Path: "/f", Layer: Flag, EnvPassthrough: []string{"NPM_TOKEN"}},
	}
	m := Merge(files, MergeOptions{})
	if !slices.Equal(m.EnvPassthrough, []string{"GITHUB_TOKEN", "NPM_TOKEN"}) {
		t.Fatalf("untrusted: %q", m.EnvPassthrough)
	}
	if a := m.Applied[1]; a.Trusted || !slices.Contains(a.Dropped, "envPassthrough") {
		t.Fatalf("untrusted workspace file applied as %+v", a)
	}
	m = Merge(files, MergeOptions{TrustWorkspace: true})
	if !slices.Equal(m.EnvPassthrough, []string{"GITHUB_TOKEN", "AWS_*", "NPM_TOKEN"}) {
		t.Fatalf("trusted: %q", m.EnvPassthrough)
	}
}
