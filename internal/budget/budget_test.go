package budget

import (
	"testing"

	"github.com/sema-agent/sema/model"
)

// A child's spending counts against its parent's pool, and the parent's limit stops the
// child's request as an inherited one.
func TestChildSpendsFromItsParentsPool(t *testing.T) {
	parent := New(1000, 0, nil)
	child := New(0, 0, parent)
	if !child.Limited() || New(0, 0, nil).Limited() {
		t.Fatal("Limited does not see the chain's limits")
	}
	child.Add(900, 0)
	if tokens, limits, _, limitsUSD := child.Left(); tokens != 100 || !limits || limitsUSD {
		t.Fatalf("Left = %d %v %v, want 100 left of the parent's tokens", tokens, limits, limitsUSD)
	}
	if _, _, over := child.Breach(50, 0); over {
		t.Fatal("a request that fits was refused")
	}
	msg, detail, over := child.Breach(200, 0)
	if !over || detail["inherited"] != true || detail["spent"] != int64(900) || msg == "" {
		t.Fatalf("Breach = %q %v %v", msg, detail, over)
	}
}

// A model without a price makes the total unknown; priced ones add up.
func TestTalliesReport(t *testing.T) {
	var ts Tallies
	one, two := 1.0, 2.0
	ts.Add("a", model.Usage{InputTokens: 10}, &one)
	ts.Add("a", model.Usage{OutputTokens: 5}, &two)
	byModel, total := ts.Report()
	if total == nil || *total != 3 || byModel["a"].InputTokens != 10 || byModel["a"].OutputTokens != 5 {
		t.Fatalf("priced: %+v %v", byModel, total)
	}
	ts.Add("b", model.Usage{InputTokens: 1}, nil)
	byModel, total = ts.Report()
	if total != nil || byModel["b"].Cost != nil || byModel["a"].Cost == nil {
		t.Fatalf("unpriced: %+v %v", byModel, total)
	}
	if m, total := new(Tallies).Report(); m != nil || total == nil || *total != 0 {
		t.Fatalf("nothing spent: %v %v", m, total)
	}
}

func TestOwnReportsTheLimitsAndWhatTheChainUnderItSpent(t *testing.T) {
	parent := New(1000, 2, nil)
	child := New(100, 0, parent)
	child.Add(40, 0.5)
	parent.Add(10, 0.25)
	if mt, mu, tok, usd := parent.Own(); mt != 1000 || mu != 2 || tok != 50 || usd != 0.75 {
		t.Fatalf("parent: %d %v %d %v", mt, mu, tok, usd)
	}
	if mt, mu, tok, usd := child.Own(); mt != 100 || mu != 0 || tok != 40 || usd != 0.5 {
		t.Fatalf("child: %d %v %d %v", mt, mu, tok, usd)
	}
}
