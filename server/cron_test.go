package server

import (
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema"
)

// TestCronNext: each expression's next firings after a fixed time, in UTC.
func TestCronNext(t *testing.T) {
	// Friday 5 June 2026, 08:59:30 UTC.
	from := time.Date(2026, 6, 5, 8, 59, 30, 0, time.UTC)
	for _, c := range []struct {
		expr string
		want []string
	}{
		{"0 9 * * 1-5", []string{"2026-06-05T09:00", "2026-06-08T09:00", "2026-06-09T09:00"}},
		{"*/15 * * * *", []string{"2026-06-05T09:00", "2026-06-05T09:15", "2026-06-05T09:30"}},
		{"5,35 8-9 * * *", []string{"2026-06-05T09:05", "2026-06-05T09:35", "2026-06-06T08:05"}},
		{"0 0 1 * *", []string{"2026-07-01T00:00", "2026-08-01T00:00"}},
		{"0 0 29 2 *", []string{"2028-02-29T00:00", "2032-02-29T00:00"}},
		{"30 12 * jan-mar mon", []string{"2027-01-04T12:30", "2027-01-11T12:30"}},
		{"0 12 * * 7", []string{"2026-06-07T12:00", "2026-06-14T12:00"}},
		// Both day fields restricted: a day matching either fires (the 1st, or Mondays).
		{"0 0 1 * 1", []string{"2026-06-08T00:00", "2026-06-15T00:00", "2026-06-22T00:00", "2026-06-29T00:00", "2026-07-01T00:00"}},
		// A step on * of a day field leaves it unrestricted: both must match.
		{"0 0 */2 * 1", []string{"2026-06-15T00:00", "2026-06-29T00:00"}},
		{"10/20 * * * *", []string{"2026-06-05T09:10", "2026-06-05T09:30", "2026-06-05T09:50", "2026-06-05T10:10"}},
		{"@hourly", []string{"2026-06-05T09:00", "2026-06-05T10:00"}},
		{"@daily", []string{"2026-06-06T00:00", "2026-06-07T00:00"}},
		{"@weekly", []string{"2026-06-07T00:00", "2026-06-14T00:00"}},
		{"@every 90m", []string{"2026-06-05T10:29", "2026-06-05T11:59"}},
		{"  0  9 * * MON-FRI ", []string{"2026-06-05T09:00", "2026-06-08T09:00"}},
	} {
		s, err := parseCron(c.expr)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		at := from
		for i, w := range c.want {
			at = s.next(at)
			if got := at.Format("2006-01-02T15:04"); got != w {
				t.Fatalf("%q firing %d: %s, want %s", c.expr, i+1, got, w)
			}
		}
	}
}

// TestCronRefusals: an expression that does not parse is refused by name, saying which
// part is wrong.
func TestCronRefusals(t *testing.T) {
	for _, c := range []struct{ expr, says string }{
		{"", "has 0 fields"},
		{"* * * *", "has 4 fields"},
		{"* * * * * *", "has 6 fields"},
		{"60 * * * *", "minute field"},
		{"* 24 * * *", "outside 0-23"},
		{"* * 0 * *", "day-of-month"},
		{"* * * 13 *", "month field"},
		{"* * * * 8", "day-of-week"},
		{"5-1 * * * *", "runs backwards"},
		{"*/0 * * * *", "step"},
		{"*/61 * * * *", "step"},
		{"a * * * *", "not a number"},
		{"-5 * * * *", "minute"},
		{"+5 * * * *", "not a number"},
		{"1,,2 * * * *", "not a number"},
		{"* * * foo *", "or a name"},
		{"@every", "needs a duration"},
		{"@every soon", "not a duration"},
		{"@every -5s", "positive"},
		{"@every 0s", "positive"},
		{"@fortnightly", "unknown macro"},
	} {
		_, err := parseCron(c.expr)
		if !sema.IsCode(err, CodeCronInvalid) {
			t.Fatalf("%q: %v, want %s", c.expr, err, CodeCronInvalid)
		}
		if msg := sema.MessageOf(err); !strings.Contains(msg, c.says) {
			t.Fatalf("%q: %q does not say %q", c.expr, msg, c.says)
		}
	}
	// Parses, but never fires: the refusal is the schedule's (see newSchedule).
	s, err := parseCron("0 0 30 2 *")
	if err != nil {
		t.Fatal(err)
	}
	if at := s.next(time.Now()); !at.IsZero() {
		t.Fatalf("the 30th of February fires at %s", at)
	}
}

// FuzzCron: any expression parses or is refused by name, and a parsed one's next
// firing is after the time it is asked from, on a whole minute for the five fields.
func FuzzCron(f *testing.F) {
	for _, s := range []string{"0 9 * * 1-5", "*/15 * * * *", "@every 30s", "@daily", "0 0 1 * 1", "5/15 1-5,7 * jan-dec sun", "0 0 30 2 *"} {
		f.Add(s)
	}
	from := time.Date(2026, 6, 5, 8, 59, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := parseCron(expr)
		if err != nil {
			if !sema.IsCode(err, CodeCronInvalid) {
				t.Fatalf("%q: refused without the code: %v", expr, err)
			}
			return
		}
		at := s.next(from)
		if at.IsZero() {
			return
		}
		if !at.After(from) {
			t.Fatalf("%q: next %s is not after %s", expr, at, from)
		}
		if s.every == 0 && at.Second() != 0 {
			t.Fatalf("%q: next %s is not on a minute", expr, at)
		}
		if again := s.next(at); !again.IsZero() && !again.After(at) {
			t.Fatalf("%q: the firing after %s is %s", expr, at, again)
		}
	})
}
