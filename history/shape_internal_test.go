package history

import (
	"testing"

	"github.com/sema-agent/sema/session/sqlitedb/shapetest"
)

// TestShapeIsCurrent: the shape the store checks an existing file against
// (sqliteSchema.Shape) is the one its migration steps give; a new step makes it fail
// until sqlite_shape.go is written again with -update.
func TestShapeIsCurrent(t *testing.T) {
	shapetest.Check(t, sqliteSchema, "history", "sqliteShape", "sqlite_shape.go")
}
