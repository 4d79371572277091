package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/server"
)

// newWebhookCmd is sema serve webhook: the operator's side of the tenants' webhooks (a
// tenant has the same through POST/GET/DELETE /v1/webhooks).
func newWebhookCmd(o *serveOptions, stdout io.Writer) *cobra.Command {
	hook := &cobra.Command{Use: "webhook", Short: "Manage the addresses the service calls when a tenant's task needs a person or ends"}
	var w client.Webhook
	var private bool
	add := &cobra.Command{
		Use:   "add --tenant NAME --url URL",
		Short: "Register a webhook for a tenant and print it with its signing secret, once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.tenant == "" || w.URL == "" {
				return usageErr(sema.Errorf(codeUsage, "name the tenant and the address: --tenant NAME --url URL"))
			}
			return withServer(cmd, o, func(s *server.Server) error {
				got, err := s.AddWebhook(cmd.Context(), o.tenant, w, server.WebhookOptions{AllowPrivate: private})
				if err != nil {
					return usageErr(err)
				}
				return printJSON(stdout, got)
			})
		},
	}
	add.Flags().StringVar(&o.tenant, "tenant", "", "the tenant whose tasks call it")
	add.Flags().StringVar(&w.URL, "url", "", "the http(s) address called with a POST of each event")
	add.Flags().StringSliceVar(&w.Events, "event", nil, "an event to call it for: task.needs_person, task.ended (repeat; default: both)")
	add.Flags().StringVar(&w.Format, "format", "", "json (the event, default) or slack (a {\"text\"} message for a Slack-compatible incoming webhook)")
	add.Flags().BoolVar(&private, "allow-private", false, "let the address be on this machine or a private network (a tenant's own may not be)")
	addStoreFlags(add, o)

	list := &cobra.Command{
		Use:   "list --tenant NAME",
		Short: "List a tenant's webhooks (without their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.tenant == "" {
				return usageErr(sema.Errorf(codeUsage, "name the tenant: --tenant NAME"))
			}
			return withServer(cmd, o, func(s *server.Server) error {
				hooks, err := s.Webhooks(cmd.Context(), o.tenant)
				if err != nil {
					return err
				}
				return printJSON(stdout, hooks)
			})
		},
	}
	list.Flags().StringVar(&o.tenant, "tenant", "", "the tenant")
	addStoreFlags(list, o)

	remove := &cobra.Command{
		Use:   "remove --tenant NAME ID",
		Short: "Remove a tenant's webhook: its pending calls are not made",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.tenant == "" {
				return usageErr(sema.Errorf(codeUsage, "name the tenant: --tenant NAME"))
			}
			return withServer(cmd, o, func(s *server.Server) error {
				if err := s.RemoveWebhook(cmd.Context(), o.tenant, args[0]); err != nil {
					return usageErr(err)
				}
				fmt.Fprintf(stdout, "webhook %s removed\n", args[0])
				return nil
			})
		},
	}
	remove.Flags().StringVar(&o.tenant, "tenant", "", "the tenant")
	addStoreFlags(remove, o)
	hook.AddCommand(add, list, remove)
	return hook
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
