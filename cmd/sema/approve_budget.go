package main

import (
	"context"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/session"
	"github.com/spf13/cobra"
)

// budgetRaise is the new budget an approve brings to a budget question: the
// --max-tokens-total and --max-budget-usd it was given. For any other question those
// flags only bound the continued run, as they do on `sema run`, so the checkpoint's gate
// is read first; a checkpoint that cannot be read is left for the runner to refuse.
func budgetRaise(ctx context.Context, cmd *cobra.Command, opts *runOptions, checkpoint string) *agent.BudgetRaise {
	if !cmd.Flags().Changed("max-tokens-total") && !cmd.Flags().Changed("max-budget-usd") {
		return nil
	}
	st, err := openHome(ctx, opts.home)
	if err != nil {
		return nil
	}
	defer st.Close()
	cp, err := st.Sessions().Checkpoint(ctx, checkpoint)
	if err != nil || cp.Gate != session.GateBudget {
		return nil
	}
	return &agent.BudgetRaise{MaxTokensTotal: opts.maxTokensTotal, MaxBudgetUSD: opts.maxBudgetUSD}
}
