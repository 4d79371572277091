package permission_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/permission"
)

// A rule names a tool, and optionally which of its calls: a command or command prefix
// for Bash, a gitignore-style glob for the file tools, a domain for WebFetch.
func ExampleParseRule() {
	for _, s := range []string{
		"Read",
		"Bash(npm run test:*)",
		"Edit(src/**)",
		"WebFetch(domain:go.dev)",
		"mcp__github",
	} {
		r, err := permission.ParseRule(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("tool=%s specifier=%q\n", r.Tool, r.Specifier)
	}

	// A rule that does not parse is refused by code, never read as some other rule.
	_, err := permission.ParseRule("Bash(git status")
	fmt.Println(sema.CodeOf(err))
	// Output:
	// tool=Read specifier=""
	// tool=Bash specifier="npm run test:*"
	// tool=Edit specifier="src/**"
	// tool=WebFetch specifier="domain:go.dev"
	// tool=mcp__github specifier=""
	// config.rule_invalid
}

// ParseRules builds the three lists of a settings file into one RuleSet; the first
// bad rule refuses the whole set.
func ExampleParseRules() {
	rules, err := permission.ParseRules(
		[]string{"Read", "Bash(git diff *)"}, // allow
		[]string{"Read(./secrets/**)"},       // deny
		[]string{"Bash(git push:*)"},         // ask
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("allow:", rules.Allow)
	fmt.Println("deny:", rules.Deny)
	fmt.Println("ask:", rules.Ask)
	// Output:
	// allow: [Read Bash(git diff *)]
	// deny: [Read(./secrets/**)]
	// ask: [Bash(git push:*)]
}

// The command line's --allowed-tools and --disallowed-tools take several rules per
// value, separated by commas or blanks outside parentheses.
func ExampleRulesFromFlags() {
	rules, err := permission.RulesFromFlags(
		[]string{"Read,Grep", "Bash(git log *)"},
		[]string{"WebFetch"},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("allow:", rules.Allow)
	fmt.Println("deny:", rules.Deny)
	// Output:
	// allow: [Read Grep Bash(git log *)]
	// deny: [WebFetch]
}

func ExampleSplitRuleList() {
	fmt.Printf("%q\n", permission.SplitRuleList("Read, Bash(git diff *),,Edit(src/**)"))
	// Output:
	// ["Read" "Bash(git diff *)" "Edit(src/**)"]
}

// Layers of rules (the user's, the project's, the command line's) merge into one set;
// the fold reads every deny rule before any ask or allow rule, whichever layer holds it.
func ExampleRuleSet_Merge() {
	user := permission.RuleSet{Allow: []permission.Rule{permission.MustParseRule("Bash(make *)")}}
	project := permission.RuleSet{Deny: []permission.Rule{permission.MustParseRule("Bash(make deploy)")}}
	merged := user.Merge(project)
	fmt.Println("allow:", merged.Allow)
	fmt.Println("deny:", merged.Deny)
	// Output:
	// allow: [Bash(make *)]
	// deny: [Bash(make deploy)]
}

// The set of modes is closed and the comparison exact: a word a caller believes it
// declared is never run as another mode.
func ExampleParseMode() {
	m, err := permission.ParseMode("acceptEdits")
	fmt.Println(m, err)

	_, err = permission.ParseMode("AcceptEdits")
	fmt.Println(sema.CodeOf(err))

	fmt.Println(permission.Modes())
	// Output:
	// acceptEdits <nil>
	// config.permission_mode_invalid
	// [default acceptEdits plan auto dontAsk bypassPermissions]
}

// An approver answers the questions the gate puts to a person. Here a host allows
// reads, narrows a command it will allow, and refuses everything else with a sentence
// the model sees. The runner takes it as agent.Deps.Approver.
func ExampleApproverFunc() {
	approver := permission.ApproverFunc(func(ctx context.Context, req permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		switch req.Tool {
		case "Read":
			return permission.ApprovalDecision{Behavior: permission.Allow}, nil
		case "Bash":
			var in struct {
				Command string `json:"command"`
			}
			if err := json.Unmarshal(req.Input, &in); err != nil {
				return permission.ApprovalDecision{}, err // an error refuses the call
			}
			if strings.HasPrefix(in.Command, "go test") {
				// An edited input runs only after the deny rules judged it again.
				edited, _ := json.Marshal(map[string]string{"command": in.Command + " -short"})
				return permission.ApprovalDecision{Behavior: permission.Allow, UpdatedInput: edited}, nil
			}
		}
		return permission.ApprovalDecision{Behavior: permission.Deny, Reason: "not approved by the host: " + req.Ask.Reason}, nil
	})

	ask := permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerMode, Reason: "Allow this command?"}
	for _, req := range []permission.ApprovalRequest{
		{Tool: "Read", Input: json.RawMessage(`{"file_path":"README.md"}`), Ask: ask},
		{Tool: "Bash", Input: json.RawMessage(`{"command":"go test ./..."}`), Ask: ask},
		{Tool: "Bash", Input: json.RawMessage(`{"command":"rm -rf build"}`), Ask: ask},
	} {
		d, err := approver.Approve(context.Background(), req)
		if err != nil {
			fmt.Println(req.Tool, "refused:", err)
			continue
		}
		fmt.Println(strings.Join(nonEmpty(req.Tool+":", string(d.Behavior), string(d.UpdatedInput), d.Reason), " "))
	}
	// Output:
	// Read: allow
	// Bash: allow {"command":"go test ./... -short"}
	// Bash: deny not approved by the host: Allow this command?
}

// A PreToolUse hook sees each call before the rules' allows and the mode answer it. This
// one asks a person about every write outside src/ and has no opinion otherwise. The
// gate fills Call.Paths from the input, resolved through the fence.
func ExampleHook() {
	var hook permission.Hook = func(ctx context.Context, call permission.Call) (permission.HookDecision, error) {
		for _, p := range call.Paths {
			if !strings.HasPrefix(p.Canonical, call.Root+"/src/") {
				return permission.HookDecision{Behavior: permission.Ask, Reason: "writes outside src/ need a person: " + p.Canonical}, nil
			}
		}
		return permission.HookDecision{}, nil // no opinion
	}

	scope := permission.Scope{Root: "/work/repo", WriteRoots: []string{"/work/repo"}}
	for _, target := range []string{"/work/repo/src/main.go", "/work/repo/go.mod"} {
		call := permission.Call{
			Tool:  "Write",
			Paths: []permission.PathTarget{{Abs: target, Canonical: target}},
			Scope: scope,
		}
		d, _ := hook(context.Background(), call)
		if d.Behavior == "" {
			fmt.Printf("%s: no opinion\n", target)
			continue
		}
		fmt.Printf("%s: %s (%s)\n", target, d.Behavior, d.Reason)
	}
	// Output:
	// /work/repo/src/main.go: no opinion
	// /work/repo/go.mod: ask (writes outside src/ need a person: /work/repo/go.mod)
}

// nonEmpty drops the empty words, so an example's line has no stray blanks.
func nonEmpty(words ...string) []string {
	var kept []string
	for _, w := range words {
		if w != "" {
			kept = append(kept, w)
		}
	}
	return kept
}
