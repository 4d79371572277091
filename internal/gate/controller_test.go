package gate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/permission"
)

type noticeLog struct {
	mu sync.Mutex
	n  []sema.Notice
}

func (l *noticeLog) add(n sema.Notice) {
	l.mu.Lock()
	l.n = append(l.n, n)
	l.mu.Unlock()
}

func (l *noticeLog) all() []sema.Notice {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sema.Notice(nil), l.n...)
}

func mustController(t testing.TB, requested permission.Mode, ceiling Ceiling, opts ControllerOptions) *ModeController {
	t.Helper()
	c, err := NewModeController(requested, ceiling, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type fixedClassifier permission.Behavior

func (c fixedClassifier) Classify(context.Context, permission.ClassifyRequest) (permission.Behavior, string, error) {
	return permission.Behavior(c), "", nil
}

func armWith(cl permission.AutoClassifier, err error, calls *atomic.Int32) func(context.Context) (permission.AutoClassifier, error) {
	return func(context.Context) (permission.AutoClassifier, error) {
		if calls != nil {
			calls.Add(1)
		}
		return cl, err
	}
}

func TestChildBypassUnderDefaultParentRunsDefault(t *testing.T) {
	t.Parallel()
	parent := mustController(t, permission.ModeDefault, nil, ControllerOptions{})
	var log noticeLog
	child := mustController(t, permission.ModeBypassPermissions, parent, ControllerOptions{OnNotice: log.add})
	want := permission.Receipt{Requested: permission.ModeBypassPermissions, Effective: permission.ModeDefault, FoldedBy: permission.FoldInheritedCeiling}
	if diff := cmp.Diff(want, child.Receipt()); diff != "" {
		t.Fatalf("receipt (-want +got):\n%s", diff)
	}
	for i := 0; i < 3; i++ {
		if m := child.Current(); m != permission.ModeDefault {
			t.Fatalf("Current = %s", m)
		}
	}
	ns := log.all()
	if len(ns) != 1 || ns[0].Code != permission.CodeModeFolded || ns[0].Detail["folded_by"] != "inherited_ceiling" || ns[0].Detail["folded"] != "bypassPermissions" {
		t.Fatalf("notices = %+v, want one inherited_ceiling fold", ns)
	}
	// The gate built on the child reads the folded mode: a write is a question.
	g, _ := New(Config{Modes: child})
	d := g.Decide(context.Background(), permission.Call{Tool: "Write", Paths: []permission.PathTarget{{Abs: "/r/a", Canonical: "/r/a"}}, Scope: permission.Scope{Root: "/r", WriteRoots: []string{"/r"}}})
	if d.Behavior != permission.Ask {
		t.Errorf("a child folded to default allowed a write: %+v", d)
	}
}

func TestCeilingIsLive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	parent := mustController(t, permission.ModeAcceptEdits, nil, ControllerOptions{})
	var log noticeLog
	child := mustController(t, permission.ModeAcceptEdits, parent, ControllerOptions{OnNotice: log.add})
	if child.Current() != permission.ModeAcceptEdits || len(log.all()) != 0 {
		t.Fatalf("start: %s, %v", child.Current(), log.all())
	}
	if _, err := parent.Steer(ctx, permission.ModeDefault); err != nil {
		t.Fatal(err)
	}
	if m := child.Current(); m != permission.ModeDefault {
		t.Fatalf("after the parent's steer the child is %s", m)
	}
	if ns := log.all(); len(ns) != 1 || ns[0].Detail["folded_by"] != "inherited_ceiling" {
		t.Fatalf("notices = %+v", ns)
	}
	if _, err := parent.Steer(ctx, permission.ModePlan); err != nil {
		t.Fatal(err)
	}
	if m := child.Current(); m != permission.ModePlan {
		t.Fatalf("under a plan parent the child is %s", m)
	}
	if _, err := parent.Steer(ctx, permission.ModeBypassPermissions); err != nil {
		t.Fatal(err)
	}
	if m := child.Current(); m != permission.ModeAcceptEdits {
		t.Fatalf("back under a permissive parent the child is %s", m)
	}
	if rec := child.Receipt(); rec.FoldedBy != "" {
		t.Errorf("receipt still folded: %+v", rec)
	}
	// A grandchild inherits through two live ceilings.
	grand := mustController(t, "", child, ControllerOptions{})
	if grand.Current() != permission.ModeAcceptEdits {
		t.Errorf("grandchild = %s", grand.Current())
	}
	if _, err := parent.Steer(ctx, permission.ModeDontAsk); err != nil {
		t.Fatal(err)
	}
	if grand.Current() != permission.ModeDontAsk {
		t.Errorf("grandchild after the root's steer = %s", grand.Current())
	}
}

func TestIncomparableModes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ parent, child permission.Mode }{{permission.ModeAuto, permission.ModeAcceptEdits}, {permission.ModeAcceptEdits, permission.ModeAuto}} {
		p := mustController(t, tt.parent, nil, ControllerOptions{})
		c := mustController(t, tt.child, p, ControllerOptions{})
		rec := c.Receipt()
		if rec.Effective != tt.parent || rec.FoldedBy != permission.FoldInheritedCeiling {
			t.Errorf("child %s under %s = %+v", tt.child, tt.parent, rec)
		}
	}
}

func TestNewModeControllerRefusesUnknownWords(t *testing.T) {
	t.Parallel()
	for _, o := range []struct {
		req permission.Mode
		pre permission.Mode
	}{{"Default", ""}, {"yolo", ""}, {permission.ModePlan, "bypass"}} {
		if _, err := NewModeController(o.req, nil, ControllerOptions{PrePlanMode: o.pre}); !sema.IsCode(err, permission.CodeModeInvalid) {
			t.Errorf("NewModeController(%q, pre %q) error = %v", o.req, o.pre, err)
		}
	}
	// A damaged recorded ceiling bounds the leg to plan.
	c := mustController(t, permission.ModeBypassPermissions, RecordedCeiling("garbage"), ControllerOptions{})
	if c.Current() != permission.ModePlan || c.Receipt().FoldedBy != permission.FoldInheritedCeiling {
		t.Errorf("under a damaged ceiling: %+v", c.Receipt())
	}
}

func TestRecordedCeiling(t *testing.T) {
	t.Parallel()
	c := mustController(t, permission.ModeAcceptEdits, RecordedCeiling(permission.ModeDontAsk), ControllerOptions{})
	if c.Current() != permission.ModeDontAsk || c.Declared() != permission.ModeDontAsk {
		t.Errorf("Current = %s, Declared = %s", c.Current(), c.Declared())
	}
	c2 := mustController(t, "", nil, ControllerOptions{})
	if rec := c2.Receipt(); rec != (permission.Receipt{Effective: permission.ModeDefault}) {
		t.Errorf("nothing requested: %+v", rec)
	}
}

func TestArmingFolds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		req    permission.Mode
		arming Arming
		want   permission.Receipt
	}{
		{"bypass denied", permission.ModeBypassPermissions, Arming{DenyBypass: true}, permission.Receipt{Requested: permission.ModeBypassPermissions, Effective: permission.ModeDefault, FoldedBy: permission.FoldOperatorDeny}},
		{"auto denied", permission.ModeAuto, Arming{DenyAuto: true, ArmAuto: armWith(fixedClassifier(permission.Allow), nil, nil)}, permission.Receipt{Requested: permission.ModeAuto, Effective: permission.ModeDefault, FoldedBy: permission.FoldOperatorDeny}},
		{"auto without a face", permission.ModeAuto, Arming{}, permission.Receipt{Requested: permission.ModeAuto, Effective: permission.ModeDefault, FoldedBy: permission.FoldFaceAbsent}},
		{"auto armed", permission.ModeAuto, Arming{ArmAuto: armWith(fixedClassifier(permission.Allow), nil, nil)}, permission.Receipt{Requested: permission.ModeAuto, Effective: permission.ModeAuto}},
		{"bypass allowed", permission.ModeBypassPermissions, Arming{DenyAuto: true}, permission.Receipt{Requested: permission.ModeBypassPermissions, Effective: permission.ModeBypassPermissions}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log noticeLog
			c := mustController(t, tt.req, nil, ControllerOptions{OnNotice: log.add})
			if c.Current() != tt.req {
				t.Fatalf("before binding the leg runs %s", c.Current())
			}
			got := c.BindArming(tt.arming)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("BindArming (-want +got):\n%s", diff)
			}
			c.Current()
			c.Current()
			ns := log.all()
			if tt.want.FoldedBy == "" {
				if len(ns) != 0 {
					t.Errorf("notices without a fold: %+v", ns)
				}
				return
			}
			if len(ns) != 1 || ns[0].Detail["folded_by"] != string(tt.want.FoldedBy) {
				t.Errorf("notices = %+v", ns)
			}
		})
	}
}

func TestSteerToAutoRollsBackOnArmingFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := mustController(t, permission.ModeAcceptEdits, nil, ControllerOptions{})
	c.BindArming(Arming{ArmAuto: armWith(nil, errors.New("no model"), nil)})
	rec, err := c.Steer(ctx, permission.ModeAuto)
	if !sema.IsCode(err, permission.CodeAutoArmFailed) {
		t.Fatalf("Steer error = %v", err)
	}
	if rec.Effective != permission.ModeAcceptEdits || c.Requested() != permission.ModeAcceptEdits || c.Current() != permission.ModeAcceptEdits {
		t.Errorf("after the failed steer: %+v, requested %s", rec, c.Requested())
	}
	if c.Classifier() != nil {
		t.Error("a classifier after a failed arming")
	}
	// A panicking arming is contained the same way.
	c2 := mustController(t, permission.ModeDefault, nil, ControllerOptions{})
	c2.BindArming(Arming{ArmAuto: func(context.Context) (permission.AutoClassifier, error) { panic("boom") }})
	if _, err := c2.Steer(ctx, permission.ModeAuto); !sema.IsCode(err, permission.CodeAutoArmFailed) || c2.Current() != permission.ModeDefault {
		t.Errorf("panicking arming: %v, %s", err, c2.Current())
	}
	// An invalid word is refused and changes nothing.
	if _, err := c2.Steer(ctx, "Auto"); !sema.IsCode(err, permission.CodeModeInvalid) || c2.Requested() != permission.ModeDefault {
		t.Errorf("invalid steer: %v, %s", err, c2.Requested())
	}
}

func TestSteerToAutoArms(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c := mustController(t, permission.ModeDefault, nil, ControllerOptions{})
	c.BindArming(Arming{ArmAuto: armWith(fixedClassifier(permission.Deny), nil, &calls)})
	rec, err := c.Steer(context.Background(), permission.ModeAuto)
	if err != nil || rec.Effective != permission.ModeAuto {
		t.Fatalf("Steer = %+v, %v", rec, err)
	}
	if c.Classifier() == nil || calls.Load() != 1 {
		t.Fatalf("classifier %v, arming calls %d", c.Classifier(), calls.Load())
	}
	if _, err := c.Steer(context.Background(), permission.ModeDefault); err != nil || c.Classifier() != nil {
		t.Errorf("outside auto the classifier is still handed out")
	}
}

func TestReadStartedArming(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	parent := mustController(t, permission.ModeAuto, nil, ControllerOptions{})
	parent.BindArming(Arming{ArmAuto: armWith(fixedClassifier(permission.Allow), nil, nil)})
	var calls atomic.Int32
	var faults atomic.Int32
	child := mustController(t, "", parent, ControllerOptions{})
	child.BindArming(Arming{ArmAuto: armWith(nil, errors.New("down"), &calls), OnArmFault: func(error) { faults.Add(1); panic("observer") }})
	// Observing does not arm.
	if child.Observed() != permission.ModeAuto || calls.Load() != 0 {
		t.Fatalf("Observed armed: %d", calls.Load())
	}
	for i := 0; i < 3; i++ {
		if child.Current() != permission.ModeAuto {
			t.Fatal("child left auto")
		}
	}
	if calls.Load() != 1 || faults.Load() != 1 {
		t.Errorf("arming calls %d, faults %d; want 1 and 1 (a failed read-started arming is not retried)", calls.Load(), faults.Load())
	}
	if child.Classifier() != nil {
		t.Error("a failed arming handed out a classifier")
	}
	// Leaving auto and coming back starts the arming again.
	if _, err := parent.Steer(ctx, permission.ModeDefault); err != nil {
		t.Fatal(err)
	}
	child.Current()
	if _, err := parent.Steer(ctx, permission.ModeAuto); err != nil {
		t.Fatal(err)
	}
	child.Current()
	if calls.Load() != 2 {
		t.Errorf("arming calls after re-entering auto = %d", calls.Load())
	}
}

func TestPrePlanMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := mustController(t, permission.ModeAcceptEdits, nil, ControllerOptions{})
	if c.PrePlanMode() != "" {
		t.Fatal("pre-plan outside plan")
	}
	c.Steer(ctx, permission.ModePlan)
	if c.PrePlanMode() != permission.ModeAcceptEdits {
		t.Fatalf("PrePlanMode = %q", c.PrePlanMode())
	}
	c.Steer(ctx, permission.ModePlan) // staying in plan keeps the word
	if c.PrePlanMode() != permission.ModeAcceptEdits {
		t.Fatalf("PrePlanMode after a second plan steer = %q", c.PrePlanMode())
	}
	c.Steer(ctx, permission.ModeDefault)
	if c.PrePlanMode() != "" {
		t.Fatalf("PrePlanMode after leaving = %q", c.PrePlanMode())
	}
	started := mustController(t, permission.ModePlan, nil, ControllerOptions{})
	if started.PrePlanMode() != "" {
		t.Error("a leg that started in plan has a pre-plan word")
	}
	resumed := mustController(t, permission.ModePlan, nil, ControllerOptions{PrePlanMode: permission.ModeAcceptEdits})
	if resumed.PrePlanMode() != permission.ModeAcceptEdits {
		t.Error("a resumed leg lost its recorded pre-plan word")
	}
}

func TestModeRequestAfterResume(t *testing.T) {
	t.Parallel()
	review := func(d string) *ResumeOutcome { return &ResumeOutcome{Gate: permission.GatePlanReview, Decision: d} }
	inPlan := RecordedMode{PermissionMode: permission.ModePlan, PrePlanMode: permission.ModeAcceptEdits}
	tests := []struct {
		name     string
		seat     permission.Mode
		recorded RecordedMode
		outcome  *ResumeOutcome
		want     permission.Mode
	}{
		{"no seat, no outcome", "", RecordedMode{PermissionMode: permission.ModeAcceptEdits}, nil, permission.ModeAcceptEdits},
		{"seat wins", permission.ModeDefault, RecordedMode{PermissionMode: permission.ModeAcceptEdits}, nil, permission.ModeDefault},
		{"approved plan exits to pre-plan", "", inPlan, review("allow"), permission.ModeAcceptEdits},
		{"edited plan exits to pre-plan", "", inPlan, review("edit"), permission.ModeAcceptEdits},
		{"re-passed plan does not keep it open", permission.ModePlan, inPlan, review("allow"), permission.ModeAcceptEdits},
		{"the approver's choice", permission.ModeAuto, inPlan, review("allow"), permission.ModeAuto},
		{"no pre-plan word", "", RecordedMode{PermissionMode: permission.ModePlan}, review("allow"), ""},
		{"denied plan stays", "", inPlan, review("deny"), permission.ModePlan},
		{"tool permission keeps plan", "", inPlan, &ResumeOutcome{Gate: permission.GateToolPermission, Decision: "allow"}, permission.ModePlan},
		{"row not in plan", "", RecordedMode{PermissionMode: permission.ModeDefault, PrePlanMode: permission.ModeAuto}, review("allow"), permission.ModeDefault},
	}
	for _, tt := range tests {
		if got := ModeRequestAfterResume(tt.seat, tt.recorded, tt.outcome); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestControllerConcurrent(t *testing.T) {
	t.Parallel()
	parent := mustController(t, permission.ModeBypassPermissions, nil, ControllerOptions{})
	parent.BindArming(Arming{ArmAuto: armWith(fixedClassifier(permission.Allow), nil, nil)})
	child := mustController(t, permission.ModeAcceptEdits, parent, ControllerOptions{OnNotice: func(sema.Notice) {}})
	var wg sync.WaitGroup
	modes := permission.Modes()
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				if i%2 == 0 {
					parent.Steer(context.Background(), modes[(i+j)%len(modes)])
				} else {
					m := child.Current()
					if !m.Valid() {
						t.Errorf("invalid mode %q", m)
					}
					child.Receipt()
				}
			}
		}(i)
	}
	wg.Wait()
}
