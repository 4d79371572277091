package sqlstore

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestSQLiteSpelling(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`SELECT a FROM sema_t WHERE x = $1 AND y = $12`, `SELECT a FROM t WHERE x = ?1 AND y = ?12`},
		// Literals are kept as written, '' included.
		{`SELECT '$1', 'it''s sema_x', sema_t.a FROM sema_t WHERE b = $2`, `SELECT '$1', 'it''s sema_x', t.a FROM t WHERE b = ?2`},
		// Only a name that starts with sema_ loses it; a $ without a digit is no parameter.
		{`SELECT x_sema_y, a$b, $ FROM sema_t`, `SELECT x_sema_y, a$b, $ FROM t`},
		{`sema_t`, `t`},
	} {
		if got := SQLite.SQL(tc.in); got != tc.want {
			t.Errorf("SQLite.SQL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := Postgres.SQL(tc.in); got != tc.in {
			t.Errorf("Postgres.SQL(%q) = %q, want it unchanged", tc.in, got)
		}
	}
}

// Every shared statement, spelled for SQLite, names the SQLite schemas' tables and
// SQLite's parameters; spelled for PostgreSQL, it is as written.
func TestSharedStatementsSpelled(t *testing.T) {
	t.Parallel()
	for _, set := range []struct {
		name           string
		sqlite, postgr any
	}{
		{"Session", SQLite.Session(), Postgres.Session()},
		{"History", SQLite.History(), Postgres.History()},
	} {
		sv, pv := reflect.ValueOf(set.sqlite), reflect.ValueOf(set.postgr)
		for i := range sv.NumField() {
			name := set.name + "." + sv.Type().Field(i).Name
			s, p := sv.Field(i).String(), pv.Field(i).String()
			if s == "" || !strings.Contains(p, "$1") || !strings.Contains(p, "sema_") {
				t.Errorf("%s: PostgreSQL spelling %q lacks $1 or a sema_ table", name, p)
			}
			if strings.Contains(s, "$") || strings.Contains(s, "sema_") || !strings.Contains(s, "?1") {
				t.Errorf("%s: SQLite spelling %q keeps a $ or a sema_, or lacks ?1", name, s)
			}
		}
	}
}

type fakeRows struct {
	vals []int
	i    int
	err  error
}

func (r *fakeRows) Next() bool { r.i++; return r.i <= len(r.vals) }
func (r *fakeRows) Err() error { return r.err }
func (r *fakeRows) Scan(dest ...any) error {
	*dest[0].(*int) = r.vals[r.i-1]
	return nil
}

func scanInt(r Scanner, v *int) error {
	if err := r.Scan(v); err != nil {
		return err
	}
	if *v < 0 {
		return errors.New("negative")
	}
	return nil
}

func TestCollect(t *testing.T) {
	t.Parallel()
	got, err := Collect(&fakeRows{vals: []int{3, 1, 2}}, scanInt)
	if err != nil || !reflect.DeepEqual(got, []int{3, 1, 2}) {
		t.Fatalf("Collect = %v, %v; want [3 1 2] in order", got, err)
	}
	if got, err := Collect(&fakeRows{}, scanInt); err != nil || got != nil {
		t.Fatalf("Collect of no rows = %#v, %v; want a nil slice", got, err)
	}
	if got, err := Collect(&fakeRows{vals: []int{1, -1, 2}}, scanInt); err == nil || got != nil {
		t.Fatalf("Collect with a failing scan = %v, %v; want no rows and the error", got, err)
	}
	bad := errors.New("connection lost")
	if got, err := Collect(&fakeRows{vals: []int{1}, err: bad}, scanInt); !errors.Is(err, bad) || got != nil {
		t.Fatalf("Collect after a failed read = %v, %v; want no rows and %v", got, err, bad)
	}
}

func TestOne(t *testing.T) {
	t.Parallel()
	r := &fakeRows{vals: []int{7}, i: 1}
	if v, err := One(r, scanInt); err != nil || v != 7 {
		t.Fatalf("One = %v, %v; want 7", v, err)
	}
	r = &fakeRows{vals: []int{-1}, i: 1}
	if _, err := One(r, scanInt); err == nil {
		t.Fatal("One with a failing scan returned no error")
	}
	var s string
	if err := ScanString(stringRow("abc"), &s); err != nil || s != "abc" {
		t.Fatalf("ScanString = %q, %v; want abc", s, err)
	}
}

type stringRow string

func (r stringRow) Scan(dest ...any) error {
	*dest[0].(*string) = string(r)
	return nil
}

func TestListSessions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d         Dialect
		root      string
		rootsOnly bool
		limit     int
		want      string
		args      []any
	}{
		{SQLite, "", false, 0, `SELECT c FROM sessions ORDER BY o`, nil},
		{SQLite, "/w", true, 5, `SELECT c FROM sessions WHERE root = ?1 AND parent_id = '' ORDER BY o LIMIT ?2`, []any{"/w", 5}},
		{Postgres, "", true, 1, `SELECT c FROM sema_sessions WHERE parent_id = '' ORDER BY o LIMIT $1`, []any{1}},
		{Postgres, "/w", false, 0, `SELECT c FROM sema_sessions WHERE root = $1 ORDER BY o`, []any{"/w"}},
	} {
		got, args := tc.d.ListSessions("c", "o", tc.root, tc.rootsOnly, tc.limit)
		if got != tc.want || !reflect.DeepEqual(args, tc.args) {
			t.Errorf("ListSessions(%q, %v, %d) = %q %v, want %q %v", tc.root, tc.rootsOnly, tc.limit, got, args, tc.want, tc.args)
		}
	}
}
