package statedir_test

import (
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/statedir"
)

// BenchmarkOpen measures opening a state directory as a sema process does before its
// first model request: fresh (the first run on a machine, or with a new --home: the
// database is made) and existing (every later run: it is opened and checked).
func BenchmarkOpen(b *testing.B) {
	b.Run("fresh", func(b *testing.B) {
		base := b.TempDir()
		i := 0
		for b.Loop() {
			i++
			d, err := statedir.Open(b.Context(), filepath.Join(base, "s", string(rune('a'+i%26)), filepath.Base(b.TempDir())))
			if err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
	})
	b.Run("existing", func(b *testing.B) {
		dir := b.TempDir()
		d, err := statedir.Open(b.Context(), dir)
		if err != nil {
			b.Fatal(err)
		}
		d.Close()
		for b.Loop() {
			d, err := statedir.Open(b.Context(), dir)
			if err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
	})
}
