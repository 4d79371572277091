package history

import (
	"context"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/later"
)

// Deferred is a Store that is still being opened: open runs once, on its own goroutine,
// as soon as Deferred is called, and every method waits for it, then calls the store it
// opened — or fails with open's error (see session.Deferred, its twin). Close waits for
// the opening and closes nothing: the store belongs to whoever open gave it to.
func Deferred(open func() (Store, error)) Store {
	return &deferred{later.Start(open)}
}

// deferred is the Store Deferred returns.
type deferred struct {
	opening *later.Value[Store]
}

func (d *deferred) store() (Store, error) { return d.opening.Wait() }

func (d *deferred) MintBoundary(ctx context.Context, scope string, turn int) (Boundary, error) {
	s, err := d.store()
	if err != nil {
		return Boundary{}, err
	}
	return s.MintBoundary(ctx, scope, turn)
}

func (d *deferred) Boundaries(ctx context.Context, scope string) ([]Boundary, error) {
	s, err := d.store()
	if err != nil {
		return nil, err
	}
	return s.Boundaries(ctx, scope)
}

func (d *deferred) Lookup(ctx context.Context, scope, key string) (Record, bool, error) {
	s, err := d.store()
	if err != nil {
		return Record{}, false, err
	}
	return s.Lookup(ctx, scope, key)
}

func (d *deferred) Insert(ctx context.Context, rec Record, content []byte) (Record, bool, error) {
	s, err := d.store()
	if err != nil {
		return Record{}, false, err
	}
	return s.Insert(ctx, rec, content)
}

func (d *deferred) Records(ctx context.Context, scope string, from int64) ([]Record, error) {
	s, err := d.store()
	if err != nil {
		return nil, err
	}
	return s.Records(ctx, scope, from)
}

func (d *deferred) Blob(ctx context.Context, sum string) ([]byte, error) {
	s, err := d.store()
	if err != nil {
		return nil, err
	}
	return s.Blob(ctx, sum)
}

// blobsOf reads many blobs at once when the opened store can (blobsReader), else one
// Blob each; a sum the store lacks is left out, as blobsReader leaves it.
func (d *deferred) blobsOf(ctx context.Context, sums []string) (map[string][]byte, error) {
	s, err := d.store()
	if err != nil {
		return nil, err
	}
	if br, ok := s.(blobsReader); ok {
		return br.blobsOf(ctx, sums)
	}
	out := make(map[string][]byte, len(sums))
	for _, sum := range sums {
		b, err := s.Blob(ctx, sum)
		switch {
		case sema.IsCode(err, CodeBlobMissing):
		case err != nil:
			return nil, err
		default:
			out[sum] = b
		}
	}
	return out, nil
}

func (d *deferred) Delete(ctx context.Context, id int64) error {
	s, err := d.store()
	if err != nil {
		return err
	}
	return s.Delete(ctx, id)
}

func (d *deferred) SetAfter(ctx context.Context, id int64, after string) error {
	s, err := d.store()
	if err != nil {
		return err
	}
	return s.SetAfter(ctx, id, after)
}

func (d *deferred) SetPending(ctx context.Context, id int64, after string) error {
	s, err := d.store()
	if err != nil {
		return err
	}
	return s.SetPending(ctx, id, after)
}

func (d *deferred) MintRewind(ctx context.Context, scope string, turn int, saved []Saved) (Boundary, []Record, error) {
	s, err := d.store()
	if err != nil {
		return Boundary{}, nil, err
	}
	return s.MintRewind(ctx, scope, turn, saved)
}

func (d *deferred) CarryFork(ctx context.Context, from, to string) (int, error) {
	s, err := d.store()
	if err != nil {
		return 0, err
	}
	return s.CarryFork(ctx, from, to)
}

func (d *deferred) Forget(ctx context.Context, scope string) error {
	s, err := d.store()
	if err != nil {
		return err
	}
	return s.Forget(ctx, scope)
}

// Close waits for the opening; the opened store is its owner's to close.
func (d *deferred) Close() error {
	d.opening.Wait()
	return nil
}

var _ blobsReader = (*deferred)(nil)
