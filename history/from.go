package history

import (
	"context"
	"math"
)

// RewindFrom is Rewind from a boundary given by its id rather than by a turn's number:
// every file touched at a boundary whose ID is ≥ from returns to its pre-image there (a
// from above every boundary restores nothing). turn is the turn the ledger and the rewind
// boundary name. A runner that mints a turn's boundary only when the turn changes a file
// finds a turn's start this way (the first boundary minted after the turn started, even
// a later turn's), since a turn that changed nothing has no boundary of its own. It
// checks, saves and refuses as Rewind does.
func (f *Files) RewindFrom(ctx context.Context, scope string, turn int, from int64, opts RewindOptions) (Ledger, error) {
	led := Ledger{Scope: scope, Turn: turn}
	if err := f.refuse(scope, opts); err != nil {
		return led, err
	}
	bs, err := f.store.Boundaries(ctx, scope)
	if err != nil {
		return led, err
	}
	return f.rewind(ctx, led, bs, from, opts)
}

// FromNowhere is a RewindFrom boundary id above every boundary: nothing is restored.
const FromNowhere int64 = math.MaxInt64
