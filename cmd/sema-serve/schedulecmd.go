package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/server"
)

// newScheduleCmd is sema serve schedule: the operator's side of the tenants' schedules
// (a tenant has the same through POST/GET/DELETE /v1/schedules).
func newScheduleCmd(o *serveOptions, stdout io.Writer) *cobra.Command {
	sched := &cobra.Command{Use: "schedule", Short: "Manage the tenants' recurring tasks"}
	var cron string
	var task client.TaskSpec
	add := &cobra.Command{
		Use:   "add --tenant NAME --cron EXPR --prompt TEXT",
		Short: "Make a schedule for a tenant: its task is submitted at each time the cron expression names (UTC)",
		Long: `Make a schedule for a tenant: at each time the cron expression names (UTC), the
service submits the task as the tenant's POST /v1/tasks would, within the tenant's
policy, concurrency limit and daily tokens. The expression is five fields (minute hour
day-of-month month day-of-week, as in "0 9 * * 1-5"), @every DURATION ("@every 30m"),
@hourly, @daily, @weekly, @monthly or @yearly.

The task is checked now as the service checks a submission, its model opened as the
service would open it: run this where the service's model settings (SEMA_MODEL, the API
key) are, and give --models as the service has them when the task names a model.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.tenant == "" || cron == "" || task.Prompt == "" {
				return usageErr(sema.Errorf(codeUsage, "name the tenant, the schedule and the task: --tenant NAME --cron EXPR --prompt TEXT"))
			}
			return withServer(cmd, o, func(s *server.Server) error {
				sc, err := s.AddSchedule(cmd.Context(), o.tenant, cron, task)
				if err != nil {
					return usageErr(err)
				}
				return printJSON(stdout, sc)
			})
		},
	}
	add.Flags().StringVar(&o.tenant, "tenant", "", "the tenant whose task it is")
	add.Flags().StringVar(&cron, "cron", "", `when it fires, in UTC: "0 9 * * 1-5", "@every 30m", @hourly, @daily, @weekly`)
	add.Flags().StringVar(&task.Prompt, "prompt", "", "the task's prompt")
	add.Flags().StringVar(&task.Cwd, "cwd", "", "the task's root: a directory relative to the tenant's base (default: the base)")
	add.Flags().StringVar(&task.PermissionMode, "permission-mode", "", "the task's permission mode, among those the tenant's policy allows")
	add.Flags().StringVar(&task.Model, "model", "", "the task's model word (default: the service's default model)")
	add.Flags().IntVar(&task.MaxTurns, "max-turns", 0, "bound the model responses of each task (0: the policy's bound, else none)")
	add.Flags().StringSliceVar(&o.models, "models", nil, "the service's models besides its default, as sema serve --models gives them")
	addStoreFlags(add, o)

	list := &cobra.Command{
		Use:   "list --tenant NAME",
		Short: "List a tenant's schedules as JSON: next firing, firings, the last refused one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.tenant == "" {
				return usageErr(sema.Errorf(codeUsage, "name the tenant: --tenant NAME"))
			}
			return withServer(cmd, o, func(s *server.Server) error {
				list, err := s.Schedules(cmd.Context(), o.tenant)
				if err != nil {
					return usageErr(err)
				}
				return printJSON(stdout, list)
			})
		},
	}
	list.Flags().StringVar(&o.tenant, "tenant", "", "the tenant")
	addStoreFlags(list, o)

	del := &cobra.Command{
		Use:   "delete --tenant NAME ID",
		Short: "Delete a tenant's schedule: it fires no more (its tasks are kept)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.tenant == "" {
				return usageErr(sema.Errorf(codeUsage, "name the tenant: --tenant NAME"))
			}
			return withServer(cmd, o, func(s *server.Server) error {
				if err := s.RemoveSchedule(cmd.Context(), o.tenant, args[0]); err != nil {
					return usageErr(err)
				}
				fmt.Fprintf(stdout, "schedule %s deleted\n", args[0])
				return nil
			})
		},
	}
	del.Flags().StringVar(&o.tenant, "tenant", "", "the tenant")
	addStoreFlags(del, o)
	sched.AddCommand(add, list, del)
	return sched
}
