// Package pgtest gives tests a PostgreSQL schema of their own on the database
// SEMA_TEST_POSTGRES names. Without one a test skips and says how to run it — unless
// SEMA_REQUIRE_POSTGRES=1 (CI sets it), when the test fails, so a missing database is
// never a silent pass.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// How says how to run the PostgreSQL tests.
const How = "set SEMA_TEST_POSTGRES=postgres://USER@HOST:PORT/DATABASE?sslmode=disable to run the PostgreSQL tests " +
	"(each test creates and drops a schema of its own there)"

// Available reports whether a test database is configured, failing t when one is
// required and missing.
func Available(t testing.TB) bool {
	t.Helper()
	if os.Getenv("SEMA_TEST_POSTGRES") != "" {
		return true
	}
	if os.Getenv("SEMA_REQUIRE_POSTGRES") == "1" {
		t.Fatal("SEMA_REQUIRE_POSTGRES=1 but no database: " + How)
	}
	return false
}

// Schema creates an empty schema of a random name, drops it with everything in it when
// the test ends, and returns a postgres:// URL whose connections see that schema first.
// It skips t (or fails it, see Available) without a test database.
func Schema(t testing.TB) string {
	t.Helper()
	if !Available(t) {
		t.Skip(How)
	}
	dsn := os.Getenv("SEMA_TEST_POSTGRES")
	var b [6]byte
	rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	exec := func(q string) error {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, q)
		return err
	}
	if err := exec("CREATE SCHEMA " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := exec("DROP SCHEMA " + name + " CASCADE"); err != nil {
			t.Error(err)
		}
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + name
}
