package mcp

import (
	"context"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
)

// envSecrets are the shared fake secrets (envtest.FakeSecrets).
var envSecrets = envtest.FakeSecrets

func isProvider(name string) bool { return name == "ANTHROPIC_API_KEY" || name == "OPENAI_API_KEY" }

// A stdio server inherits none of sema's secrets — by name (getenv) or in the kernel's
// copy of its environment — unless a pass-through names them (the calibration: then it
// sees every one but the provider keys); what its own configured env sets it gets.
func TestStdioServerEnvironmentIsScrubbed(t *testing.T) {
	var pass []string
	for k, v := range envSecrets {
		t.Setenv(k, v)
		if !isProvider(k) {
			pass = append(pass, k)
		}
	}
	srv := stdioServer(t, "x", "")
	srv.Env["GIVEN_TOKEN"] = "given-on-purpose"
	scrubbed, _ := mount(t, []Server{srv}, Options{})
	free, _ := mount(t, []Server{srv}, Options{EnvPassthrough: append(pass, "ANTHROPIC_*", "OPENAI_*")})
	whole := func(m *Mount) string { return call(t, m, "mcp__x__environ", `{}`).TextOf() }
	for k, v := range envSecrets {
		marker := v[strings.Index(v, "MARKER"):][:7]
		if !isProvider(k) {
			wantText(t, call(t, free, "mcp__x__getenv", `{"name":"`+k+`"}`), v)
			if !strings.Contains(whole(free), marker) {
				t.Fatalf("calibration: %s passed through is not in the server's environment", k)
			}
		} else {
			wantText(t, call(t, free, "mcp__x__getenv", `{"name":"`+k+`"}`), "<unset>")
		}
		wantText(t, call(t, scrubbed, "mcp__x__getenv", `{"name":"`+k+`"}`), "<unset>")
		if strings.Contains(whole(scrubbed), marker) {
			t.Fatalf("the server's environment holds %s", k)
		}
	}
	wantText(t, call(t, scrubbed, "mcp__x__getenv", `{"name":"GIVEN_TOKEN"}`), "given-on-purpose")
	if !strings.Contains(whole(scrubbed), "PATH=") {
		t.Fatal("the server lost PATH")
	}

	for _, bad := range [][]string{{"OPENAI_API_KEY"}, {"A=B"}, {"*"}} {
		if _, err := Start(context.Background(), []Server{srv}, Options{EnvPassthrough: bad}); !sema.IsCode(err, env.CodeEnvPassthroughRefused) && !sema.IsCode(err, env.CodeEnvPassthroughInvalid) {
			t.Fatalf("EnvPassthrough %q: %v", bad, err)
		}
	}
}
