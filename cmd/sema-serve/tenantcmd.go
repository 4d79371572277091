package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/server"
	"github.com/sema-agent/sema/settings"
	"github.com/spf13/cobra"
)

// newTokenCmd is sema serve token: creating a tenant's bearer tokens.
func newTokenCmd(o *serveOptions, stdout io.Writer) *cobra.Command {
	token := &cobra.Command{Use: "token", Short: "Manage the service's bearer tokens"}
	create := &cobra.Command{
		Use:   "create --tenant NAME --base DIR",
		Short: "Create a tenant (or update its base and limits) and print a new token for it, once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.tenant == "" || o.base == "" {
				return usageErr(sema.Errorf(codeUsage, "name the tenant and its base directory: --tenant NAME --base DIR"))
			}
			return withServer(cmd, o, func(s *server.Server) error {
				tok, err := s.CreateToken(cmd.Context(), o.tenant, absPath(o.base), server.TenantConfig{MaxConcurrent: o.maxTasks, TokensPerDay: o.tokensPerDy, Queue: o.queue})
				if err != nil {
					return usageErr(err)
				}
				fmt.Fprintln(stdout, tok)
				return nil
			})
		},
	}
	create.Flags().StringVar(&o.tenant, "tenant", "", "the tenant's name")
	create.Flags().StringVar(&o.base, "base", "", "the tenant's base directory: every task root must resolve inside it")
	create.Flags().IntVar(&o.maxTasks, "max-concurrent", 0, "tasks the tenant may have queued or running at once (0: no limit)")
	create.Flags().Int64Var(&o.tokensPerDy, "tokens-per-day", 0, "model tokens the tenant may spend in 24 hours (0: no limit)")
	create.Flags().StringVar(&o.queue, "queue", "", "the River queue of the tenant's tasks: run by the processes started with --queues naming it, on the machines where its base exists (default: default)")
	addStoreFlags(create, o)
	token.AddCommand(create)

	return token
}

// newTenantCmd is sema serve tenant: deleting a tenant, setting and showing its policy,
// limits and managed settings.
func newTenantCmd(o *serveOptions, stdout io.Writer) *cobra.Command {
	tenant := &cobra.Command{Use: "tenant", Short: "Manage the service's tenants"}
	tenant.AddCommand(newTenantDeleteCmd(o, stdout), newTenantSetCmd(o, stdout), newTenantShowCmd(o, stdout))
	return tenant
}

// newTenantDeleteCmd is sema serve tenant delete.
func newTenantDeleteCmd(o *serveOptions, stdout io.Writer) *cobra.Command {
	del := &cobra.Command{
		Use:   "delete --tenant NAME",
		Short: "Delete a tenant: its tokens stop working at once (its sessions and files are kept)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.tenant == "" {
				return usageErr(sema.Errorf(codeUsage, "name the tenant: --tenant NAME"))
			}
			return withServer(cmd, o, func(s *server.Server) error {
				if err := s.DeleteTenant(cmd.Context(), o.tenant); err != nil {
					return usageErr(err)
				}
				fmt.Fprintf(stdout, "tenant %s deleted\n", o.tenant)
				return nil
			})
		},
	}
	del.Flags().StringVar(&o.tenant, "tenant", "", "the tenant's name")
	addStoreFlags(del, o)
	return del
}

// newTenantSetCmd is sema serve tenant set.
func newTenantSetCmd(o *serveOptions, stdout io.Writer) *cobra.Command {
	set := &cobra.Command{
		Use:   "set --tenant NAME [--policy FILE] [--managed-settings FILE] [--max-concurrent N] [--tokens-per-day N]",
		Short: "Set a tenant's policy from a JSON file: modes, models, rules, sandbox, network, bounds per task",
		Long: `Set a tenant's policy from a JSON file (- reads standard input), for example:

  {"permission_modes": ["default", "acceptEdits", "plan"],
   "models": ["anthropic/claude-sonnet-4-5"],
   "deny": ["Bash(curl:*)"], "ask": ["Bash"],
   "sandbox": "required", "network": "off",
   "max_turns": 50, "max_tokens_per_task": 500000, "max_usd_per_task": 5}

Every field may be left out. bypassPermissions is refused unless permission_modes lists
it. A task asking for more than its policy allows is refused by name (tenant.policy_*)
before it is queued; the rules, sandbox, network and bounds apply to every leg that
starts from now on. The file replaces the tenant's previous policy.

--managed-settings attaches a managed settings file (the format of the server's
--managed-settings) to this tenant only: its deny and ask rules, sandbox and hooks
bind the tenant's legs that start from now on, on top of the server's file, which still
applies. The store keeps the file's text, so every node applies the same one; set it
again after editing it. --no-managed-settings detaches it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := readTenantSet(cmd, o)
			if err != nil {
				return err
			}
			return withServer(cmd, o, func(s *server.Server) error {
				if err := in.apply(cmd, s, o.tenant); err != nil {
					return usageErr(err)
				}
				fmt.Fprintf(stdout, "tenant %s set\n", o.tenant)
				return nil
			})
		},
	}
	set.Flags().StringVar(&o.tenant, "tenant", "", "the tenant's name")
	set.Flags().StringVar(&o.policy, "policy", "", "the policy's JSON file (-: standard input)")
	set.Flags().StringVar(&o.tenantFile, "managed-settings", "", "a managed settings file for this tenant's tasks only, on top of the server's")
	set.Flags().BoolVar(&o.noTenantFile, "no-managed-settings", false, "detach the tenant's managed settings file")
	set.Flags().IntVar(&o.maxTasks, "max-concurrent", 0, "tasks the tenant may have queued or running at once (0: no limit; left as it is when not given)")
	set.Flags().Int64Var(&o.tokensPerDy, "tokens-per-day", 0, "model tokens the tenant may spend in 24 hours, held during the run (0: no limit; left as it is when not given)")
	addStoreFlags(set, o)
	return set
}

// newTenantShowCmd is sema serve tenant show.
func newTenantShowCmd(o *serveOptions, stdout io.Writer) *cobra.Command {
	show := &cobra.Command{
		Use:   "show --tenant NAME",
		Short: "Print a tenant's policy as JSON (the file form tenant set reads)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.tenant == "" {
				return usageErr(sema.Errorf(codeUsage, "name the tenant: --tenant NAME"))
			}
			return withServer(cmd, o, func(s *server.Server) error {
				p, err := s.Policy(cmd.Context(), o.tenant)
				if err != nil {
					return usageErr(err)
				}
				out, err := json.MarshalIndent(p, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(stdout, string(out))
				return nil
			})
		},
	}
	show.Flags().StringVar(&o.tenant, "tenant", "", "the tenant's name")
	addStoreFlags(show, o)
	return show
}

// withServer opens the service's store for an administrative command, runs do, and
// closes it.
func withServer(cmd *cobra.Command, o *serveOptions, do func(*server.Server) error) error {
	s, err := openServer(cmd.Context(), o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer s.Close()
	return do(s)
}

// tenantSet is what sema serve tenant set was asked to change, read and checked before
// the store is opened: the limits given (nil: left as they are), the policy, and the
// managed settings (attach: path and text; detach: managed with no text).
type tenantSet struct {
	maxTasks     *int
	perDay       *int64
	policy       *server.Policy
	managed      bool
	settingsPath string
	settings     []byte
}

// readTenantSet reads and checks tenant set's flags and files; a refusal is a usage error.
func readTenantSet(cmd *cobra.Command, o *serveOptions) (tenantSet, error) {
	var in tenantSet
	flags := cmd.Flags()
	if flags.Changed("max-concurrent") {
		in.maxTasks = &o.maxTasks
	}
	if flags.Changed("tokens-per-day") {
		in.perDay = &o.tokensPerDy
	}
	in.managed = o.tenantFile != "" || o.noTenantFile
	if o.tenant == "" || o.policy == "" && in.maxTasks == nil && in.perDay == nil && !in.managed {
		return in, usageErr(sema.Errorf(codeUsage, "name the tenant and what to set: --tenant NAME --policy FILE, --managed-settings FILE, and/or --max-concurrent N, --tokens-per-day N"))
	}
	if o.tenantFile != "" && o.noTenantFile {
		return in, usageErr(sema.Errorf(codeUsage, "--managed-settings attaches a file and --no-managed-settings detaches it; give one"))
	}
	if o.tenantFile != "" {
		data, err := os.ReadFile(o.tenantFile)
		if err != nil {
			return in, usageErr(sema.Errorf(settings.CodeSettingsInvalid, "cannot read the tenant's managed settings: %w", err))
		}
		in.settingsPath, in.settings = absPath(o.tenantFile), data
	}
	if o.policy != "" {
		var data []byte
		var err error
		if o.policy == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(o.policy)
		}
		if err != nil {
			return in, usageErr(sema.Errorf(server.CodePolicyInvalid, "cannot read the policy file: %w", err))
		}
		p, err := server.ParsePolicy(data)
		if err != nil {
			return in, usageErr(err)
		}
		in.policy = &p
	}
	return in, nil
}

// apply makes the changes in the store: limits, then the policy, then the settings.
func (in tenantSet) apply(cmd *cobra.Command, s *server.Server, tenant string) error {
	ctx := cmd.Context()
	if in.maxTasks != nil || in.perDay != nil {
		if err := s.SetLimits(ctx, tenant, in.maxTasks, in.perDay); err != nil {
			return err
		}
	}
	if in.policy != nil {
		if err := s.SetPolicy(ctx, tenant, *in.policy); err != nil {
			return err
		}
	}
	if in.managed {
		return s.SetTenantSettings(ctx, tenant, in.settingsPath, in.settings)
	}
	return nil
}
