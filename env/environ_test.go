package env_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
)

// The names people really give their secrets are held back; the variables programs need
// to work are kept. Both halves are the test: a rule that held everything would pass the
// first alone.
func TestClassifyNames(t *testing.T) {
	t.Parallel()
	held := map[string]env.Reason{
		"ANTHROPIC_API_KEY": env.HeldProviderKey, "ANTHROPIC_AUTH_TOKEN": env.HeldProviderKey,
		"OPENAI_API_KEY": env.HeldProviderKey, "anthropic_api_key": env.HeldProviderKey,
		"SSH_AUTH_SOCK": env.HeldSocket, "GPG_AGENT_INFO": env.HeldSocket,
		"AWS_ACCESS_KEY_ID": env.HeldName, "AWS_SECRET_ACCESS_KEY": env.HeldName, "AWS_SESSION_TOKEN": env.HeldName,
		"GITHUB_TOKEN": env.HeldName, "GH_TOKEN": env.HeldName, "GITHUB_PAT": env.HeldName, "NPM_TOKEN": env.HeldName,
		"NODE_AUTH_TOKEN": env.HeldName, "HF_TOKEN": env.HeldName, "HUGGING_FACE_HUB_TOKEN": env.HeldName,
		"DOCKER_PASSWORD": env.HeldName, "PGPASSWORD": env.HeldName, "MYSQL_PWD": env.HeldName, "VAULT_TOKEN": env.HeldName,
		"SLACK_WEBHOOK_URL": env.HeldName, "GOOGLE_APPLICATION_CREDENTIALS": env.HeldName, "AZURE_CLIENT_SECRET": env.HeldName,
		"GOOGLE_API_KEY": env.HeldName, "GEMINI_API_KEY": env.HeldName, "MISTRAL_API_KEY": env.HeldName,
		"STRIPE_SECRET_KEY": env.HeldName, "SENTRY_AUTH_TOKEN": env.HeldName, "CI_JOB_TOKEN": env.HeldName,
		"CARGO_REGISTRY_TOKEN": env.HeldName, "TWINE_PASSWORD": env.HeldName, "NPM_CONFIG__AUTH": env.HeldName,
		"REDISCLI_AUTH": env.HeldName, "AUTH_HEADER": env.HeldName, "DOCKER_AUTH_CONFIG": env.HeldName,
		"SMTP_PASS": env.HeldName, "DB_PASSWD": env.HeldName, "GPG_PASSPHRASE": env.HeldName, "MY_SERVICE_PASSWORD": env.HeldName,
		"JWT_SIGNING_KEY": env.HeldName, "SSH_PRIVATE_KEY": env.HeldName, "APIKEY": env.HeldName, "myapp_apikey": env.HeldName,
		"OP_SESSION_my": env.HeldName, "BW_SESSION": env.HeldName, "AZURE_STORAGE_CONNECTION_STRING": env.HeldName,
		"DISCORD_WEBHOOK": env.HeldName, "GOOGLE_CREDS": env.HeldName, "x_secret_y": env.HeldName, "GPG_KEY_ID": env.HeldName,
		"TOKEN": env.HeldName, "SECRET": env.HeldName, "PASSWORD": env.HeldName, "ERLANG_COOKIE": env.HeldName,
	}
	for name, want := range held {
		if got := env.Classify(name, "plain"); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "SHELL", "PWD", "OLDPWD", "TMPDIR",
		"GOPATH", "GOFLAGS", "GOCACHE", "CARGO_HOME", "NODE_OPTIONS", "VIRTUAL_ENV", "JAVA_HOME", "EDITOR", "PAGER",
		"TOKENIZERS_PARALLELISM", "KEYBOARD_LAYOUT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0", "GIT_CONFIG_COUNT",
		"SSH_ASKPASS", "GIT_ASKPASS", "AZURE_CLIENT_ID", "AWS_REGION", "AWS_PROFILE", "DOCKER_HOST", "KUBECONFIG",
		"XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "XDG_SESSION_TYPE", "DESKTOP_SESSION", "HISTFILE", "CI", "GITHUB_ACTIONS",
		"PASSENGER_APP_ENV", "SEMA_HOME", "SEMA_MODEL", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"} {
		if got := env.Classify(name, "/usr/local/bin:/usr/bin"); got != "" {
			t.Errorf("%s is held back (%s); programs need it", name, got)
		}
	}
}

// Values shaped like credentials are held back whatever the name; ordinary values are
// not, including ones that look a little like a key (a path with "sk-" in it, a URL
// with a user and no password, a port).
func TestClassifyValues(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		"postgres://u:p@h/db", "mysql://root:hunter2@127.0.0.1:3306/app", "redis://:s3cret@cache:6379/0",
		"https://user:tok@github.com/org/repo.git", "amqp://guest:guest@rabbit//",
		"sk-ant-api03-abcdefghijklmnop", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
		"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "github_pat_11ABCDEFG0123456789_abcdefghijkl",
		"glpat-abcdefghij0123456789", "xoxb-123456789012-abcdefghij", "xoxp-1234-5678-abcdefghij",
		"AKIAIOSFODNN7EXAMPLE", "--key AKIAIOSFODNN7EXAMPLE", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
		"npm_abcdefghijklmnopqrstuvwxyz0123456789", "sk_live_abcdefghijklmnop", "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc",
		"https://hooks.slack.com/services/T000/B000/XXXX", "AUTHORIZATION: basic dXNlcjpwYXNz",
		"Server=db;Database=x;User Id=sa;Password=hunter2;", "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc==;",
	} {
		if got := env.Classify("INNOCENT_NAME", v); got != env.HeldValue {
			t.Errorf("%q: %q, want %q", v, got, env.HeldValue)
		}
	}
	for _, v := range []string{
		"", "/usr/local/bin:/usr/bin:/bin", "en_US.UTF-8", "xterm-256color", "https://example.com/a@b",
		"ssh://git@github.com:22/org/repo", "git@github.com:org/repo.git", "http://proxy.local:8080", "/opt/sk-tools/bin",
		"disk-usage-monitor-service-with-a-long-name", "sk_SK.UTF-8", "rs=0:di=01;34:ln=01;36", "-X main.version=1.2.3",
		"https://user@example.com/", "ghost", "AKIA", "key=value", "--password-file=/run/secrets/x",
	} {
		if got := env.Classify("INNOCENT_NAME", v); got != "" {
			t.Errorf("%q is held back (%s)", v, got)
		}
	}
}

// A pass-through list keeps exact names and NAME_* prefixes; an invalid entry and one
// naming a provider's key are refused by name with their codes.
func TestParsePassthrough(t *testing.T) {
	t.Parallel()
	p, err := env.ParsePassthrough([]string{"GITHUB_TOKEN", "MYAPP_*", "ANTHROPIC_*"}, "")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"GITHUB_TOKEN": true, "github_token": false, "GITHUB_TOKEN_2": false,
		"MYAPP_": true, "MYAPP_SECRET": true, "MYAPPX": false, "ANTHROPIC_API_KEY": true} {
		if p.Keeps(name) != want {
			t.Errorf("Keeps(%s) = %v", name, !want)
		}
	}
	// A prefix may name a provider's key; Inherit still holds it (below).
	in := env.Inherit([]string{"ANTHROPIC_API_KEY=sk-ant-x", "ANTHROPIC_LOG=debug", "MYAPP_SECRET=s", "GITHUB_TOKEN=t"}, p)
	if !slices.Equal(in.Held, []string{"ANTHROPIC_API_KEY"}) {
		t.Fatalf("held %q", in.Held)
	}
	cases := []struct {
		entry, code string
	}{
		{"", env.CodeEnvPassthroughInvalid},
		{"A=B", env.CodeEnvPassthroughInvalid},
		{"*", env.CodeEnvPassthroughInvalid},
		{"A*B", env.CodeEnvPassthroughInvalid},
		{"*_TOKEN", env.CodeEnvPassthroughInvalid},
		{"A**", env.CodeEnvPassthroughInvalid},
		{"A?", env.CodeEnvPassthroughInvalid},
		{"A[B]", env.CodeEnvPassthroughInvalid},
		{"A B", env.CodeEnvPassthroughInvalid},
		{"A\tB", env.CodeEnvPassthroughInvalid},
		{"ANTHROPIC_API_KEY", env.CodeEnvPassthroughRefused},
		{"OPENAI_API_KEY", env.CodeEnvPassthroughRefused},
		{"ANTHROPIC_AUTH_TOKEN", env.CodeEnvPassthroughRefused},
		{"anthropic_api_key", env.CodeEnvPassthroughRefused},
	}
	for _, c := range cases {
		_, err := env.ParsePassthrough([]string{"OK", c.entry}, "--env-passthrough")
		if !sema.IsCode(err, c.code) {
			t.Errorf("%q: %v, want %s", c.entry, err, c.code)
			continue
		}
		if !strings.Contains(err.Error(), "--env-passthrough") || !strings.Contains(err.Error(), strconv.Quote(c.entry)) {
			t.Errorf("%q: the refusal does not name the entry and its origin: %v", c.entry, err)
		}
	}
}

// Inherit keeps the environment's order and what the rule keeps; it names what it held,
// sorted, once; a held git config pair takes its whole group, so git still starts.
func TestInherit(t *testing.T) {
	t.Parallel()
	in := env.Inherit([]string{"PATH=/bin", "GITHUB_TOKEN=a", "HOME=/h", "DATABASE_URL=postgres://u:p@h/db", "GITHUB_TOKEN=b",
		"LANG=C", "SSH_AUTH_SOCK=/s", "ANTHROPIC_API_KEY=sk-ant-zzzzzzzzzz"}, env.Passthrough{})
	if want := []string{"PATH=/bin", "HOME=/h", "LANG=C"}; !slices.Equal(in.Env, want) {
		t.Fatalf("kept %q, want %q", in.Env, want)
	}
	if want := []string{"ANTHROPIC_API_KEY", "DATABASE_URL", "GITHUB_TOKEN", "SSH_AUTH_SOCK"}; !slices.Equal(in.Held, want) {
		t.Fatalf("held %q, want %q", in.Held, want)
	}
	if in.Why["DATABASE_URL"] != env.HeldValue || in.Why["ANTHROPIC_API_KEY"] != env.HeldProviderKey {
		t.Fatalf("why %v", in.Why)
	}

	gitcfg := []string{"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*",
		"GIT_CONFIG_KEY_1=http.extraheader", "GIT_CONFIG_VALUE_1=AUTHORIZATION: bearer abcdef", "PATH=/bin"}
	in = env.Inherit(gitcfg, env.Passthrough{})
	if !slices.Equal(in.Env, []string{"PATH=/bin"}) || len(in.Held) != 5 {
		t.Fatalf("a held git config pair left %q (held %q)", in.Env, in.Held)
	}
	in = env.Inherit(gitcfg[:3], env.Passthrough{})
	if len(in.Held) != 0 {
		t.Fatalf("harmless git config held: %q", in.Held)
	}
}

// fakeSecrets are the shared fake secrets (envtest.FakeSecrets).
var fakeSecrets = envtest.FakeSecrets

func setSecrets(t *testing.T) {
	for k, v := range fakeSecrets {
		t.Setenv(k, v)
	}
}

// runEnv starts a program on the host the way every tool does and returns its output.
func runEnv(t *testing.T, script string, pass []string) string {
	t.Helper()
	out := &lockedBuffer{}
	p, err := env.NewHost().Start(context.Background(), env.ExecRequest{Argv: []string{"/bin/sh", "-c", script},
		Dir: t.TempDir(), Stdout: out, Stderr: out, Passthrough: pass, Env: []string{"GIVEN_TOKEN=given-on-purpose"}})
	if err != nil {
		t.Fatal(err)
	}
	finish(t, p)
	return out.String()
}

// A program the host starts inherits none of the fake secrets, in any way it can look:
// calibrated by the same program with a pass-through naming them, which shows every one
// but the provider keys. What the request sets itself is given.
func TestHostStartHoldsSecretsBack(t *testing.T) {
	setSecrets(t)
	var names []string
	for k := range fakeSecrets {
		if k != "ANTHROPIC_API_KEY" && k != "OPENAI_API_KEY" {
			names = append(names, k)
		}
	}
	for _, script := range []string{"env", "cat /proc/self/environ | tr '\\0' '\\n'", "export -p", "set",
		`for v in ANTHROPIC_API_KEY OPENAI_API_KEY GITHUB_TOKEN MY_SERVICE_PASSWORD DATABASE_URL AWS_SECRET_ACCESS_KEY DEPLOY_NOTE SSH_AUTH_SOCK; do eval "echo \$$v"; done; echo $GIVEN_TOKEN`} {
		free := runEnv(t, script, append(names, "ANTHROPIC_*", "OPENAI_*"))
		scrubbed := runEnv(t, script, nil)
		for k, v := range fakeSecrets {
			marker := v[strings.Index(v, "MARKER"):][:7]
			provider := k == "ANTHROPIC_API_KEY" || k == "OPENAI_API_KEY"
			if !provider && !strings.Contains(free, marker) {
				t.Errorf("calibration: %q with %s passed through does not show it:\n%s", script, k, free)
			}
			if strings.Contains(scrubbed, marker) || provider && strings.Contains(free, marker) {
				t.Errorf("%q showed %s", script, k)
			}
		}
		if !strings.Contains(scrubbed, "given-on-purpose") {
			t.Errorf("%q lost the request's own variable:\n%s", script, scrubbed)
		}
	}
	if _, err := env.NewHost().Start(context.Background(), env.ExecRequest{Argv: []string{"true"}, Dir: "/",
		Passthrough: []string{"OPENAI_API_KEY"}}); !sema.IsCode(err, env.CodeEnvPassthroughRefused) {
		t.Fatalf("a pass-through of the provider key started: %v", err)
	}
}

// The classifier never panics, and a provider's key is held back whatever its value and
// whatever pass-through list was accepted.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"", "=", "A=B", "postgres://u:p@h/db", "sk-ant-x", "ANTHROPIC_*", "*", "ghp_\x00",
		"a://:@", "\xff\xfe", "GIT_CONFIG_KEY_0", "-----BEGIN PRIVATE KEY-----", "Password=;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, value, _ := strings.Cut(s, "=")
		env.Classify(name, value)
		env.Classify(s, s)
		pass, err := env.ParsePassthrough([]string{s}, "")
		if err != nil {
			pass = env.Passthrough{}
		}
		for _, k := range env.ProviderKeys() {
			if env.Classify(k, s) != env.HeldProviderKey {
				t.Fatalf("%s=%q is not held as a provider key", k, s)
			}
			in := env.Inherit([]string{k + "=" + s, s, "PATH=/bin"}, pass)
			if _, ok := in.Why[k]; !ok {
				t.Fatalf("%s kept with pass-through %q", k, s)
			}
			for _, kv := range in.Env {
				if strings.HasPrefix(kv, k+"=") {
					t.Fatalf("%s inherited with pass-through %q", k, s)
				}
			}
		}
	})
}

func BenchmarkInherit(b *testing.B) {
	environ := os.Environ()
	for k, v := range fakeSecrets {
		environ = append(environ, k+"="+v)
	}
	for b.Loop() {
		env.Inherit(environ, env.Passthrough{})
	}
}

func BenchmarkHostBaseEnviron(b *testing.B) {
	for k, v := range fakeSecrets {
		b.Setenv(k, v)
	}
	for b.Loop() {
		env.BaseEnviron(env.ExecRequest{Dir: "/"})
	}
}
