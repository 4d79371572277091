// Package callplan plans how a turn's tool calls run: all at once when they cannot race
// one another (every call reads, or every call delegates to a child agent), else one
// after another in call order, so that a write never races another call of its own
// turn; and, when a question parks the turn, what becomes of each call after it.
package callplan

// Kind is what a call is, as far as its plan goes.
type Kind int

const (
	// Writes is a call that may change something, or one to a tool nobody knows: it
	// runs alone.
	Writes Kind = iota
	// Reads is a call to a tool that only reads.
	Reads
	// Delegates is a Task call: it runs a child agent, which parks its own questions.
	Delegates
)

// Mode is how the calls still to run in a turn run.
type Mode int

const (
	// InOrder runs them one after another, in call order.
	InOrder Mode = iota
	// ReadsAtOnce runs them all at once: every one reads.
	ReadsAtOnce
	// TasksAtOnce runs them all at once: every one delegates, and the loop streams the
	// children's events while they run.
	TasksAtOnce
)

// Plan is the mode of the calls still to run, of the kinds given, in order. More than
// one runs at once only when all delegate, or all read and questionsPark is false: a
// read that parks its question would race the others, while a child parks on its own.
func Plan(kinds []Kind, questionsPark bool) Mode {
	if len(kinds) < 2 {
		return InOrder
	}
	tasks, reads := 0, 0
	for _, k := range kinds {
		switch k {
		case Delegates:
			tasks++
		case Reads:
			reads++
		default:
			return InOrder
		}
	}
	switch {
	case tasks == len(kinds):
		return TasksAtOnce
	case reads == len(kinds) && !questionsPark:
		return ReadsAtOnce
	}
	return InOrder
}

// Unsettled returns the indexes of the calls not settled yet (neither run nor
// answered by a parked entry), in call order: the calls the plan runs.
func Unsettled(settled []bool) []int {
	var todo []int
	for i, s := range settled {
		if !s {
			todo = append(todo, i)
		}
	}
	return todo
}

// After is what a parked turn's entry keeps of a call after the one that waits for a
// person.
type After int

const (
	// RunsAgain keeps nothing: the call runs when the leg resumes.
	RunsAgain After = iota
	// ChildWaits keeps the call's child, which waits for a person too.
	ChildWaits
	// KeepsResult keeps the result the call returned.
	KeepsResult
)

// AfterPark decides what the parked entry keeps of a call after the pending one, from
// whether its child waits for a person, whether it asked a question of its own, and
// whether it settled (ran). A call that asked, or never started, runs again on resume.
func AfterPark(childWaits, asked, settled bool) After {
	switch {
	case childWaits:
		return ChildWaits
	case asked || !settled:
		return RunsAgain
	}
	return KeepsResult
}
