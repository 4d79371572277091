package hooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/hooks"
)

// ParseConfig reads the "hooks" member of a settings file in Claude Code's shape, so
// existing hook configurations work unchanged; anything it cannot read exactly is
// refused by name.
func ExampleParseConfig() {
	settings := []byte(`{
		"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./scripts/check-command.sh", "timeout": 10}]}],
		"PostToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "gofmt -l ."}]}]
	}`)
	hs, err := hooks.ParseConfig(settings, ".sema/settings.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range hs {
		fmt.Println(h.Event, h.Matcher, h.Command, h.Timeout, h.Source)
	}

	_, err = hooks.ParseConfig(json.RawMessage(`{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt"}]}]}`), "bad.json")
	fmt.Println(sema.CodeOf(err))
	// Output:
	// PreToolUse Bash ./scripts/check-command.sh 10s .sema/settings.json
	// PostToolUse Write|Edit gofmt -l . 0s .sema/settings.json
	// config.hooks_invalid
}

// A hook written in Go: this PreToolUse hook refuses writes to .env files and adds
// context for the model to every other write. The Set merges the answers of every hook
// that matches; the runner, not this package, decides what the merged answer does.
func ExampleFunc() {
	guard := hooks.Func(func(ctx context.Context, in hooks.Input) (hooks.Output, error) {
		var args struct {
			FilePath string `json:"file_path"`
		}
		if err := json.Unmarshal(in.ToolInput, &args); err != nil {
			return hooks.Output{}, err // a PreToolUse failure refuses the call
		}
		if strings.HasSuffix(args.FilePath, ".env") {
			return hooks.Output{HookSpecificOutput: &hooks.SpecificOutput{
				HookEventName:            hooks.PreToolUse,
				PermissionDecision:       "deny",
				PermissionDecisionReason: "secrets live in .env; leave it alone",
			}}, nil
		}
		return hooks.Output{HookSpecificOutput: &hooks.SpecificOutput{
			HookEventName:     hooks.PreToolUse,
			AdditionalContext: "run gofmt after editing Go files",
		}}, nil
	})

	set, err := hooks.NewSet([]hooks.Hook{{Event: hooks.PreToolUse, Matcher: "Write|Edit", Func: guard, Source: "embedder"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for _, path := range []string{"/work/repo/.env", "/work/repo/main.go"} {
		in := hooks.Input{SessionID: "s1", Cwd: "/work/repo", ToolName: "Write", ToolInput: json.RawMessage(fmt.Sprintf(`{"file_path":%q}`, path))}
		res := set.Run(ctx, &hooks.Runner{}, hooks.PreToolUse, "Write", in)
		fmt.Printf("%s: ran=%d permission=%q reason=%q context=%q\n", path, res.Ran, res.Permission, res.PermissionReason, res.Context)
	}
	// Nothing is registered for Read: the caller skips building its input.
	fmt.Println(set.Has(hooks.PreToolUse), len(set.Matching(hooks.PreToolUse, "Read")))
	// Output:
	// /work/repo/.env: ran=1 permission="deny" reason="secrets live in .env; leave it alone" context=[]
	// /work/repo/main.go: ran=1 permission="" reason="" context=["run gofmt after editing Go files"]
	// true 0
}

// A command hook runs with /bin/sh -c in the project directory and reads the event as
// JSON on stdin. Exit code 2 blocks, and its stderr is the reason the model sees.
func ExampleSet_Run() {
	dir, err := os.MkdirTemp("", "sema-hooks-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	hs, err := hooks.ParseConfig(json.RawMessage(`{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
		"command": "IFS= read -r event; case \"$event\" in *'rm -rf'*) echo 'rm -rf is not allowed here' >&2; exit 2;; esac"}]}]}`), "settings.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := hooks.NewSet(hs)
	if err != nil {
		fmt.Println(err)
		return
	}
	runner := &hooks.Runner{Exec: env.NewHost(), ProjectDir: dir}

	ctx := context.Background()
	for _, command := range []string{"go test ./...", "rm -rf build"} {
		input, _ := json.Marshal(map[string]string{"command": command})
		res := set.Run(ctx, runner, hooks.PreToolUse, "Bash", hooks.Input{SessionID: "s1", Cwd: dir, ToolName: "Bash", ToolInput: input})
		fmt.Printf("%s: block=%v permission=%q reason=%q failures=%d\n", command, res.Block, res.Permission, res.BlockReason, len(res.Failures))
	}
	// Output:
	// go test ./...: block=false permission="" reason="" failures=0
	// rm -rf build: block=true permission="deny" reason="rm -rf is not allowed here" failures=0
}
