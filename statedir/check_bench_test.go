package statedir_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/statedir"
)

// bigStateDir makes a state directory of 1,000 sessions of 10 entries of about 0.9 KB
// each (a database of about 50 MB): the size a state directory reaches after months of
// daily use.
func bigStateDir(b *testing.B) string {
	dir := b.TempDir()
	d, err := statedir.Open(b.Context(), dir)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	text := strings.Repeat("the model read the file and found nothing to change there. ", 14)
	payload, _ := json.Marshal(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}})
	for i := range 1000 {
		s, err := d.Sessions().Create(b.Context(), session.Session{Root: fmt.Sprintf("/w/%d", i%20)})
		if err != nil {
			b.Fatal(err)
		}
		leg, err := d.Sessions().StartLeg(b.Context(), s.ID)
		if err != nil {
			b.Fatal(err)
		}
		es := make([]session.Entry, 10)
		for j := range es {
			es[j] = session.Entry{SessionID: s.ID, LegID: leg.ID, Kind: "assistant", Payload: payload}
		}
		if _, err := d.Sessions().AppendBatch(b.Context(), es); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkCheck measures what checking a large state database costs, with a fresh
// connection each time as a new sema process has (the file itself in the page cache):
// quick_check, integrity_check (what Open runs), the same through a read-only
// connection, and Open as every command runs it.
func BenchmarkCheck(b *testing.B) {
	dir := bigStateDir(b)
	path := filepath.Join(dir, statedir.DatabaseName)
	fi, _ := os.Stat(path)
	mb := float64(fi.Size()) / 1e6
	for _, pragma := range []string{"quick_check", "integrity_check", "quick_check_ro"} {
		b.Run(pragma, func(b *testing.B) {
			for b.Loop() {
				q := "file:" + (&url.URL{Path: path}).EscapedPath()
				p := pragma
				if p == "quick_check_ro" {
					q += "?mode=ro"
					p = "quick_check"
				}
				db, err := sql.Open("sqlite", q)
				if err != nil {
					b.Fatal(err)
				}
				var res string
				if err := db.QueryRow("PRAGMA " + p).Scan(&res); err != nil || res != "ok" {
					b.Fatal(res, err)
				}
				db.Close()
			}
			b.ReportMetric(mb, "MB")
		})
	}
	b.Run("Open", func(b *testing.B) {
		for b.Loop() {
			d, err := statedir.Open(b.Context(), dir)
			if err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
		b.ReportMetric(mb, "MB")
	})
}
