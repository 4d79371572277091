package env_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/env"
)

// ReadDirUpTo lists a directory of at most n entries, sorted, as ReadDir does, and of a
// larger one gives none and says there are more.
func TestReadDirUpTo(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"e", "c", "a", "d", "b"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := env.NewHost()
	all, err := h.ReadDir(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	got, more, err := h.ReadDirUpTo(t.Context(), dir, 6)
	if err != nil || more || fmt.Sprint(got) != fmt.Sprint(all) {
		t.Errorf("ReadDirUpTo(6) of six entries = %v, %v, %v; want %v", got, more, err, all)
	}
	got, more, err = h.ReadDirUpTo(t.Context(), dir, 5)
	if err != nil || !more || got != nil {
		t.Errorf("ReadDirUpTo(5) of six entries = %v, %v, %v; want none and more", got, more, err)
	}
	empty := t.TempDir()
	if got, more, err := h.ReadDirUpTo(t.Context(), empty, 0); err != nil || more || len(got) != 0 {
		t.Errorf("ReadDirUpTo(0) of an empty directory = %v, %v, %v", got, more, err)
	}
	if _, _, err := h.ReadDirUpTo(t.Context(), filepath.Join(dir, "missing"), 3); !os.IsNotExist(err) {
		t.Errorf("ReadDirUpTo of a missing directory: %v", err)
	}
}
