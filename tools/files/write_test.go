package files

import (
	"context"
	"os"
	"strings"
	"testing"
)

func TestWriteKeepsFileStyle(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, old, content, want string
	}{
		{"CRLF file, LF content", "a\r\nb\r\n", "x\ny\n", "x\r\ny\r\n"},
		{"CRLF file, CRLF content", "a\r\nb\r\n", "x\r\ny\r\n", "x\r\ny\r\n"},
		{"CRLF file, mixed content left alone", "a\r\nb\r\n", "x\r\ny\n", "x\r\ny\n"},
		{"LF file, LF content", "a\nb\n", "x\ny\n", "x\ny\n"},
		{"LF file, CRLF content kept as given", "a\nb\n", "x\r\ny\r\n", "x\r\ny\r\n"},
		{"mostly LF file", "a\nb\nc\r\n", "x\n", "x\n"},
		{"BOM kept", "\uFEFFa\n", "x\n", "\uFEFFx\n"},
		{"BOM not doubled", "\uFEFFa\n", "\uFEFFx\n", "\uFEFFx\n"},
		{"BOM and CRLF", "\uFEFFa\r\nb\r\n", "x\ny", "\uFEFFx\r\ny"},
		{"no BOM added", "a\n", "x\n", "x\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newLaneFix(t)
			f.put("f.txt", c.old)
			f.markRead("f.txt")
			wantCode(t, f.call("Write", map[string]any{"file_path": "f.txt", "content": c.content}), "")
			if got := f.bytes("f.txt"); got != c.want {
				t.Fatalf("file = %q, want %q", got, c.want)
			}
		})
	}
}

func TestWriteNewFileAsGiven(t *testing.T) {
	t.Parallel()
	f := newLaneFix(t)
	r := f.call("Write", map[string]any{"file_path": "deep/er/new.txt", "content": "a\r\nb\n"})
	wantCode(t, r, "")
	if got := f.bytes("deep/er/new.txt"); got != "a\r\nb\n" {
		t.Fatalf("new file = %q", got)
	}
	if r.EditedFile != f.path("deep/er/new.txt") || !strings.Contains(r.TextOf(), "created") {
		t.Fatalf("answer %q, EditedFile %q", r.TextOf(), r.EditedFile)
	}
	fi, err := os.Stat(f.path("deep/er/new.txt"))
	if err != nil || fi.Mode().Perm() != newFilePerm {
		t.Fatalf("mode = %v, %v", fi.Mode(), err)
	}
	// Write of an empty file is allowed; content must still be given.
	wantCode(t, f.call("Write", map[string]any{"file_path": "empty.txt", "content": ""}), "")
	if f.bytes("empty.txt") != "" {
		t.Fatal("empty file not created")
	}
}

func TestWriteKeepsMode(t *testing.T) {
	t.Parallel()
	f := newLaneFix(t)
	f.put("run.sh", "#!/bin/sh\n")
	if err := os.Chmod(f.path("run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.markRead("run.sh")
	wantCode(t, f.call("Write", map[string]any{"file_path": "run.sh", "content": "#!/bin/sh\necho hi\n"}), "")
	if fi, _ := os.Stat(f.path("run.sh")); fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode = %v, want 0755 kept", fi.Mode().Perm())
	}
}

func TestMemoryScan(t *testing.T) {
	t.Parallel()
	secrets := []struct{ name, content string }{
		{"RSA key", "-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n"},
		{"OpenSSH key", "notes\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n"},
		{"PKCS8 key", "-----BEGIN PRIVATE KEY-----\n"},
		{"encrypted key", "-----BEGIN ENCRYPTED PRIVATE KEY-----\n"},
		{"PGP key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n"},
		{"AWS key id", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"},
		{"AWS temp key id", "ASIAIOSFODNN7EXAMPLE"},
		{"GitHub classic", "token: ghp_" + strings.Repeat("a1B2", 9) + "\n"},
		{"GitHub fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"},
	}
	benign := []struct{ name, content string }{
		{"plain notes", "The user prefers tabs.\n"},
		{"public key", "-----BEGIN PUBLIC KEY-----\nMIIB\n"},
		{"certificate", "-----BEGIN CERTIFICATE-----\n"},
		{"AKIA too short", "AKIA1234"},
		{"AKIA inside a word", "XAKIAIOSFODNN7EXAMPLE1"},
		{"lower-case AKIA", "akiaiosfodnn7example"},
		{"ghp too short", "ghp_abc"},
		{"mentions the idea", "never store AWS keys (AKIA...) here"},
	}
	run := func(t *testing.T, rel, content, code string) {
		f := newLaneFix(t)
		f.lc.MemoryDirs = []string{f.path("memory")}
		f.mount(f.rs)
		f.put("memory/.keep", "")
		wantCode(t, f.call("Write", map[string]any{"file_path": rel, "content": content}), code)
		want := content
		if code != "" {
			want = "<missing>"
		}
		if got := f.bytes(rel); got != want {
			t.Fatalf("file = %q, want %q", got, want)
		}
	}
	for _, s := range secrets {
		t.Run("refused/"+s.name, func(t *testing.T) {
			t.Parallel()
			run(t, "memory/sub/m.md", s.content, CodeMemorySecret)
		})
		t.Run("outside memory/"+s.name, func(t *testing.T) {
			t.Parallel()
			run(t, "memoryless/m.md", s.content, "")
		})
	}
	for _, b := range benign {
		t.Run("allowed/"+b.name, func(t *testing.T) {
			t.Parallel()
			run(t, "memory/m.md", b.content, "")
		})
	}
	t.Run("answer names the line, not the secret", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.lc.MemoryDirs = []string{f.path("memory")}
		f.mount(f.rs)
		r := f.call("Write", map[string]any{"file_path": "memory/m.md", "content": "a\nb\nkey AKIAIOSFODNN7EXAMPLE\n"})
		wantCode(t, r, CodeMemorySecret)
		if !strings.Contains(r.TextOf(), "line 3") || strings.Contains(r.TextOf(), "AKIAIOSFODNN7EXAMPLE") {
			t.Fatalf("answer = %q", r.TextOf())
		}
	})
	t.Run("deployment refusal comes first", func(t *testing.T) {
		t.Parallel()
		f := newLaneFix(t)
		f.lc.MemoryDirs = []string{f.path("memory")}
		f.mount(f.rs)
		f.rec.set(func(r *laneRec) {
			r.beforeFn = func(context.Context, BeforeWriteRequest) (BeforeWriteResult, error) {
				return BeforeWriteResult{Code: "deploy.refused", Reason: "not today"}, nil
			}
		})
		wantCode(t, f.call("Write", map[string]any{"file_path": "memory/m.md", "content": "AKIAIOSFODNN7EXAMPLE"}), "deploy.refused")
	})
}
