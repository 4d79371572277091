package fence

import (
	"context"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

func TestResolveFaceOrder(t *testing.T) {
	t.Parallel()
	open, roots := FaceSeat("open"), FaceSeat("roots")
	type row struct {
		name       string
		in         FaceInputs
		want       Face
		refused    bool // config.<kind>_face_open_refused
		wantClamps int
	}
	rows := []row{
		// Row 1: read-only mount.
		{name: "1 mount, nothing declared", in: FaceInputs{ReadOnlyMount: true}, want: FaceRoots},
		{name: "1 mount, task open refuses", in: FaceInputs{ReadOnlyMount: true, Task: open}, refused: true},
		{name: "1 mount, task open refuses even with deps open", in: FaceInputs{ReadOnlyMount: true, Task: open, Deployment: open}, refused: true},
		{name: "1 mount, deps open alone clamps", in: FaceInputs{ReadOnlyMount: true, Deployment: open}, want: FaceRoots, wantClamps: 1},
		{name: "1 mount, task roots pins: no clamp claimed", in: FaceInputs{ReadOnlyMount: true, Task: roots, Deployment: open}, want: FaceRoots},
		{name: "1 mount, mode open not consulted", in: FaceInputs{ReadOnlyMount: true, ModeFace: FaceOpen, FullShellReachable: true}, want: FaceRoots},
		{name: "1 mount outranks governance", in: FaceInputs{ReadOnlyMount: true, OrgGoverned: true, Deployment: open}, want: FaceRoots, wantClamps: 1},
		// Row 2: org governance.
		{name: "2 governed, nothing declared", in: FaceInputs{OrgGoverned: true, FullShellReachable: true}, want: FaceRoots},
		{name: "2 governed, task open refuses", in: FaceInputs{OrgGoverned: true, Task: open}, refused: true},
		{name: "2 governed, deps open wins", in: FaceInputs{OrgGoverned: true, Deployment: open}, want: FaceOpen},
		{name: "2 governed, task roots tightens deps open", in: FaceInputs{OrgGoverned: true, Task: roots, Deployment: open}, want: FaceRoots},
		{name: "2 governed, mode open not consulted", in: FaceInputs{OrgGoverned: true, ModeFace: FaceOpen, FullShellReachable: true}, want: FaceRoots},
		// Row 3: explicit seats.
		{name: "3 task open", in: FaceInputs{Task: open}, want: FaceOpen},
		{name: "3 task roots over deps open", in: FaceInputs{Task: roots, Deployment: open}, want: FaceRoots},
		{name: "3 task open over deps roots", in: FaceInputs{Task: open, Deployment: roots}, want: FaceOpen},
		{name: "3 deps open", in: FaceInputs{Deployment: open}, want: FaceOpen},
		{name: "3 deps roots", in: FaceInputs{Deployment: roots, FullShellReachable: true}, want: FaceRoots},
		{name: "3 seat outranks the mode", in: FaceInputs{Deployment: roots, ModeFace: FaceOpen}, want: FaceRoots},
		{name: "3 explicit open without a shell", in: FaceInputs{Task: open, FullShellReachable: false}, want: FaceOpen},
		// Row 3′: the mode's face.
		{name: "3' mode open", in: FaceInputs{ModeFace: FaceOpen, FullShellReachable: true}, want: FaceOpen},
		{name: "3' mode open without a shell", in: FaceInputs{ModeFace: FaceOpen}, want: FaceOpen},
		{name: "3' mode roots", in: FaceInputs{ModeFace: FaceRoots, FullShellReachable: true}, want: FaceRoots},
		// Row 4: no full shell.
		{name: "4 no shell", in: FaceInputs{FullShellReachable: false}, want: FaceRoots},
		// Row 5: default.
		{name: "5 default", in: FaceInputs{FullShellReachable: true}, want: FaceRoots},
	}
	for _, kind := range []Kind{Read, Write} {
		for _, r := range rows {
			t.Run(kind.String()+"/"+r.name, func(t *testing.T) {
				t.Parallel()
				in := r.in
				in.Kind = kind
				clamps := 0
				in.OnDeploymentClamp = func() { clamps++ }
				got, err := ResolveFace(in)
				if r.refused {
					want := CodeReadFaceOpenRefused
					if kind == Write {
						want = CodeWriteFaceOpenRefused
					}
					if sema.CodeOf(err) != want || got != "" {
						t.Fatalf("got %q, %v; want refusal %s", got, err, want)
					}
					if !strings.Contains(err.Error(), SeatName(kind, LayerTask)) {
						t.Errorf("refusal %q does not name the seat %s", err, SeatName(kind, LayerTask))
					}
				} else if err != nil || got != r.want {
					t.Fatalf("got %q, %v; want %q", got, err, r.want)
				}
				if clamps != r.wantClamps {
					t.Errorf("clamp hook fired %d times, want %d", clamps, r.wantClamps)
				}
			})
		}
	}
}

func TestCheckFaceValueRefusesBadValues(t *testing.T) {
	t.Parallel()
	bad := []string{"", "OPEN", "Open", "ROOTS", "Roots", " open", "open ", "true", "1", "closed", "open\x00", "оpen"}
	for _, kind := range []Kind{Read, Write} {
		for _, layer := range []Layer{LayerTask, LayerDeployment} {
			for _, v := range bad {
				in := FaceInputs{Kind: kind}
				if layer == LayerTask {
					in.Task = FaceSeat(v)
				} else {
					in.Deployment = FaceSeat(v)
				}
				// Also under the rows that would otherwise decide without the seat.
				in.ReadOnlyMount = true
				_, err := ResolveFace(in)
				want := CodeReadFaceInvalid
				if kind == Write {
					want = CodeWriteFaceInvalid
				}
				if sema.CodeOf(err) != want {
					t.Errorf("%s %q: %v, want %s", SeatName(kind, layer), v, err, want)
					continue
				}
				if !strings.Contains(err.Error(), SeatName(kind, layer)) {
					t.Errorf("%q does not name the seat %s", err, SeatName(kind, layer))
				}
			}
		}
	}
	for _, good := range []string{"open", "roots"} {
		if f, err := CheckFaceValue(FaceSeat(good), Read, LayerTask); err != nil || string(f) != good {
			t.Errorf("CheckFaceValue(%q) = %q, %v", good, f, err)
		}
	}
	if f, err := CheckFaceValue(nil, Write, LayerDeployment); err != nil || f != "" {
		t.Errorf("an absent seat = %q, %v; want no face and no error", f, err)
	}
	if _, err := ResolveFace(FaceInputs{Kind: Write, ModeFace: "OPEN"}); sema.CodeOf(err) != CodeModeFaceInvalid {
		t.Errorf("bad mode face: %v", err)
	}
	if _, err := ResolveFace(FaceInputs{Kind: Kind(7)}); sema.CodeOf(err) != CodeFaceKindInvalid {
		t.Errorf("bad kind: %v", err)
	}
}

func TestSeatNames(t *testing.T) {
	t.Parallel()
	want := map[[2]int]string{
		{int(Read), int(LayerTask)}:        "TaskSpec.ReadFace",
		{int(Write), int(LayerTask)}:       "TaskSpec.WriteFace",
		{int(Read), int(LayerDeployment)}:  "Deps.Policy.ReadFace",
		{int(Write), int(LayerDeployment)}: "Deps.Policy.WriteFace",
	}
	for k, w := range want {
		if got := SeatName(Kind(k[0]), Layer(k[1])); got != w {
			t.Errorf("SeatName(%v) = %q, want %q", k, got, w)
		}
	}
	if n := DeploymentClampNotice(Read); n.Code != CodeReadFaceClamped || n.Detail["seat"] != "Deps.Policy.ReadFace" {
		t.Errorf("read clamp notice: %+v", n)
	}
	if n := DeploymentClampNotice(Write); n.Code != CodeWriteFaceClamped || n.Detail["seat"] != "Deps.Policy.WriteFace" {
		t.Errorf("write clamp notice: %+v", n)
	}
}

func TestNewResolvesFaces(t *testing.T) {
	t.Parallel()
	root := realTempDir(t)
	open, roots := FaceSeat("open"), FaceSeat("roots")
	tests := []struct {
		name              string
		cfg               Config
		read, write       Face
		err               string
		clampRead, clampW int
	}{
		{name: "default", read: FaceRoots, write: FaceRoots},
		{name: "write open leaves read roots", cfg: Config{TaskWriteFace: open}, read: FaceRoots, write: FaceOpen},
		{name: "read open leaves write roots", cfg: Config{DeploymentReadFace: open}, read: FaceOpen, write: FaceRoots},
		{name: "mode open is a write face only", cfg: Config{ModeWriteFace: FaceOpen}, read: FaceRoots, write: FaceOpen},
		{name: "both declared", cfg: Config{DeploymentReadFace: open, DeploymentWriteFace: open}, read: FaceOpen, write: FaceOpen},
		{name: "mount clamps both deployment seats, once each", cfg: Config{ReadOnlyMount: true, DeploymentReadFace: open, DeploymentWriteFace: open},
			read: FaceRoots, write: FaceRoots, clampRead: 1, clampW: 1},
		{name: "mount clamps one seat", cfg: Config{ReadOnlyMount: true, DeploymentWriteFace: open, TaskReadFace: roots},
			read: FaceRoots, write: FaceRoots, clampW: 1},
		{name: "mount refuses a task open", cfg: Config{ReadOnlyMount: true, TaskWriteFace: open}, err: CodeWriteFaceOpenRefused},
		{name: "governance refuses a task open", cfg: Config{OrgGoverned: true, TaskReadFace: open}, err: CodeReadFaceOpenRefused},
		{name: "bad value", cfg: Config{DeploymentWriteFace: FaceSeat("Open")}, err: CodeWriteFaceInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ns notices
			cfg := tc.cfg
			cfg.Env, cfg.Root, cfg.OnNotice = env.NewHost(), root, ns.sink
			f, err := New(context.Background(), cfg)
			if tc.err != "" {
				if sema.CodeOf(err) != tc.err {
					t.Fatalf("New: %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.ReadFace() != tc.read || f.WriteFace() != tc.write || f.Face(Read) != tc.read || f.Face(Write) != tc.write {
				t.Errorf("faces read=%q write=%q, want %q %q", f.ReadFace(), f.WriteFace(), tc.read, tc.write)
			}
			if n := len(ns.withCode(CodeReadFaceClamped)); n != tc.clampRead {
				t.Errorf("%d read clamp notices, want %d", n, tc.clampRead)
			}
			if n := len(ns.withCode(CodeWriteFaceClamped)); n != tc.clampW {
				t.Errorf("%d write clamp notices, want %d", n, tc.clampW)
			}
		})
	}
}

// The value gate fires before anything else in New: a bad seat is named even when the
// rest of the configuration is missing.
func TestNewValueGateFiresFirst(t *testing.T) {
	t.Parallel()
	_, err := New(context.Background(), Config{TaskReadFace: FaceSeat("")})
	if sema.CodeOf(err) != CodeReadFaceInvalid {
		t.Fatalf("New: %v, want %s", err, CodeReadFaceInvalid)
	}
}
