// Command floorclient is the floor of BenchmarkFirstRequestPaired for a process that
// does what sema's first request needs and nothing else: it makes a SQLite file in
// $HOME (WAL, one table, one row) beside streaming one request through the Anthropic SDK
// to $ANTHROPIC_BASE_URL, as sema opens its state directory beside its first request.
// It links the same SDK and SQLite as sema, and none of the rest.
package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	_ "modernc.org/sqlite"
)

func main() {
	ctx := context.Background()
	stored := make(chan struct{})
	go func() {
		defer close(stored)
		db, err := sql.Open("sqlite", "file:"+filepath.Join(os.Getenv("HOME"), "state.db")+"?_pragma=journal_mode(wal)")
		if err != nil {
			return
		}
		defer db.Close()
		db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, body BLOB)`)
		db.ExecContext(ctx, `INSERT INTO sessions VALUES ('s', x'00')`)
	}()
	c := sdk.NewClient(option.WithAPIKey(os.Getenv("ANTHROPIC_API_KEY")),
		option.WithBaseURL(os.Getenv("ANTHROPIC_BASE_URL")), option.WithMaxRetries(0))
	s := c.Messages.NewStreaming(ctx, sdk.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		Messages:  []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hello"))},
	})
	for s.Next() {
	}
	<-stored
}
