package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/worktree"
)

// newWorktreeCmd is sema worktree: the worktrees -w made in this repository.
func newWorktreeCmd(stdout io.Writer) *cobra.Command {
	var home, cwd string
	cmd := &cobra.Command{Use: "worktree", Short: "List and remove the git worktrees sema -w made in this repository"}
	cmd.PersistentFlags().StringVar(&home, "home", "", "state directory, for each worktree's session (default $SEMA_HOME, else ~/.sema)")
	cmd.PersistentFlags().StringVar(&cwd, "cwd", "", "a directory of the repository (default: the current one)")
	dir := func() string {
		if cwd != "" {
			return cwd
		}
		wd, _ := os.Getwd()
		return wd
	}
	var format string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the worktrees with their branch, newest session, and changed files",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := textOrJSON(format); err != nil {
				return err
			}
			wts, err := worktree.List(cmd.Context(), dir())
			if err != nil {
				return usageErr(err)
			}
			sessions := worktreeSessions(cmd, home, wts)
			if format == "json" {
				type item struct {
					worktree.Info
					Session string `json:"session"`
				}
				doc := struct {
					Worktrees []item `json:"worktrees"`
				}{Worktrees: []item{}}
				for _, w := range wts {
					if w.Changed == nil {
						w.Changed = []string{}
					}
					doc.Worktrees = append(doc.Worktrees, item{Info: w, Session: sessions[w.Path]})
				}
				return printJSON(stdout, doc)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tBRANCH\tSESSION\tCHANGED\tPATH")
			for _, w := range wts {
				s := sessions[w.Path]
				if s == "" {
					s = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", w.Name, w.Branch, s, len(w.Changed), w.Path)
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&format, "output-format", "text", "text|json")
	var force bool
	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a worktree (its branch and commits stay); refused with changes unless --force",
		Args:  exactlyOne("worktree name", "sema worktree remove NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := worktree.Remove(cmd.Context(), dir(), args[0], force); err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(stdout, "worktree %s removed; its branch %s%s stays\n", args[0], worktree.BranchPrefix, args[0])
			return nil
		},
	}
	remove.Flags().BoolVar(&force, "force", false, "remove it although it has changes, which are lost")
	cmd.AddCommand(list, remove)
	return cmd
}

// worktreeSessions maps each worktree's path to its newest session's id: best effort —
// a state directory that cannot be opened leaves the column empty.
func worktreeSessions(cmd *cobra.Command, home string, wts []worktree.Info) map[string]string {
	out := map[string]string{}
	if len(wts) == 0 {
		return out
	}
	st, err := openHome(cmd.Context(), home)
	if err != nil {
		return out
	}
	defer st.Close()
	for _, w := range wts {
		ss, err := st.Sessions().List(cmd.Context(), session.Filter{Root: w.Path, RootsOnly: true, Limit: 1})
		if err == nil && len(ss) > 0 {
			out[w.Path] = ss[0].ID
		}
	}
	return out
}
