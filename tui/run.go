package tui

import (
	"context"
	"errors"
	"io"

	tea "charm.land/bubbletea/v2"
)

// Run shows the session on the terminal in and out until the person exits (Ctrl-C
// twice on an empty input, Ctrl-D, /exit) or ctx ends. The running leg is interrupted
// and waited for before Run returns, so its session is released and the terminal is
// restored. It returns nil on an exit the person asked for and on ctx's end.
func Run(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := New(ctx, opts)
	// The renderer writes what changed on each tick of its frame rate, the first frame
	// too: at 120 a second the first frame waits at most 8 ms for its tick, not 17, and
	// a tick with nothing new writes nothing.
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithFPS(120))
	_, err := p.Run()
	cancel()
	m.Wait()
	if errors.Is(err, tea.ErrProgramKilled) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
