// Package later runs one function on its own goroutine and hands its result to everyone
// who waits for it: a store opened, or a session stored, beside other work.
package later

// Value is the result of a function started with Start.
type Value[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// Start runs f on its own goroutine.
func Start[T any](f func() (T, error)) *Value[T] {
	l := &Value[T]{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		l.v, l.err = f()
	}()
	return l
}

// Wait waits for f to return and returns what it returned, as often as it is called and
// from any goroutine; everything f wrote before returning is visible to the caller.
func (l *Value[T]) Wait() (T, error) {
	<-l.done
	return l.v, l.err
}
