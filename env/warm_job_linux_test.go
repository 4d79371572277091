//go:build linux

package env

import (
	"slices"
	"strings"
	"testing"
)

// A job reads back as it was laid out, whatever its strings hold (but NUL, which no
// argument or environment entry can).
func FuzzWarmJob(f *testing.F) {
	f.Add("/work", "sh\x01-c\x01echo hi", "A=1\x01B=")
	f.Add("", "", "")
	f.Add("/", "3", "=\x01==")
	f.Fuzz(func(t *testing.T, dir, args, environ string) {
		if strings.ContainsRune(dir+args+environ, 0) {
			t.Skip()
		}
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, "\x01")
		}
		in := warmJob{Dir: dir, Args: split(args), Env: split(environ), Fds: []int{0, 2}}
		_, body := in.encode(jobMsg)
		var out warmJob
		if err := out.decodeBody(body); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if out.Dir != in.Dir || !slices.Equal(out.Args, in.Args) || !slices.Equal(out.Env, in.Env) {
			t.Fatalf("round trip: %+v → %+v", in, out)
		}
	})
}

// A body that is not a job is refused, never read as one.
func FuzzWarmJobBody(f *testing.F) {
	f.Add("/\x001\x00sh\x00A=1\x00")
	f.Add("/\x005\x00sh\x00")
	f.Add("/\x00-1\x00")
	f.Fuzz(func(t *testing.T, body string) {
		var j warmJob
		if j.decodeBody([]byte(body)) == nil && len(j.Args)+len(j.Env)+2 != strings.Count(body, "\x00") {
			t.Fatalf("%q read as %+v", body, j)
		}
	})
}
