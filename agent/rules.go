package agent

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/session"
)

// projectSettingsPath is where a workspace keeps its own permission settings.
const projectSettingsPath = ".sema/settings.json"

// rules merges the permission rules of every layer: the deployment's, the project's
// settings file, and the task's. A rule that does not parse refuses the spec.
func (l *leg) rules(ctx context.Context) (permission.RuleSet, permission.Mode, error) {
	task, err := permission.RulesFromFlags(l.spec.AllowedTools, l.spec.DisallowedTools)
	if err != nil {
		return permission.RuleSet{}, "", err
	}
	ask, err := permission.ParseRules(nil, nil, splitRules(l.spec.AskTools))
	if err != nil {
		return permission.RuleSet{}, "", err
	}
	proj, err := l.projectSettings(ctx)
	if err != nil {
		return permission.RuleSet{}, "", err
	}
	merged := l.deps.policy().Rules.Merge(task, ask, proj.Rules)
	return merged, proj.DefaultMode, nil
}

// projectSettings reads the root's .sema/settings.json through the env. Its deny and ask
// rules always apply; its allow rules and its defaultMode only when the deployment trusts
// the workspace (Deps.Policy.TrustProjectSettings), because a cloned repository must not be able
// to grant itself permissions.
func (l *leg) projectSettings(ctx context.Context) (permission.Settings, error) {
	path := filepath.Join(l.spec.Root, projectSettingsPath)
	data, err := l.deps.Env.ReadFile(ctx, path)
	if errors.Is(err, fs.ErrNotExist) {
		return permission.Settings{}, nil
	}
	if err != nil {
		return permission.Settings{}, configError(CodeSettingsUnreadable, "cannot read %s: %v", path, err)
	}
	st, err := permission.ParseSettings(data, path)
	if err != nil {
		return permission.Settings{}, err
	}
	l.projectSandbox = st.Sandbox
	l.projectMCP = st.MCPServers
	if !l.deps.policy().TrustProjectSettings {
		// What an untrusted workspace may say of the sandbox is what tightens it.
		l.projectSandbox = permission.SandboxSettings{Hidden: st.Sandbox.Hidden}
		if st.Sandbox.Mode == sandbox.ModeOn {
			l.projectSandbox.Mode = sandbox.ModeOn
		}
		if st.Sandbox.Network == "off" {
			l.projectSandbox.Network = "off"
		}
		if len(st.Rules.Allow) > 0 || st.DefaultMode != "" {
			l.notice(sema.Notice{Code: CodeProjectSettingsUntrusted, Message: path + " grants permissions (allow rules or a default mode), which apply only when the deployment trusts the workspace; its deny and ask rules apply",
				Detail: map[string]any{"path": path}})
		}
		st.Rules.Allow = nil
		st.DefaultMode = ""
	}
	return st, nil
}

func splitRules(list []string) []string {
	var out []string
	for _, e := range list {
		out = append(out, permission.SplitRuleList(e)...)
	}
	return out
}

// requestedMode is the mode word a leg that answers no parked question asks for: the
// spec's, else the word a resumed session recorded, else the settings' default mode. The
// pre-plan word comes from the session. A resume that answers one reads the checkpoint
// instead (modeFor).
func requestedMode(spec TaskSpec, loaded *session.Session, defaultMode permission.Mode) (requested, prePlan permission.Mode) {
	requested = spec.PermissionMode
	if loaded != nil {
		prePlan = permission.Mode(loaded.PrePlanMode)
		if requested == "" {
			requested = permission.Mode(loaded.Mode)
		}
	}
	if requested == "" {
		requested = defaultMode
	}
	return requested, prePlan
}

// autoModeFace is the auto-mode classifier face the leg arms from: the deployment's
// own (Deps.Classifier), else the face its delegating ancestor armed from, riding the
// chain, so that each of a child's actions meets the same decision order as its
// parent's — classified on the child's own transcript. Nil: the built-in classifier
// over the leg's own model.
func (l *leg) autoModeFace() permission.AutoClassifier {
	if l.deps.Classifier != nil {
		return l.deps.Classifier
	}
	if l.link != nil {
		return l.link.parent.face
	}
	return nil
}

// prepareModes builds the leg's mode controller and binds the deployment's arming facts:
// denied modes fold to default, and auto arms the classifier.
func (l *leg) prepareModes(req modeRequest, ceiling gate.Ceiling) error {
	ctrl, err := gate.NewModeController(req.requested, ceiling, gate.ControllerOptions{OnNotice: l.notice, PrePlanMode: req.prePlan, PlanApproved: req.planApproved})
	if err != nil {
		return err
	}
	l.face = l.autoModeFace()
	base := l.face
	if base == nil {
		base = &gate.ModelClassifier{Provider: l.deps.Provider, Model: l.spec.Model}
	}
	l.classifier = gate.TrackDenials(base)
	ctrl.BindArming(gate.Arming{
		DenyBypass: l.deps.policy().DenyBypassPermissions,
		DenyAuto:   l.deps.policy().DenyAutoMode,
		ArmAuto: func(context.Context) (permission.AutoClassifier, error) {
			return l.classifier, nil
		},
		OnArmFault: func(err error) {
			l.notice(sema.Notice{Code: CodeArmingFailed, Message: "the auto-mode classifier could not be armed: " + err.Error()})
		},
	})
	l.modes = ctrl
	return nil
}
