package agent

import (
	"context"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// rules merges the permission rules of every layer: the deployment's, the settings
// files', and the task's. A rule that does not parse refuses the spec.
func (l *leg) rules(ctx context.Context) (permission.RuleSet, permission.Mode, error) {
	task, err := permission.RulesFromFlags(l.spec.AllowedTools, l.spec.DisallowedTools)
	if err != nil {
		return permission.RuleSet{}, "", err
	}
	ask, err := permission.ParseRules(nil, nil, splitRules(l.spec.AskTools))
	if err != nil {
		return permission.RuleSet{}, "", err
	}
	if err := l.readSettings(ctx); err != nil {
		return permission.RuleSet{}, "", err
	}
	merged := l.deps.policy().Rules.Merge(task, ask, l.layered.Rules)
	return merged, l.layered.DefaultMode, nil
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
		DenyBypass: l.deps.policy().DenyBypassPermissions || l.layered.DenyBypassPermissions,
		DenyAuto:   l.deps.policy().DenyAutoMode,
		ArmAuto:    l.armAuto(),
		OnArmFault: func(err error) {
			l.notice(sema.Notice{Code: CodeArmingFailed, Message: "the auto-mode classifier could not be armed: " + err.Error()})
		},
	})
	l.modes = ctrl
	return nil
}
