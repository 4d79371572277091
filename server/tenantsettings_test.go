package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/internal/pgtest"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/server"
	"github.com/sema-agent/sema/settings"
)

// TestTenantSettingsBindThatTenantOnly: the server's managed settings deny Write for
// everyone; tenant a's own managed settings deny Bash. a's task is refused both (its
// command never runs, its file is never written); b's task, under the server's file
// only, runs its command. Calibrated: without a's file, a's command ran.
func TestTenantSettingsBindThatTenantOnly(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		ctx := context.Background()
		server1, err := settings.Parse([]byte(`{"permissions":{"deny":["Write"]}}`), "managed-settings.json", settings.Managed)
		if err != nil {
			t.Fatal(err)
		}
		cfg := server.Config{Home: t.TempDir(), Poll: 20 * time.Millisecond, ManagedSettings: &server1,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if st == "postgres" {
			cfg.Postgres = pgtest.Schema(t)
		}
		bases := map[string]string{}
		var script scripted.Script
		for _, name := range []string{"a", "b"} {
			base, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			bases[name] = base
			touch, _ := json.Marshal(map[string]string{"command": "touch ran"})
			script.Threads = append(script.Threads, scripted.Thread{Match: "tenant-" + name, Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: touch}, writeCall(filepath.Join(base, "written"), "x")}},
				{Text: "done"},
			}})
		}
		p := scripted.New(script)
		cfg.OpenProvider = func(string) (model.Provider, string, error) { return p, "scripted", nil }
		srv, err := server.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(func() {
			hs.Close()
			srv.Shutdown(context.Background())
			srv.Close()
		})
		clients := map[string]*client.Client{}
		for name, base := range bases {
			tok, err := srv.CreateToken(ctx, name, base, server.TenantConfig{})
			if err != nil {
				t.Fatal(err)
			}
			clients[name] = client.New(hs.URL, tok)
		}
		if err := srv.SetTenantSettings(ctx, "a", "/etc/sema/tenants/a.json", []byte(`{"permissions":{"deny":["Bash"]}}`)); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a", "b"} {
			task, err := clients[name].SubmitTask(ctx, client.TaskSpec{Prompt: "tenant-" + name, Cwd: bases[name],
				PermissionMode: "acceptEdits", AllowedTools: []string{"Bash(touch:*)", "Write"}})
			if err != nil {
				t.Fatal(err)
			}
			waitStatus(t, clients[name], task.TaskID, "completed")
		}
		if _, err := os.Stat(filepath.Join(bases["a"], "ran")); !os.IsNotExist(err) {
			t.Errorf("tenant a's managed settings deny Bash, yet its command ran (%v)", err)
		}
		if _, err := os.Stat(filepath.Join(bases["b"], "ran")); err != nil {
			t.Errorf("tenant b's command did not run: a's settings reached it (%v)", err)
		}
		for name, base := range bases {
			if _, err := os.Stat(filepath.Join(base, "written")); !os.IsNotExist(err) {
				t.Errorf("the server's managed settings deny Write, yet tenant %s's file exists (%v)", name, err)
			}
		}
	})
}

// TestTenantSettingsRefused: a document that is not a managed settings file, and a
// tenant that does not exist, are refused by name; the tenant's file is unchanged.
func TestTenantSettingsRefused(t *testing.T) {
	f := newFixture(t, "sqlite", func(string) []scripted.Turn { return nil })
	ctx := context.Background()
	f.client(t, "a", f.base)
	good := []byte(`{"permissions":{"deny":["Bash"]}}`)
	if err := f.srv.SetTenantSettings(ctx, "a", "a.json", good); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.SetTenantSettings(ctx, "a", "a.json", []byte(`{"permissions":{"deny":"Bash"}}`)); sema.CodeOf(err) != settings.CodeSettingsInvalid {
		t.Errorf("a deny that is not a list: %v; want %s", err, settings.CodeSettingsInvalid)
	}
	if err := f.srv.SetTenantSettings(ctx, "nobody", "a.json", good); sema.CodeOf(err) != server.CodeTenantInvalid {
		t.Errorf("an unknown tenant: %v; want %s", err, server.CodeTenantInvalid)
	}
	if path, data, err := f.srv.TenantSettings(ctx, "a"); err != nil || path != "a.json" || string(data) != string(good) {
		t.Fatalf("tenant a's file after the refusals: %q %q %v", path, data, err)
	}
	if err := f.srv.SetTenantSettings(ctx, "a", "", nil); err != nil {
		t.Fatal(err)
	}
	if path, data, err := f.srv.TenantSettings(ctx, "a"); err != nil || path != "" || data != nil {
		t.Fatalf("tenant a's file after it was detached: %q %q %v", path, data, err)
	}
}
