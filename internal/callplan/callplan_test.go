package callplan

import (
	"slices"
	"testing"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		kinds         []Kind
		questionsPark bool
		want          Mode
	}{
		{"none", nil, false, InOrder},
		{"one read", []Kind{Reads}, false, InOrder},
		{"one task", []Kind{Delegates}, false, InOrder},
		{"reads", []Kind{Reads, Reads, Reads}, false, ReadsAtOnce},
		{"reads while questions park", []Kind{Reads, Reads}, true, InOrder},
		{"tasks", []Kind{Delegates, Delegates}, false, TasksAtOnce},
		{"tasks while questions park", []Kind{Delegates, Delegates}, true, TasksAtOnce},
		{"a write among reads", []Kind{Reads, Writes, Reads}, false, InOrder},
		{"a write among tasks", []Kind{Delegates, Writes}, false, InOrder},
		{"reads and tasks", []Kind{Reads, Delegates}, false, InOrder},
		{"writes", []Kind{Writes, Writes}, false, InOrder},
	}
	for _, c := range cases {
		if got := Plan(c.kinds, c.questionsPark); got != c.want {
			t.Errorf("%s: Plan(%v, %v) = %v, want %v", c.name, c.kinds, c.questionsPark, got, c.want)
		}
	}
}

func TestUnsettled(t *testing.T) {
	t.Parallel()
	if got := Unsettled([]bool{true, false, true, false, false}); !slices.Equal(got, []int{1, 3, 4}) {
		t.Errorf("Unsettled = %v, want [1 3 4]", got)
	}
	if got := Unsettled([]bool{true, true}); got != nil {
		t.Errorf("Unsettled of settled calls = %v, want nil", got)
	}
}

func TestAfterPark(t *testing.T) {
	t.Parallel()
	cases := []struct {
		childWaits, asked, settled bool
		want                       After
	}{
		{true, false, true, ChildWaits},
		{true, true, false, ChildWaits}, // the waiting child wins over the question
		{false, true, true, RunsAgain},
		{false, false, false, RunsAgain},
		{false, false, true, KeepsResult},
	}
	for _, c := range cases {
		if got := AfterPark(c.childWaits, c.asked, c.settled); got != c.want {
			t.Errorf("AfterPark(child %v, asked %v, settled %v) = %v, want %v", c.childWaits, c.asked, c.settled, got, c.want)
		}
	}
}
