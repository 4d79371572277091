package settings

import (
	"slices"
	"testing"

	"github.com/sema-agent/sema"
)

// TestSandboxSocketsAndSharedCaches: sandbox.sockets is a list of absolute or "~/" paths
// and sandbox.sharedCaches a boolean; both widen, so an untrusted workspace may not set
// them (a workspace's false still applies: it tightens), and a trusted layer's word
// holds over a lower one's.
func TestSandboxSocketsAndSharedCaches(t *testing.T) {
	t.Parallel()
	st, err := Parse([]byte(`{"sandbox": {"sockets": ["/run/postgresql/.s.PGSQL.5432", "~/.docker/run/docker.sock"], "sharedCaches": true}}`), "s.json", User)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Sandbox.Sockets, []string{"/run/postgresql/.s.PGSQL.5432", "~/.docker/run/docker.sock"}) || st.Sandbox.SharedCaches == nil || !*st.Sandbox.SharedCaches {
		t.Fatalf("parsed %+v", st.Sandbox)
	}
	for _, doc := range []string{
		`{"sandbox": {"sockets": ["run/db.sock"]}}`,
		`{"sandbox": {"sockets": "/run/db.sock"}}`,
		`{"sandbox": {"sharedCaches": "yes"}}`,
	} {
		if _, err := Parse([]byte(doc), "s.json", User); sema.CodeOf(err) != CodeSettingsInvalid {
			t.Errorf("%s: err %v, want %s", doc, err, CodeSettingsInvalid)
		}
	}

	user := mustParse(t, `{"sandbox": {"sockets": ["/run/a.sock"], "sharedCaches": true}}`, "/u.json", User)
	widen := mustParse(t, `{"sandbox": {"sockets": ["/var/run/docker.sock"], "sharedCaches": true}}`, "/r/.sema/settings.json", Project)
	m := Merge([]File{user, widen}, MergeOptions{Root: "/r"})
	if !slices.Equal(m.Sandbox.Sockets, []string{"/run/a.sock"}) || m.Sandbox.SharedCaches == nil || !*m.Sandbox.SharedCaches {
		t.Errorf("untrusted workspace: sandbox %+v, want the user's socket and word only", m.Sandbox)
	}
	for _, want := range []string{"sandbox.sockets", "sandbox.sharedCaches"} {
		if !slices.Contains(m.Applied[1].Dropped, want) {
			t.Errorf("dropped %v lacks %s", m.Applied[1].Dropped, want)
		}
	}
	tighten := mustParse(t, `{"sandbox": {"sharedCaches": false}}`, "/r/.sema/settings.json", Project)
	if m := Merge([]File{user, tighten}, MergeOptions{Root: "/r"}); m.Sandbox.SharedCaches == nil || *m.Sandbox.SharedCaches {
		t.Errorf("an untrusted workspace's sharedCaches false did not apply: %+v", m.Sandbox)
	}
	if m := Merge([]File{user, widen}, MergeOptions{Root: "/r", TrustWorkspace: true}); !slices.Equal(m.Sandbox.Sockets, []string{"/run/a.sock", "/var/run/docker.sock"}) {
		t.Errorf("trusted workspace: sockets %v", m.Sandbox.Sockets)
	}
	managed := mustParse(t, `{"sandbox": {"sharedCaches": false}}`, "/etc/sema/managed.json", Managed)
	if m := Merge([]File{user, managed}, MergeOptions{}); m.ManagedSandbox.SharedCaches == nil || *m.ManagedSandbox.SharedCaches || *m.Sandbox.SharedCaches {
		t.Errorf("managed false: sandbox %+v managed %+v", m.Sandbox, m.ManagedSandbox)
	}
}
