package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/sandbox"
)

// remoteExec can run programs but is not this machine's host env: the sandbox cannot
// confine what it starts.
type remoteExec struct{ *env.Host }

func TestSandboxSeatsAreCheckedAtTheDoor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		deps func(*agent.Deps)
		spec func(*agent.TaskSpec)
		code string
	}{
		{"unknown deployment word", func(d *agent.Deps) { d.Shell = &agent.ShellOptions{Sandbox: "always"} }, nil, sandbox.CodeModeInvalid},
		{"unknown task word", nil, func(s *agent.TaskSpec) { s.Sandbox = "On" }, sandbox.CodeModeInvalid},
		{"unknown network word", func(d *agent.Deps) { d.Shell = &agent.ShellOptions{SandboxNetwork: "yes"} }, nil, sandbox.CodeNetworkInvalid},
		{"task turns off the deployment's sandbox", func(d *agent.Deps) { d.Shell = &agent.ShellOptions{Sandbox: sandbox.ModeOn} }, func(s *agent.TaskSpec) { s.Sandbox = sandbox.ModeOff }, sandbox.CodeLoosened},
		{"task opens the deployment's closed network", func(d *agent.Deps) { d.Shell = &agent.ShellOptions{SandboxNetwork: "off"} }, func(s *agent.TaskSpec) { s.SandboxNetwork = "on" }, sandbox.CodeLoosened},
		{"on where the env cannot be confined", func(d *agent.Deps) {
			d.Shell = &agent.ShellOptions{Sandbox: sandbox.ModeOn}
			d.Env = remoteExec{env.NewHost()}
		}, nil, sandbox.CodeUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			deps := agent.Deps{Provider: scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "done"}}})}
			if c.deps != nil {
				c.deps(&deps)
			}
			sp := spec(t)
			if c.spec != nil {
				c.spec(&sp)
			}
			_, err := agent.New(deps).Run(context.Background(), sp)
			if sema.CodeOf(err) != c.code {
				t.Fatalf("err %v, want %s", err, c.code)
			}
		})
	}
}

func TestSandboxInTheManifest(t *testing.T) {
	t.Parallel()
	run := func(deps agent.Deps, sp agent.TaskSpec) *agent.TaskResult {
		deps.Provider = scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "done"}}})
		res, err := agent.New(deps).Run(context.Background(), sp)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// auto on an env that cannot be confined: the run goes on, and says so.
	res := run(agent.Deps{Env: remoteExec{env.NewHost()}}, spec(t))
	sb := res.Manifest.Shell.Sandbox
	if sb.Enforced || sb.Mode != sandbox.ModeAuto || sb.Reason == "" {
		t.Errorf("auto on a remote env: %+v", sb)
	}
	found := false
	for _, n := range res.Notices {
		found = found || n.Code == "sandbox.off"
	}
	if !found {
		t.Errorf("no sandbox.off notice in %+v", res.Notices)
	}
	// off: stated.
	sp := spec(t)
	sp.Sandbox = sandbox.ModeOff
	if sb := run(agent.Deps{}, sp).Manifest.Shell.Sandbox; sb.Enforced || sb.Mode != sandbox.ModeOff || !strings.Contains(sb.Reason, "off") {
		t.Errorf("off: %+v", sb)
	}
	// auto on the host: confined where the kernel can; the network off unless bypass.
	k := sandbox.Probe()
	sb = run(agent.Deps{}, spec(t)).Manifest.Shell.Sandbox
	if sb.Enforced != k.Available() || (k.Available() && (sb.Landlock != k.Landlock || sb.Network)) {
		t.Errorf("auto on the host: %+v (kernel %+v)", sb, k)
	}
	if k.Available() {
		sp := spec(t)
		sp.PermissionMode = "bypassPermissions"
		if sb := run(agent.Deps{}, sp).Manifest.Shell.Sandbox; !sb.Network {
			t.Errorf("bypassPermissions: the network is off: %+v", sb)
		}
		sp.SandboxNetwork = "off"
		if sb := run(agent.Deps{}, sp).Manifest.Shell.Sandbox; sb.Network {
			t.Errorf("bypassPermissions with the network off: %+v", sb)
		}
	}
}
