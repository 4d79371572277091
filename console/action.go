package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// question is a parked call as a person judges it: the exact action, shaped by its
// tool — the command of a Bash call, the change of an Edit as a diff, the content of a
// Write — and the form that decides it.
type question struct {
	Tool, Message, Gate string
	// Kind picks the template's shape: bash, edit, write or other.
	Kind        string
	Command     string
	Description string
	Path        string
	Content     string
	Edits       []editShown
	JSON        string
	// Budget is the limit a budget question (gate budget) is about — tokens or usd —
	// and Spent and Limit what the run spent and the limit it would pass: the form then
	// takes the new limit.
	Budget, Spent, Limit string
	// CheckpointID, CSRF and Action fill the decision form; Action empty posts to the
	// page's own address (a link's page).
	CheckpointID, CSRF, Action string
}

// editShown is one replacement of an Edit or MultiEdit: its diff, and whether it
// replaces every occurrence of the old text rather than the one.
type editShown struct {
	Lines      []diffLine
	ReplaceAll bool
}

// diffLine is a line of an edit's diff: Kind is ctx, del or add.
type diffLine struct {
	Kind, Sign, Text string
}

func questionOf(tool string, input json.RawMessage, message, gate string) *question {
	q := &question{Tool: tool, Message: message, Gate: gate, Kind: "other"}
	var in struct {
		Command     string  `json:"command"`
		Description string  `json:"description"`
		FilePath    string  `json:"file_path"`
		Content     *string `json:"content"`
		OldString   *string `json:"old_string"`
		NewString   *string `json:"new_string"`
		ReplaceAll  bool    `json:"replace_all"`
		Edits       []struct {
			OldString  string `json:"old_string"`
			NewString  string `json:"new_string"`
			ReplaceAll bool   `json:"replace_all"`
		} `json:"edits"`
	}
	json.Unmarshal(input, &in)
	if gate == "budget" {
		var b struct {
			Budget         string  `json:"budget"`
			MaxTokensTotal int64   `json:"max_tokens_total"`
			MaxBudgetUSD   float64 `json:"max_budget_usd"`
			SpentTokens    int64   `json:"spent_tokens"`
			SpentUSD       float64 `json:"spent_usd"`
		}
		json.Unmarshal(input, &b)
		q.Kind, q.Budget = "budget", b.Budget
		if b.Budget == "usd" {
			q.Spent, q.Limit = fmt.Sprintf("$%.4f", b.SpentUSD), fmt.Sprintf("$%.4f", b.MaxBudgetUSD)
		} else {
			q.Budget = "tokens"
			q.Spent, q.Limit = fmt.Sprintf("%d tokens", b.SpentTokens), fmt.Sprintf("%d tokens", b.MaxTokensTotal)
		}
	}
	switch {
	case q.Kind == "budget":
	case tool == "Bash" && in.Command != "":
		q.Kind, q.Command, q.Description = "bash", in.Command, in.Description
	case (tool == "Edit" || tool == "MultiEdit") && in.FilePath != "" && (in.OldString != nil || len(in.Edits) > 0):
		q.Kind, q.Path = "edit", in.FilePath
		if in.OldString != nil && in.NewString != nil {
			q.Edits = append(q.Edits, editShown{diff(*in.OldString, *in.NewString), in.ReplaceAll})
		}
		for _, e := range in.Edits {
			q.Edits = append(q.Edits, editShown{diff(e.OldString, e.NewString), e.ReplaceAll})
		}
	case tool == "Write" && in.FilePath != "" && in.Content != nil:
		q.Kind, q.Path, q.Content = "write", in.FilePath, *in.Content
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, input, "", "  ") == nil {
		q.JSON = pretty.String()
	} else {
		q.JSON = string(input)
	}
	return q
}

// diff shows an edit as the lines it removes and adds, between the lines the old and
// new strings share at their start and end.
func diff(old, new string) []diffLine {
	a, b := strings.Split(old, "\n"), strings.Split(new, "\n")
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []diffLine
	for _, l := range a[:pre] {
		out = append(out, diffLine{"ctx", " ", l})
	}
	for _, l := range a[pre : len(a)-suf] {
		out = append(out, diffLine{"del", "-", l})
	}
	for _, l := range b[pre : len(b)-suf] {
		out = append(out, diffLine{"add", "+", l})
	}
	for _, l := range a[len(a)-suf:] {
		out = append(out, diffLine{"ctx", " ", l})
	}
	return out
}
