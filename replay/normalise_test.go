package replay

import (
	"testing"
)

const (
	testRoot    = "/work/proj"
	testScratch = "/tmp/sema-replay-123456"
)

func TestNormaliser(t *testing.T) {
	n := NewNormaliser(testRoot, testScratch)
	for _, tc := range []struct{ name, in, want string }{
		{"scratch path becomes the root", "/tmp/sema-replay-123456/a.txt", "/work/proj/a.txt"},
		{"scratch path alone", "cwd: /tmp/sema-replay-123456\n", "cwd: /work/proj\n"},
		{"a longer name is not the scratch", "/tmp/sema-replay-1234567/a", "<tmp>/a"},
		{"scratch inside a longer path is kept", "/x/tmp/sema-replay-123456/a", "/x/tmp/sema-replay-123456/a"},
		{"the root is kept", "/work/proj/b.go:12: x", "/work/proj/b.go:12: x"},
		{"rfc 3339", "at 2026-12-06T06:06:29Z done", "at <time> done"},
		{"rfc 3339 with fraction and zone", "2026-12-06T06:06:29.123456+01:00", "<time>"},
		{"iso with a space", "Date: 2026-12-06 06:06:29 +0000", "Date: <time>"},
		{"ls -l time", "-rw-r--r-- 1 a a 5 Dec  6 06:06 a.txt", "-rw-r--r-- 1 a a 5 <time> a.txt"},
		{"a bare clock", "started 06:06:29.5 ok", "started <time> ok"},
		{"go test duration", "ok  \tpkg\t0.012s", "ok  \tpkg\t<duration>"},
		{"milliseconds and minutes", "took 12ms, then 2m3.5s", "took <duration>, then <duration>"},
		{"microseconds", "850µs", "<duration>"},
		{"a word ending in s is kept", "results 3 files", "results 3 files"},
		{"uuid", "session 0b7c8f1e-3a2d-4c5b-9e8f-1a2b3c4d5e6f ended", "session <id> ended"},
		{"temp path", "wrote /tmp/go-build123/b001/x", "wrote <tmp>/b001/x"},
		{"tmp dir alone is kept", "ls /tmp/", "ls /tmp/"},
		{"plain text unchanged", "     1\tone\n     2\ttwo\n", "     1\tone\n     2\ttwo\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := n.Text(tc.in); got != tc.want {
				t.Fatalf("Text(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestNormaliserKeepsARootInTheTempDir(t *testing.T) {
	n := NewNormaliser("/tmp/TestX1/001", "/tmp/sema-replay-9")
	for in, want := range map[string]string{
		"/tmp/sema-replay-9/f.txt": "/tmp/TestX1/001/f.txt",
		"/tmp/TestX1/001/f.txt":    "/tmp/TestX1/001/f.txt",
		"/tmp/TestX1/002/f.txt":    "<tmp>/002/f.txt",
	} {
		if got := n.Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReplacePath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"file_path":"/r/a"}`, `{"file_path":"/s/a"}`},
		{"cd /r && ls", "cd /s && ls"},
		{"/r", "/s"},
		{"/rx/a", "/rx/a"},
		{"/q/r/a", "/q/r/a"},
	} {
		if got := replacePath(tc.in, "/r", "/s"); got != tc.want {
			t.Errorf("replacePath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzNormalise checks that normalising never panics and settles: a normalised text
// normalises to itself, whatever it holds.
func FuzzNormalise(f *testing.F) {
	for _, s := range []string{
		"", "/tmp/sema-replay-123456/a.txt", "2026-12-06T06:06:29Z", "Dec  6 06:06 x", "1.5s 12ms",
		"0b7c8f1e-3a2d-4c5b-9e8f-1a2b3c4d5e6f", "/tmp//x", "/tmp/a/tmp/b", "/work/proj/tmp/x", "\xff/tmp/\xfe",
		"/tmp/sema-replay-123456/tmp/sema-replay-123456", "12:00:00:00", "2026-12-06 06:06",
	} {
		f.Add(s)
	}
	n := NewNormaliser(testRoot, testScratch)
	f.Fuzz(func(t *testing.T, s string) {
		once := n.Text(s)
		if twice := n.Text(once); twice != once {
			t.Fatalf("not idempotent:\n in    %q\n once  %q\n twice %q", s, once, twice)
		}
		// Same's shortcut agrees with comparing the normalised texts.
		if !n.Same(s, once) {
			t.Fatalf("Same(%q, its normalised text) is false", s)
		}
	})
}
