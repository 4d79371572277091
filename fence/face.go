package fence

import (
	"github.com/sema-agent/sema"
)

// Face is a containment face: whether the roots judge the paths of one band. The same
// word means the same thing for reads and for writes; the two faces differ only in which
// band consults them.
type Face string

const (
	// FaceRoots runs the containment judgment: a path must resolve inside a root.
	FaceRoots Face = "roots"
	// FaceOpen skips the containment judgment only. Canonicalization, the deny set and
	// the protected set still apply.
	FaceOpen Face = "open"
)

// Layer is who fills a face seat: the caller of one task or the deployment.
type Layer int

const (
	// LayerTask is the task's own seat (TaskSpec.ReadFace / TaskSpec.WriteFace). Under
	// a read-only mount or org governance it may only tighten.
	LayerTask Layer = iota
	// LayerDeployment is the deployment's seat (Deps.Policy.ReadFace / Deps.Policy.WriteFace).
	LayerDeployment
)

// Codes of the face value gate, the loud refusals of the resolution order, and the
// deployment-clamp notice. The word in the middle is the face's Kind.
const (
	// CodeReadFaceInvalid refuses a read-face seat that is set to anything but "open"
	// or "roots" (CheckFaceValue).
	CodeReadFaceInvalid = "config.read_face_invalid"
	// CodeWriteFaceInvalid is CodeReadFaceInvalid for a write-face seat.
	CodeWriteFaceInvalid = "config.write_face_invalid"
	// CodeReadFaceOpenRefused refuses a task's read-face "open" under a read-only mount
	// or org governance (rows 1 and 2 of ResolveFace).
	CodeReadFaceOpenRefused = "config.read_face_open_refused"
	// CodeWriteFaceOpenRefused is CodeReadFaceOpenRefused for the write face.
	CodeWriteFaceOpenRefused = "config.write_face_open_refused"
	// CodeReadFaceClamped is the notice that a read-only mount clamped a deployment's
	// read-face "open" to "roots" (DeploymentClampNotice); the run goes on.
	CodeReadFaceClamped = "config.read_face_deployment_clamped"
	// CodeWriteFaceClamped is CodeReadFaceClamped for the write face.
	CodeWriteFaceClamped = "config.write_face_deployment_clamped"
	// CodeModeFaceInvalid refuses a FaceInputs.ModeFace that is neither empty nor a Face;
	// it is the engine's own value, so this is a wiring bug, not a user's typo.
	CodeModeFaceInvalid = "config.mode_face_invalid"
	// CodeFaceKindInvalid refuses a FaceInputs.Kind that is neither Read nor Write.
	CodeFaceKindInvalid = "config.face_kind_invalid"
)

// SeatName is the one spelling of a face seat, derived from (kind, layer) so that every
// message naming a seat names it the same way: "TaskSpec.ReadFace", "TaskSpec.WriteFace",
// "Deps.Policy.ReadFace", "Deps.Policy.WriteFace".
func SeatName(kind Kind, layer Layer) string {
	prefix := "TaskSpec."
	if layer == LayerDeployment {
		prefix = "Deps.Policy."
	}
	if kind == Write {
		return prefix + "WriteFace"
	}
	return prefix + "ReadFace"
}

// FaceSeat returns a seat holding v, for filling the *string seats of Config and
// FaceInputs. A nil seat means the layer declared nothing.
func FaceSeat(v string) *string { return &v }

func faceCode(kind Kind, readCode, writeCode string) string {
	if kind == Write {
		return writeCode
	}
	return readCode
}

// CheckFaceValue is the wiring-time value gate of one seat. A nil seat declares nothing
// and yields "". Otherwise the value must be exactly "open" or "roots": a case variant,
// surrounding space, the empty string or any other word is refused with
// config.<kind>_face_invalid naming the seat, never folded to a default. Doors that
// screen a spec before any band is mounted call it directly; ResolveFace calls it first
// too, so a bad value refuses before any other row of the order is consulted.
func CheckFaceValue(v *string, kind Kind, layer Layer) (Face, error) {
	if v == nil {
		return "", nil
	}
	switch f := Face(*v); f {
	case FaceOpen, FaceRoots:
		return f, nil
	}
	seat := SeatName(kind, layer)
	return "", sema.Errorf(faceCode(kind, CodeReadFaceInvalid, CodeWriteFaceInvalid),
		"%s is %q; set it to exactly \"open\" or \"roots\" (lower case), or leave it unset", seat, *v).
		With("seat", seat).With("value", *v)
}

// FaceInputs are the facts one face is resolved from. A permission mode enters only as
// the face its row of the mode table states (ModeFace), never as a mode word.
type FaceInputs struct {
	// Kind is the face being resolved: it selects the seat names and the codes, never
	// the order, which is one body for both.
	Kind Kind
	// Task is the task's seat (TaskSpec.ReadFace or TaskSpec.WriteFace), raw; nil when
	// the task declared nothing.
	Task *string
	// Deployment is the deployment's seat (Deps.Policy.ReadFace or Deps.Policy.WriteFace), raw; nil
	// when the deployment declared nothing.
	Deployment *string
	// ReadOnlyMount is the verifier's read-only mount. For the read face the roots are
	// then a load-bearing wall (bash_readonly is confined by it); for the write face it
	// means there is no write band at all. Neither face opens under it.
	ReadOnlyMount bool
	// OrgGoverned is declared org governance: the default is roots and the task layer may
	// only tighten; the deployment's own "open" still wins.
	OrgGoverned bool
	// FullShellReachable reports whether the full shell (Bash) can be mounted on this
	// leg. When it cannot, the fence is the only boundary this face has, so no implicit
	// default opens it (an explicit seat or the mode's face still may).
	FullShellReachable bool
	// ModeFace is the face the leg's permission mode states ("" when it states none;
	// bypassPermissions states FaceOpen for writes). It ranks after the explicit seats
	// and before the defaults; the read-only mount and org governance never consult it.
	ModeFace Face
	// OnDeploymentClamp is called when, and only when, a read-only mount overrides a
	// deployment seat's "open" that no task seat pinned: the one silent branch of the
	// order. The caller owns delivery and deduplication (see DeploymentClampNotice).
	// May be nil.
	OnDeploymentClamp func()
}

// ResolveFace is the one resolution order of a containment face, the same body for the
// read face and the write face; the first row that applies wins:
//
//  1. read-only mount → roots. A task seat "open" contradicts the mount and is refused
//     (config.<kind>_face_open_refused); a deployment seat "open" with no task seat is
//     a deployment-wide default and is clamped to roots, reported through
//     OnDeploymentClamp.
//  2. org governance → a task seat "open" is refused; a task seat "roots" tightens to
//     roots; a deployment seat "open" wins; otherwise roots.
//  3. an explicit seat: the task's, then the deployment's.
//     3′. the mode's face.
//  4. no full shell reachable → roots.
//  5. roots: the engine never opens a face implicitly.
//
// Both seats pass the value gate (CheckFaceValue) before any row is consulted. One
// face's resolution never reads the other face's seats: a deployment that wants both
// bands open declares both.
func ResolveFace(in FaceInputs) (Face, error) {
	if in.Kind != Read && in.Kind != Write {
		return "", sema.Errorf(CodeFaceKindInvalid, "the face kind %d is neither Read nor Write", int(in.Kind))
	}
	task, err := CheckFaceValue(in.Task, in.Kind, LayerTask)
	if err != nil {
		return "", err
	}
	dep, err := CheckFaceValue(in.Deployment, in.Kind, LayerDeployment)
	if err != nil {
		return "", err
	}
	switch in.ModeFace {
	case "", FaceOpen, FaceRoots:
	default:
		return "", sema.Errorf(CodeModeFaceInvalid, "the permission mode states the %s face %q, which is neither \"open\" nor \"roots\"", in.Kind, string(in.ModeFace)).
			With("value", string(in.ModeFace))
	}
	refuseOpen := func(why, because string) error {
		seat := SeatName(in.Kind, LayerTask)
		return sema.Errorf(faceCode(in.Kind, CodeReadFaceOpenRefused, CodeWriteFaceOpenRefused),
			"%s is \"open\", but %s; remove it or set it to \"roots\"", seat, because).
			With("seat", seat).With("reason", why)
	}
	// Row 1.
	if in.ReadOnlyMount {
		if task == FaceOpen {
			return "", refuseOpen("read_only_mount", "this leg runs on a read-only mount, whose "+in.Kind.String()+" face is always \"roots\"")
		}
		if task == "" && dep == FaceOpen && in.OnDeploymentClamp != nil {
			in.OnDeploymentClamp()
		}
		return FaceRoots, nil
	}
	// Row 2.
	if in.OrgGoverned {
		if task == FaceOpen {
			return "", refuseOpen("org_governed", "the organization governs this deployment and a task may only tighten containment")
		}
		if task == "" && dep == FaceOpen {
			return FaceOpen, nil
		}
		return FaceRoots, nil
	}
	// Row 3.
	if task != "" {
		return task, nil
	}
	if dep != "" {
		return dep, nil
	}
	// Row 3′.
	if in.ModeFace != "" {
		return in.ModeFace, nil
	}
	// Row 4: stated apart from row 5 because it is a different reason (the fence is the
	// only boundary), which must keep holding if row 5 ever changes.
	if !in.FullShellReachable {
		return FaceRoots, nil
	}
	// Row 5.
	return FaceRoots, nil
}

// DeploymentClampNotice is the one text of the row-1 clamp announcement
// (config.<kind>_face_deployment_clamped), so that it never differs between the
// stations that deliver it or between the two faces.
//
// New delivers it to Config.OnNotice at most once per face: it resolves each face
// exactly once, and a run builds one Fence. The run, not the sink, is therefore the
// unit of deduplication: a Go func value has no identity a set could be keyed on, and a
// runner that rebuilds its dependencies would defeat one keyed on the Deps value. A
// station that calls ResolveFace itself delivers its own notice.
func DeploymentClampNotice(kind Kind) sema.Notice {
	seat := SeatName(kind, LayerDeployment)
	return sema.Notice{
		Code: faceCode(kind, CodeReadFaceClamped, CodeWriteFaceClamped),
		Message: seat + " is \"open\", but this leg runs on a read-only mount; the " + kind.String() +
			" face is \"roots\" for this leg",
		Detail: map[string]any{"seat": seat, "declared": string(FaceOpen), "effective": string(FaceRoots), "reason": "read_only_mount"},
	}
}
