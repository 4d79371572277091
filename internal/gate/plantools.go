package gate

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

// NewEnterPlanMode returns the EnterPlanMode tool over a leg's controller: it moves the
// leg into plan (recording the word it had, PrePlanMode). Its effect is read: it changes
// nothing but the leg's own mode, toward asking more.
func NewEnterPlanMode(c *ModeController) tools.Tool { return enterPlan{c} }

// NewExitPlanMode returns the ExitPlanMode tool over a leg's controller. The gate puts
// its call to a person as the plan_review question (Decision.Gate GatePlanReview,
// PersonOnly); the tool runs only once that was approved, and returns the leg to the
// mode it had before plan (PrePlanMode), else default. A leg that resumed a parked plan
// review has left plan already (ControllerOptions.PlanApproved): the approved call says
// so and changes nothing.
func NewExitPlanMode(c *ModeController) tools.Tool { return exitPlan{c} }

type enterPlan struct{ c *ModeController }

func (t enterPlan) Spec() tools.Spec {
	return tools.Spec{
		Name: "EnterPlanMode",
		Description: "Switch to plan mode: explore the code and design an approach without changing anything. " +
			"In plan mode every file change and every command that is not read-only needs a person's approval. " +
			"Present the plan with ExitPlanMode when it is ready.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Effect:      tools.EffectRead,
	}
}

func (t enterPlan) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var v struct{}
	if err := tools.Decode(input, &v); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	if t.c.Current() == permission.ModePlan {
		return tools.Text("Plan mode is already on. Explore, then present the plan with ExitPlanMode.")
	}
	if _, err := t.c.Steer(ctx, permission.ModePlan); err != nil {
		return tools.Fail(permission.CodePlanSteerFailed, "Plan mode could not be entered: %v", err)
	}
	return tools.Text("Plan mode is on. Explore the code and design the change without editing anything; " +
		"when the plan is ready, present it with ExitPlanMode for approval.")
}

type exitPlan struct{ c *ModeController }

func (t exitPlan) Spec() tools.Spec {
	return tools.Spec{
		Name: "ExitPlanMode",
		Description: "Present the plan for approval and leave plan mode. Call it only in plan mode, once the plan is complete; " +
			"the person reviews the plan, and when they approve it the previous permission mode is restored so the work can start.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"plan":{"type":"string","description":"The plan, in Markdown."}},"required":["plan"],"additionalProperties":false}`),
		Effect:      tools.EffectRead,
	}
}

func (t exitPlan) Run(ctx context.Context, input json.RawMessage) tools.Result {
	var v struct {
		Plan *string `json:"plan"`
	}
	if err := tools.Decode(input, &v); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	if v.Plan == nil || strings.TrimSpace(*v.Plan) == "" {
		return tools.Fail(tools.CodeInputInvalid, "invalid input: plan is required and must not be empty")
	}
	// A resume that approved this call already left plan (the mode it requests is the
	// pre-plan word or the approver's); the call then only reports where the leg is.
	approved := t.c.takePlanApproved()
	if mode := t.c.Current(); mode != permission.ModePlan {
		if approved {
			return tools.Text("The plan was approved and plan mode is off (the permission mode is now " + string(mode) + "). Carry out the plan.")
		}
		return tools.Fail(permission.CodeNotInPlanMode, "The leg is not in plan mode, so there is no plan to exit; carry on with the task.")
	}
	to := t.c.PrePlanMode()
	if to == "" {
		to = permission.ModeDefault
	}
	if t.c.declaredFor(to) == permission.ModePlan {
		// The parent leg is in plan: leaving would change nothing but the word.
		return tools.FromError(sema.Errorf(permission.CodePlanSteerFailed, "The plan was approved, but the parent leg is in plan mode, so this leg stays in plan mode; report the plan back instead."), permission.CodePlanSteerFailed)
	}
	rec, err := t.c.Steer(ctx, to)
	if err != nil {
		return tools.FromError(err, permission.CodePlanSteerFailed)
	}
	return tools.Text("The plan was approved and plan mode is off (the permission mode is now " + string(rec.Effective) + "). Carry out the plan.")
}
