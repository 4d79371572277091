package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/replay"
	"github.com/sema-agent/sema/server"
	"github.com/sema-agent/sema/session"
)

// newReplayCmd is sema serve replay: `sema replay` for a session the service recorded,
// on SQLite or Postgres, under its tenant's policy and managed settings as they are now.
func newReplayCmd(o *serveOptions, stdout io.Writer) *cobra.Command {
	var ro server.ReplayOptions
	var format string
	cmd := &cobra.Command{
		Use:   "replay SESSION",
		Short: "Replay a session the service recorded, offline, under its tenant's policy today; exit 1 when a call diverged",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usageErr(sema.Errorf(codeUsage, "--output-format is text or json, not %q", format))
			}
			return withServer(cmd, o, func(s *server.Server) error {
				rep, err := s.ReplaySession(cmd.Context(), args[0], ro)
				if err != nil {
					if sema.IsCode(err, session.CodeNotFound) || sema.CodeOf(err) != "" && sema.CodeOf(err) != replay.CodeDiverged {
						return usageErr(err)
					}
					return err
				}
				if format == "json" {
					if err := printJSON(stdout, rep); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(stdout, "%s: %d turns, %d calls compared\n", rep.Status, rep.Turns, rep.Calls)
					for _, d := range rep.Divergences {
						fmt.Fprintf(stdout, "  turn %d %s: %s\n", d.Turn, d.Tool, d.Reason)
					}
				}
				return rep.Err()
			})
		},
	}
	cmd.Flags().IntVar(&ro.At, "at", 0, "replay the turns up to and including TURN (default: every turn)")
	cmd.Flags().StringVar(&ro.Scratch, "in", "", "the scratch directory to replay in: empty or missing, kept afterwards (default: a temporary one, removed)")
	cmd.Flags().StringVar(&ro.PermissionMode, "permission-mode", "", "the mode to replay in (default: the mode the session recorded)")
	cmd.Flags().StringVar(&format, "output-format", "text", "text|json")
	addStoreFlags(cmd, o)
	return cmd
}
