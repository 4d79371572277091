package server

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sema-agent/sema"
)

// CodeCronInvalid: a schedule's cron expression that does not parse, never fires, or
// fires more often than the service allows.
const CodeCronInvalid = "schedule.cron_invalid"

// cronSchedule is a parsed schedule expression: five cron fields (minute hour
// day-of-month month day-of-week), or a fixed interval (@every 30s). Times are UTC.
type cronSchedule struct {
	// every is the interval of an @every expression; zero for the five fields.
	every time.Duration
	// minute … dow are bit sets of the values each field allows.
	minute, hour, dom, month, dow uint64
	// domStar and dowStar say the day fields were "*": cron's rule is that when both
	// day fields are restricted a day matching either one fires, else both must match.
	domStar, dowStar bool
}

// cronField is one of the five fields: its name, its range, the names its values may
// be written with (month and day-of-week).
type cronField struct {
	name     string
	lo, hi   int
	names    []string
	nameBase int
}

var cronFields = [5]cronField{
	{name: "minute", lo: 0, hi: 59},
	{name: "hour", lo: 0, hi: 23},
	{name: "day-of-month", lo: 1, hi: 31},
	{name: "month", lo: 1, hi: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}, nameBase: 1},
	// 7 is Sunday as well as 0, as in Vixie cron.
	{name: "day-of-week", lo: 0, hi: 7, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// cronMacros are the @words that stand for five fields.
var cronMacros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// maxCronLen bounds an expression: a schedule is a short line, and the parser's work
// grows with it.
const maxCronLen = 256

// parseCron reads a schedule expression. A refusal names the part that is wrong.
func parseCron(expr string) (*cronSchedule, error) {
	bad := func(format string, args ...any) error {
		return sema.Errorf(CodeCronInvalid, "cron %q: %s", expr, fmt.Sprintf(format, args...)).With("field", "cron")
	}
	if len(expr) > maxCronLen {
		return nil, sema.Errorf(CodeCronInvalid, "the cron expression is %d bytes; give at most %d", len(expr), maxCronLen).With("field", "cron")
	}
	e := strings.TrimSpace(expr)
	if rest, ok := strings.CutPrefix(e, "@every"); ok {
		rest = strings.TrimSpace(rest)
		if rest == "" {
			return nil, bad("@every needs a duration, as in @every 30s or @every 1h30m")
		}
		d, err := time.ParseDuration(rest)
		if err != nil {
			return nil, bad("%q is not a duration; write one as 30s, 5m or 1h30m", rest)
		}
		if d <= 0 {
			return nil, bad("@every needs a positive duration")
		}
		return &cronSchedule{every: d}, nil
	}
	if strings.HasPrefix(e, "@") {
		fields, ok := cronMacros[strings.ToLower(e)]
		if !ok {
			return nil, bad("unknown macro; use @every DURATION, @hourly, @daily, @weekly, @monthly or @yearly")
		}
		e = fields
	}
	parts := strings.Fields(e)
	if len(parts) != 5 {
		return nil, bad("has %d fields; give five (minute hour day-of-month month day-of-week), as in \"0 9 * * 1-5\"", len(parts))
	}
	var sets [5]uint64
	for i, f := range cronFields {
		set, err := f.parse(parts[i])
		if err != nil {
			return nil, bad("%s field %q: %s", f.name, parts[i], err)
		}
		sets[i] = set
	}
	c := &cronSchedule{
		minute: sets[0], hour: sets[1], dom: sets[2], month: sets[3], dow: sets[4],
		// Vixie cron takes a day field starting with * ("*/2" too) as unrestricted.
		domStar: strings.HasPrefix(parts[2], "*") || parts[2] == "?", dowStar: strings.HasPrefix(parts[4], "*") || parts[4] == "?",
	}
	if c.dow&(1<<7) != 0 {
		c.dow = c.dow&^(1<<7) | 1 // 7 is Sunday
	}
	return c, nil
}

// parse reads one field: a comma-separated list of *, a value, or a range a-b, each of
// them optionally with a step (/n).
func (f cronField) parse(s string) (uint64, error) {
	var set uint64
	for _, item := range strings.Split(s, ",") {
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > f.hi-f.lo+1 {
				return 0, fmt.Errorf("the step %q must be a whole number from 1 to %d", stepText, f.hi-f.lo+1)
			}
			step = n
		}
		var lo, hi int
		switch {
		case rng == "*" || rng == "?":
			lo, hi = f.lo, f.hi
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if lo, err = f.value(a); err != nil {
				return 0, err
			}
			if hi, err = f.value(b); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("the range %s runs backwards; write the smaller value first", rng)
			}
		default:
			v, err := f.value(rng)
			if err != nil {
				return 0, err
			}
			lo, hi = v, v
			if hasStep {
				hi = f.hi // "5/15" is 5-59/15, as in Vixie cron
			}
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

// value reads one value of the field: a number in its range or one of its names.
func (f cronField) value(s string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return i + f.nameBase, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil || s == "" || s[0] == '+' || s[0] == '-' {
		if f.names != nil {
			return 0, fmt.Errorf("%q is not a number from %d to %d or a name (%s)", s, f.lo, f.hi, strings.Join(f.names, ", "))
		}
		return 0, fmt.Errorf("%q is not a number from %d to %d", s, f.lo, f.hi)
	}
	if v < f.lo || v > f.hi {
		return 0, fmt.Errorf("%d is outside %d-%d", v, f.lo, f.hi)
	}
	return v, nil
}

// cronHorizon is how far ahead next looks: an expression with no time in it (the 30th
// of February) has none.
const cronHorizon = 5 // years

// next is the first time the schedule fires strictly after t; the zero time when it
// never does (within cronHorizon years).
func (c *cronSchedule) next(t time.Time) time.Time {
	t = t.UTC()
	if c.every > 0 {
		return t.Add(c.every)
	}
	t = t.Truncate(time.Minute).Add(time.Minute)
	end := t.Year() + cronHorizon
	// Each step skips to the start of the next month, day, hour or minute that could
	// match, so the loop runs at most a few thousand times even for a rare time.
	for t.Year() <= end {
		switch {
		case c.month&(1<<int(t.Month())) == 0:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
		case c.hour&(1<<t.Hour()) == 0:
			t = t.Truncate(time.Hour).Add(time.Hour)
		case c.minute&(1<<t.Minute()) == 0:
			t = t.Add(time.Minute)
		default:
			return t
		}
	}
	return time.Time{}
}

func (c *cronSchedule) dayMatches(t time.Time) bool {
	dom := c.dom&(1<<t.Day()) != 0
	dow := c.dow&(1<<int(t.Weekday())) != 0
	if c.domStar || c.dowStar {
		return dom && dow
	}
	return dom || dow
}

// shortest bounds the gap between two firings from below: the interval of @every, a
// minute (the fields' finest unit) for the five fields.
func (c *cronSchedule) shortest() time.Duration {
	if c.every > 0 {
		return c.every
	}
	return time.Minute
}
