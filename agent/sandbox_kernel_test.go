package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/sandbox"
)

// A kernel that confines commands only in part: `on` refuses by name, naming each
// missing protection; `auto` runs, announces what is missing and lists it in the
// manifest. The machine's own kernel is the calibration: on it, `on` runs.
func TestSandboxOnRefusesAnIncompleteKernel(t *testing.T) {
	real := sandbox.Probe()
	if !real.Available() || len(real.Incomplete(false)) > 0 {
		t.Skipf("this machine's kernel is not whole (missing %v; %s): no calibration", real.Incomplete(false), real.Reason)
	}
	older := []struct {
		name    string
		k       sandbox.Kernel
		missing []string
	}{
		{"no PID namespace", sandbox.Kernel{Landlock: 7, MountNamespace: true, NetworkNamespace: true, Overlay: true}, []string{"processes"}},
		{"no user namespaces, Landlock 3", sandbox.Kernel{Landlock: 3}, []string{"view", "network", "processes", "signals"}},
		{"no network namespace", sandbox.Kernel{Landlock: 7, MountNamespace: true, PIDNamespace: true, Overlay: true}, []string{"network"}},
	}
	run := func(t *testing.T, mode sandbox.Mode) (*TaskResult, error) {
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "Done."}}})
		return New(Deps{Provider: p, Shell: &ShellOptions{Sandbox: mode}}).Run(context.Background(), TaskSpec{Prompt: "go", Root: t.TempDir()})
	}
	res, err := run(t, sandbox.ModeOn)
	if err != nil || res.Status != sema.StatusCompleted || len(res.Manifest.Shell.Sandbox.Missing) > len(real.Incomplete(false)) {
		t.Fatalf("calibration: on, on this machine: %v %+v", err, res)
	}
	for _, c := range older {
		t.Run(c.name, func(t *testing.T) {
			probeKernel = func() sandbox.Kernel { return c.k }
			defer func() { probeKernel = sandbox.Probe }()
			res, err := run(t, sandbox.ModeOn)
			if err == nil && res.Error != nil {
				err = res.Error
			}
			var se *sema.Error
			if !errors.As(err, &se) || se.Code != sandbox.CodeIncomplete {
				t.Fatalf("on with %s: want %s, got %v", c.name, sandbox.CodeIncomplete, err)
			}
			for _, m := range c.missing {
				if !strings.Contains(se.Message, m+":") {
					t.Errorf("the refusal does not name %q: %s", m, se.Message)
				}
			}
			res, err = run(t, sandbox.ModeAuto)
			if err != nil || res.Status != sema.StatusCompleted {
				t.Fatalf("auto with %s: %v %+v", c.name, err, res)
			}
			notice := ""
			for _, n := range res.Notices {
				if n.Code == sandbox.CodePartial {
					notice = n.Message
				}
			}
			for _, m := range c.missing {
				if !strings.Contains(notice, m+":") {
					t.Errorf("auto's notice does not name %q: %q", m, notice)
				}
				found := false
				for _, got := range res.Manifest.Shell.Sandbox.Missing {
					found = found || strings.HasPrefix(got, m+":")
				}
				if !found {
					t.Errorf("the manifest's missing list lacks %q: %v", m, res.Manifest.Shell.Sandbox.Missing)
				}
			}
		})
	}
}
