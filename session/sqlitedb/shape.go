package sqlitedb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
)

// A store's tables are described in the file by the text of their CREATE statements, a
// record like any other: a byte of it can flip ("ended_at" becoming "ended`at") while
// every page stays well-formed and integrity_check passes. The statements written
// against the schema then fail one by one, some only after others have written. So a
// store compares, when it attaches, the columns and indexes of its tables in the file
// with those its own migration steps give a fresh database.

// shapes caches, per component and schema, the shape its steps give (or the error
// replaying them met): replaying costs an in-memory database per process.
var shapes sync.Map // Component + "\x00" + steps → shapeResult

type shapeResult struct {
	tables map[string]string
	err    error
}

// WantShape is the shape s's steps give a fresh database: per table, its columns and
// indexes, as the check at attach compares them. It replays the steps in an in-memory
// database (once per process and schema). A store whose schema carries Shape checks it
// against WantShape in its tests.
func WantShape(ctx context.Context, s Schema) (map[string]string, error) {
	s.Shape = nil
	return wantShape(ctx, s)
}

// wantShape is the shape of s's tables on a fresh database: s.Shape when the store knows
// it ahead, else the steps replayed.
func wantShape(ctx context.Context, s Schema) (map[string]string, error) {
	if s.Shape != nil {
		return s.Shape, nil
	}
	key := s.Component + "\x00" + strings.Join(s.Steps, "\x00")
	if r, ok := shapes.Load(key); ok {
		return r.(shapeResult).tables, r.(shapeResult).err
	}
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	var r shapeResult
	for i, step := range s.Steps {
		if _, err := db.ExecContext(ctx, step); err != nil {
			r.err = fmt.Errorf("replay %s step %d: %w", s.Component, i+1, err)
			break
		}
	}
	if r.err == nil {
		r.tables, r.err = shapeOf(ctx, db, nil)
	}
	shapes.Store(key, r)
	return r.tables, r.err
}

// shapeOf describes the tables of db (only those named in want, when want is not nil):
// per table, its columns (name, type, not null, default, key) and its indexes with
// their columns, one line each. Two statements read every table's: the columns, then
// the indexes.
func shapeOf(ctx context.Context, db *sql.DB, want map[string]string) (map[string]string, error) {
	const tables = `FROM sqlite_master m, %s(m.name) p WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\_%%' ESCAPE '\'`
	cols, err := pairs(ctx, db, `SELECT m.name, p.name || ' ' || p.type || ' ' || p."notnull" || ' ' || COALESCE(p.dflt_value, '-') || ' ' || p.pk `+
		fmt.Sprintf(tables, "pragma_table_info")+` ORDER BY m.name, p.cid`, want)
	if err != nil {
		return nil, err
	}
	idx, err := pairs(ctx, db, `SELECT m.name, p.name || ' ' || p."unique" || ' (' ||
			(SELECT group_concat(COALESCE(ii.name, '?'), ',') FROM pragma_index_info(p.name) ii) || ')' `+
		fmt.Sprintf(tables, "pragma_index_list")+` ORDER BY m.name, p.name`, want)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, c := range cols {
		out[name] = strings.Join(c, ", ") + "; indexes: " + strings.Join(idx[name], ", ")
	}
	return out, nil
}

// pairs runs a query of (table, line) rows and groups the lines by table, in the rows'
// order; tables not in want (when want is not nil) are left out.
func pairs(ctx context.Context, db *sql.DB, query string, want map[string]string) (map[string][]string, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, line string
		if err := rows.Scan(&table, &line); err != nil {
			return nil, err
		}
		if want != nil {
			if _, ok := want[table]; !ok {
				continue
			}
		}
		out[table] = append(out[table], line)
	}
	return out, rows.Err()
}

// checkShape compares the tables of s in db with those its steps give a fresh database.
// A table missing, or one whose columns or indexes differ, is damage (see schemaDamage).
func checkShape(ctx context.Context, db *sql.DB, s Schema) error {
	want, err := wantShape(ctx, s)
	if err != nil || len(want) == 0 {
		return err
	}
	have, err := shapeOf(ctx, db, want)
	if err != nil {
		return handleFor(db).fault(err)
	}
	for name, w := range want {
		h, ok := have[name]
		switch {
		case !ok:
			return schemaDamage(handleFor(db), s.Component, "table "+name+" is missing", nil)
		case h != w:
			return schemaDamage(handleFor(db), s.Component, fmt.Sprintf("table %s has (%s), not (%s)", name, h, w), nil)
		}
	}
	return nil
}
