package server

import (
	"context"

	"github.com/sema-agent/sema"
)

// openPostgres opens the Postgres backend.
func openPostgres(ctx context.Context, url string) (backend, error) {
	return nil, sema.Errorf(CodeStoreFailed, "the Postgres store is not built yet; run without --store to use SQLite in the state directory")
}
