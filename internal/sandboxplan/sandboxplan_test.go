package sandboxplan

import (
	"errors"
	"runtime"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/settings"
)

func code(err error) string {
	var se *sema.Error
	if errors.As(err, &se) {
		return se.Code
	}
	return ""
}

// The door refuses a task that loosens its deployment's words, and words it does not know.
func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name             string
		deployment, task Seat
		want             string
	}{
		{"task loosens on", Seat{Mode: sandbox.ModeOn}, Seat{Mode: sandbox.ModeAuto}, sandbox.CodeLoosened},
		{"task opens the network", Seat{Network: "off"}, Seat{Network: "on"}, sandbox.CodeLoosened},
		{"task repeats on", Seat{Mode: sandbox.ModeOn}, Seat{Mode: sandbox.ModeOn}, ""},
		{"task tightens", Seat{Mode: sandbox.ModeAuto, Network: "on"}, Seat{Mode: sandbox.ModeOn, Network: "off"}, ""},
	} {
		if got := code(Check(c.deployment, c.task)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if err := Check(Seat{Network: "sideways"}, Seat{}); err == nil {
		t.Error("an unknown network word passed")
	}
}

// plan runs Plan on the host with a kernel of the test's choosing and collects notices.
func plan(in Input, k sandbox.Kernel) ([]string, error) {
	var notices []string
	in.Env = env.NewHost()
	in.Probe = func() sandbox.Kernel { return k }
	in.OnNotice = func(n sema.Notice) { notices = append(notices, n.Code) }
	_, _, err := Plan(in)
	return notices, err
}

// The managed policy's on holds: a seat that asks for less by name is refused, one that
// says nothing is raised to on.
func TestManagedPolicyHolds(t *testing.T) {
	t.Parallel()
	managed := settings.Sandbox{Mode: sandbox.ModeOn, Network: "off"}
	if _, err := plan(Input{Managed: managed, Task: Seat{Mode: sandbox.ModeOff}}, sandbox.Kernel{}); code(err) != sandbox.CodeLoosened {
		t.Errorf("a task's off under a managed on: %v", err)
	}
	if _, err := plan(Input{Managed: managed, Deployment: Deployment{Seat: Seat{Network: "on"}}}, sandbox.Kernel{}); code(err) != sandbox.CodeLoosened {
		t.Errorf("the deployment's network on under a managed off: %v", err)
	}
	// Nothing asked: on, and on refuses a kernel that cannot confine.
	if _, err := plan(Input{Managed: managed}, sandbox.Kernel{Reason: "no Landlock"}); code(err) != sandbox.CodeUnavailable {
		t.Errorf("managed on, no kernel: %v", err)
	}
}

// Auto runs unconfined where it cannot confine and says so; off and a shell-less env run
// unconfined without a word, each with the status's reason.
func TestUnconfined(t *testing.T) {
	t.Parallel()
	notices, err := plan(Input{}, sandbox.Kernel{Reason: "no Landlock"})
	if err != nil || len(notices) != 1 || notices[0] != sandbox.CodeOff {
		t.Errorf("auto without a kernel: %v %v", err, notices)
	}
	for _, in := range []Input{
		{Task: Seat{Mode: sandbox.ModeOff}, Env: env.NewHost()},
		{Env: envtest.NewMem()},
	} {
		in.OnNotice = func(n sema.Notice) { t.Errorf("a notice: %+v", n) }
		sb, st, err := Plan(in)
		if sb != nil || err != nil || st.Enforced || st.Reason == "" {
			t.Errorf("%+v: %v %+v %v", in.Task, sb, st, err)
		}
	}
}

// A kernel that confines only in part: on refuses by name, auto runs and says what is
// missing; the network follows the words, bypassPermissions and a read-only leg.
func TestPartialKernel(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the kernel sandbox is Linux's")
	}
	partial := sandbox.Kernel{Landlock: 3}
	if _, err := plan(Input{Task: Seat{Mode: sandbox.ModeOn}}, partial); code(err) != sandbox.CodeIncomplete {
		t.Errorf("on with a partial kernel: %v", err)
	}
	for _, c := range []struct {
		in      Input
		network bool
	}{
		{Input{}, false},
		{Input{Bypass: true}, true},
		{Input{Bypass: true, ReadOnly: true}, false},
		{Input{Settings: settings.Sandbox{Network: "on"}}, true},
		{Input{Settings: settings.Sandbox{Network: "on"}, Task: Seat{Network: "off"}}, false},
	} {
		in := c.in
		in.Env, in.Probe = env.NewHost(), func() sandbox.Kernel { return partial }
		var partialSaid bool
		in.OnNotice = func(n sema.Notice) { partialSaid = partialSaid || n.Code == sandbox.CodePartial }
		sb, st, err := Plan(in)
		if err != nil || sb == nil || !st.Enforced || !partialSaid {
			t.Fatalf("auto with a partial kernel: %v %+v %v (partial said: %v)", sb, st, err, partialSaid)
		}
		if sb.Options.Network != c.network || st.Network != c.network {
			t.Errorf("%+v: network %v (status %v), want %v", c.in, sb.Options.Network, st.Network, c.network)
		}
	}
}
