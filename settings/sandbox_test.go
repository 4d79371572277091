package settings

import (
	"slices"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/sandbox"
)

func TestSettingsSandboxMember(t *testing.T) {
	t.Parallel()
	st, err := Parse([]byte(`{"sandbox": {"mode": "on", "network": "off", "writable": ["~/.cache/bazel"], "readable": ["/opt/sdk"], "hidden": ["~/.config/secrets"]}}`), "s.json", User)
	if err != nil {
		t.Fatal(err)
	}
	sb := st.Sandbox
	if sb.Mode != sandbox.ModeOn || sb.Network != "off" || !slices.Equal(sb.Writable, []string{"~/.cache/bazel"}) ||
		!slices.Equal(sb.Readable, []string{"/opt/sdk"}) || !slices.Equal(sb.Hidden, []string{"~/.config/secrets"}) {
		t.Fatalf("parsed %+v", sb)
	}
	for doc, code := range map[string]string{
		`{"sandbox": {"enabled": 1}}`:              CodeSettingsInvalid,
		`{"sandbox": {"enable": true}}`:            CodeSpecUnknownKey,
		`{"sandbox": {"mode": "strict"}}`:          sandbox.CodeModeInvalid,
		`{"sandbox": {"network": "maybe"}}`:        sandbox.CodeNetworkInvalid,
		`{"sandbox": {"writable": ["build/out"]}}`: CodeSettingsInvalid,
		`{"sandbox": {"hidden": "~/.x"}}`:          CodeSettingsInvalid,
		`{"sandbox": []}`:                          CodeSettingsInvalid,
	} {
		if _, err := Parse([]byte(doc), "s.json", User); sema.CodeOf(err) != code {
			t.Errorf("%s: err %v, want %s", doc, err, code)
		}
	}
}
