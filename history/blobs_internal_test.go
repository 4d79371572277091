package history

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env/envtest"
)

// Both stores read many blobs at once: more than one query's worth, a sum asked for
// twice, the empty blob, and a sum the store lacks (left out, not an error).
func TestBlobsOf(t *testing.T) {
	sq, err := OpenSQLite(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	for name, s := range map[string]interface {
		Store
		blobsReader
	}{"SQLite": sq, "Memory": NewMemory()} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			want := map[string][]byte{}
			var sums []string
			for i := range blobsChunk + 70 {
				content := []byte(fmt.Sprint("content ", i))
				if i == 0 {
					content = []byte{}
				}
				rec, _, err := s.Insert(ctx, Record{Scope: "S", Key: fmt.Sprintf("/w/f%d", i), Existed: true, Mode: 0o644}, content)
				if err != nil {
					t.Fatal(err)
				}
				want[rec.Sum] = content
				sums = append(sums, rec.Sum)
			}
			missing := strings.Repeat("0", 64)
			got, err := s.blobsOf(ctx, append(append(sums, sums[:10]...), missing))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d blobs, want %d", len(got), len(want))
			}
			for sum, data := range want {
				if b, ok := got[sum]; !ok || string(b) != string(data) || b == nil {
					t.Fatalf("blob %s = %q (%v), want %q", sum, b, ok, data)
				}
			}
		})
	}
}

// A pre-image whose blob is gone from the store fails that file's restore (reported,
// with the store's code), and only that file's.
func TestRewindMissingBlob(t *testing.T) {
	sq, err := OpenSQLite(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	mem := NewMemory()
	for name, c := range map[string]struct {
		s    Store
		drop func(sum string)
	}{
		"SQLite": {sq, func(sum string) {
			if _, err := sq.db.Exec(`PRAGMA foreign_keys = OFF; DELETE FROM history_blobs WHERE sum = ?`, sum); err != nil {
				t.Fatal(err)
			}
		}},
		"Memory": {mem, func(sum string) { delete(mem.blobs, sum) }},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			e := envtest.NewMem()
			if err := e.MkdirAll("/w", 0o755); err != nil {
				t.Fatal(err)
			}
			f := NewFiles(c.s, e)
			keys := []string{"/w/a", "/w/b", "/w/c"}
			for _, k := range keys {
				if err := e.WriteFile(ctx, k, []byte(k+" v0\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.s.MintBoundary(ctx, "S", 1); err != nil {
				t.Fatal(err)
			}
			var lost string
			for _, k := range keys {
				rec, _, err := f.Track(ctx, "S", k)
				if err != nil {
					t.Fatal(err)
				}
				if k == "/w/b" {
					lost = rec.Sum
				}
				data := []byte(k + " v1\n")
				if err := e.WriteFile(ctx, k, data, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := f.Wrote(ctx, rec, data); err != nil {
					t.Fatal(err)
				}
			}
			c.drop(lost)
			led, err := f.Rewind(ctx, "S", 1, RewindOptions{AcceptPartialRestore: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, en := range led.Entries {
				switch {
				case en.Path == "/w/b":
					if en.Status != StatusFailed || !strings.Contains(en.Reason, CodeBlobMissing) && !strings.Contains(en.Reason, "no blob") {
						t.Fatalf("the file without its blob: %+v", en)
					}
				case en.Status != StatusRestored:
					t.Fatalf("%+v", en)
				}
			}
		})
	}
}

// A rewind saving more files than one statement inserts stores every one, with the IDs
// the store gave them, in the order given; a repeated key keeps its first entry.
func TestMintRewindManyFiles(t *testing.T) {
	sq, err := OpenSQLite(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	for name, s := range map[string]Store{"SQLite": sq, "Memory": NewMemory()} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			var saved []Saved
			for i := range 2*mintRows + 50 {
				rec := Record{Key: fmt.Sprintf("/w/f%04d", i), Existed: i%7 != 0, Mode: 0o644, After: AfterAbsent}
				saved = append(saved, Saved{Record: rec, Content: []byte(fmt.Sprint("same for ten ", i/10))})
			}
			saved = append(saved, Saved{Record: Record{Key: "/w/f0001", Existed: true, Mode: 0o600}, Content: []byte("second entry")})
			b, out, err := s.MintRewind(ctx, "S", 0, saved)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != len(saved)-1 {
				t.Fatalf("%d records, want %d", len(out), len(saved)-1)
			}
			stored, err := s.Records(ctx, "S", b.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(stored) != len(out) {
				t.Fatalf("%d stored, want %d", len(stored), len(out))
			}
			for i, r := range out {
				st := stored[i]
				if r.Key != saved[i].Record.Key || st.ID != r.ID || st.Key != r.Key || st.Existed != r.Existed || st.Sum != r.Sum || st.Mode != r.Mode || st.After != AfterAbsent {
					t.Fatalf("record %d: returned %+v, stored %+v", i, r, st)
				}
				if r.Existed {
					data, err := s.Blob(ctx, r.Sum)
					if err != nil || string(data) != string(saved[i].Content) {
						t.Fatalf("blob of %s: %q, %v", r.Key, data, err)
					}
				}
			}
		})
	}
}
