package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The first turn spends 100,000 tokens; at 10 dollars a million, 1 dollar.
const spendingScript = `{"turns":[
	{"tool_calls":[{"name":"Glob","input":{"pattern":"*.txt"}}],"usage":{"input_tokens":100000,"output_tokens":0}},
	{"text":"done","usage":{"input_tokens":10,"output_tokens":0}}]}`

const tenDollars = `{"scripted":{"input":10,"output":10,"cache_write":10,"cache_read":10}}`

// homeWith makes a state directory holding a prices.json, when prices is not empty.
func homeWith(t *testing.T, prices string) string {
	t.Helper()
	home := t.TempDir()
	if prices != "" {
		if err := os.WriteFile(filepath.Join(home, "prices.json"), []byte(prices), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func TestBudgetFlagsCostAndExitCode(t *testing.T) {
	script := writeScript(t, spendingScript)
	cases := []struct {
		name   string
		prices string
		flags  []string
		exit   int
		status string
		cost   any // total_cost_usd: nil (null) or a number
		code   string
	}{
		{"no budget, no price", "", nil, 0, "completed", nil, ""},
		{"no budget, priced by the state directory's prices.json", tenDollars, nil, 0, "completed", 1.0001, ""},
		{"token budget", "", []string{"--max-tokens-total", "100001"}, 6, "budget_exceeded", nil, ""},
		{"cost budget", tenDollars, []string{"--max-budget-usd", "1.0001"}, 6, "budget_exceeded", 1.0, ""},
		{"cost budget, room to finish", tenDollars, []string{"--max-budget-usd", "5"}, 0, "completed", 1.0001, ""},
		{"cost budget without a price", "", []string{"--max-budget-usd", "1"}, 2, "error", nil, "config.budget_unmeasurable"},
		{"negative cost budget", tenDollars, []string{"--max-budget-usd", "-1"}, 2, "error", nil, "config.max_budget_invalid"},
		{"negative token budget", "", []string{"--max-tokens-total", "-5"}, 2, "error", nil, "config.max_tokens_total_invalid"},
		{"a price table that leaves out a price", `{"scripted":{"input":1,"output":1}}`, nil, 2, "error", nil, "config.prices_invalid"},
		{"a price table with an unknown key", `{"scripted":{"input":1,"output":1,"cache_write":1,"cache_read":1,"currency":"EUR"}}`, nil, 2, "error", nil, "config.prices_invalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run", "--model", "scripted/" + script, "--home", homeWith(t, c.prices), "--sandbox", "off", "--output-format", "json"}, c.flags...)
			r := sema(t, t.TempDir(), nil, "", append(args, "go")...)
			if r.code != c.exit {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, c.exit, r.stdout, r.stderr)
			}
			obj := jsonResult(t, r.stdout)
			if obj["status"] != c.status {
				t.Fatalf("status %v, want %s: %s", obj["status"], c.status, r.stdout)
			}
			if c.code != "" {
				if e, _ := obj["error"].(map[string]any); e == nil || e["code"] != c.code || !strings.Contains(r.stderr, c.code) {
					t.Fatalf("refusal %v, stderr %q; want %s", obj["error"], r.stderr, c.code)
				}
				return
			}
			cost, present := obj["total_cost_usd"]
			if !present {
				t.Fatalf("the result has no total_cost_usd: %s", r.stdout)
			}
			if c.cost == nil && cost != nil {
				t.Fatalf("total_cost_usd %v for an unpriced model, want null", cost)
			}
			if c.cost != nil {
				if f, ok := cost.(float64); !ok || f < c.cost.(float64)-1e-9 || f > c.cost.(float64)+1e-9 {
					t.Fatalf("total_cost_usd %v, want %v", cost, c.cost)
				}
			}
			mu, _ := obj["modelUsage"].(map[string]any)["scripted"].(map[string]any)
			if mu == nil || mu["inputTokens"].(float64) < 100000 {
				t.Fatalf("modelUsage %v", obj["modelUsage"])
			}
		})
	}
}

// The text format shows each todo list on stderr, and says why a budget stopped the run.
func TestTextOutputShowsTodosAndTheBudgetStop(t *testing.T) {
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"TodoWrite","input":{"todos":[
			{"content":"Read the notes","status":"completed","activeForm":"Reading the notes"},
			{"content":"Fix the typo","status":"in_progress","activeForm":"Fixing the typo"},
			{"content":"Run the tests","status":"pending","activeForm":"Running the tests"}]}}],"usage":{"input_tokens":100000,"output_tokens":0}},
		{"text":"done"}]}`)
	r := sema(t, t.TempDir(), nil, "", "run", "--model", "scripted/"+script, "--home", t.TempDir(), "--sandbox", "off", "--max-tokens-total", "100001", "go")
	if r.code != 6 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"todos (1/3 done)", "☑ Read the notes", "◐ Fixing the typo", "☐ Run the tests", "budget.exceeded", "before passing the budget"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r.stdout != "" {
		t.Errorf("stdout %q: the todo list and the stop belong on stderr", r.stdout)
	}
}

// Under --on-ask park, a token budget the next request would pass parks a budget
// question; `sema approve` without a raise is refused and says what to add, and with a
// higher --max-tokens-total the run goes on and completes.
func TestBudgetQuestionParksAndApproveRaisesIt(t *testing.T) {
	home, dir := homeWith(t, ""), t.TempDir()
	first := writeScript(t, spendingScript)
	r := sema(t, dir, nil, "", "-p", "--model", "scripted/"+first, "--home", home, "--sandbox", "off", "--on-ask", "park",
		"--max-tokens-total", "100001", "--output-format", "json", "go")
	obj := jsonResult(t, r.stdout)
	cp, _ := obj["checkpoint"].(map[string]any)
	if obj["status"] != "awaiting_approval" || cp == nil || cp["gate"] != "budget" ||
		!strings.Contains(cp["message"].(string), "100000 of 100001 tokens are spent") || r.code != 3 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	sid, cid := obj["session_id"].(string), cp["id"].(string)
	rest := writeScript(t, `{"turns":[{"text":"done","usage":{"input_tokens":10,"output_tokens":0}}]}`)
	approve := func(extra ...string) result {
		args := append([]string{"approve", sid, "--checkpoint", cid, "--home", home, "--model", "scripted/" + rest, "--sandbox", "off", "--output-format", "json"}, extra...)
		return sema(t, dir, nil, "", args...)
	}
	bare := approve("--allow")
	if bare.code == 0 || !strings.Contains(bare.stdout+bare.stderr, "budget.raise_invalid") || !strings.Contains(bare.stdout+bare.stderr, "--max-tokens-total") {
		t.Fatalf("an allow without a raise: exit %d\n%s\n%s", bare.code, bare.stdout, bare.stderr)
	}
	done := approve("--allow", "--max-tokens-total", "1000000")
	res := jsonResult(t, done.stdout)
	if done.code != 0 || res["status"] != "completed" || res["result"] != "done" {
		t.Fatalf("after the raise: exit %d\n%s\n%s", done.code, done.stdout, done.stderr)
	}
	again := approve("--allow", "--max-tokens-total", "2000000")
	if again.code == 0 || !strings.Contains(again.stdout+again.stderr, "already_claimed") {
		t.Fatalf("a second answer: exit %d\n%s\n%s", again.code, again.stdout, again.stderr)
	}
}

// Denying a budget question ends the run budget_exceeded (exit 6) without a request.
func TestBudgetQuestionDenied(t *testing.T) {
	home, dir := homeWith(t, ""), t.TempDir()
	r := sema(t, dir, nil, "", "-p", "--model", "scripted/"+writeScript(t, spendingScript), "--home", home, "--sandbox", "off", "--on-ask", "park",
		"--max-tokens-total", "100001", "--output-format", "json", "go")
	obj := jsonResult(t, r.stdout)
	cp, _ := obj["checkpoint"].(map[string]any)
	if r.code != 3 || cp == nil || cp["gate"] != "budget" {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The script has no turn left: a request after the denial would fail the run.
	empty := writeScript(t, `{"turns":[]}`)
	d := sema(t, dir, nil, "", "approve", obj["session_id"].(string), "--checkpoint", cp["id"].(string), "--deny", "--home", home,
		"--model", "scripted/"+empty, "--sandbox", "off", "--output-format", "json")
	res := jsonResult(t, d.stdout)
	if d.code != 6 || res["status"] != "budget_exceeded" || res["num_turns"] != float64(0) {
		t.Fatalf("after the denial: exit %d\n%s\n%s", d.code, d.stdout, d.stderr)
	}
}
