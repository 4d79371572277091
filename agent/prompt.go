package agent

import (
	"strings"

	"github.com/sema-agent/sema/fence"
)

// systemPrompt describes the environment to the model. It is rebuilt for every leg and
// never read back from a store. It is stable across the turns of a leg, which is what
// lets providers cache it.
func systemPrompt(l *leg) string {
	var b strings.Builder
	b.WriteString(`You are sema, an agent that carries out one task in a software workspace using the tools provided.
Work step by step: look at the files before you change or describe them, prefer the dedicated file tools over guessing, and keep going until the task is done. When you are finished, answer with a short summary of what you found or changed.

Paths may be absolute or relative to the working directory. Tools refuse paths outside the directories listed below; a refusal names the directories you may use.
`)
	b.WriteString("\n# Environment\n")
	b.WriteString("- Working directory (task root): " + l.fence.Root() + "\n")
	if extra := l.fence.WriteRoots()[1:]; len(extra) > 0 {
		b.WriteString("- Additional writable directories: " + strings.Join(extra, ", ") + "\n")
	}
	if ro := readOnlyRoots(l); len(ro) > 0 {
		b.WriteString("- Read-only directories: " + strings.Join(ro, ", ") + "\n")
	}
	for _, d := range l.fence.Advertised() {
		if !d.Admitted {
			continue // only admitted directories are advertised
		}
		switch d.Kind {
		case fence.AdvertiserScratchpad:
			b.WriteString("- Scratchpad (writable, for temporary files): " + d.Canonical + "\n")
		case fence.AdvertiserMemory:
			b.WriteString("- Memory directory (writable, for notes that outlive this task): " + d.Canonical + "\n")
		}
	}
	if l.fence.WriteFace() == fence.FaceOpen {
		// Under the open write face the directories above are where work is expected, not
		// the only places a write may go.
		b.WriteString("- Writes are not confined to the directories above (the write face is open): they list where to work, not every place you may write.\n")
	}
	b.WriteString("- Platform: " + l.manifest.Platform + "\n")
	b.WriteString("- Today's date: " + l.deps.Now().Format("2006-01-02") + "\n")
	b.WriteString("- Permission mode: " + string(l.modes.Current()) + "\n")
	if l.spec.ReadOnly {
		b.WriteString("- This task is read-only: you cannot change files.\n")
	}
	if len(l.roster) > 0 {
		b.WriteString("- Tools: " + strings.Join(l.roster.Names(), ", ") + "\n")
	}
	if s := strings.TrimSpace(l.spec.AppendSystemPrompt); s != "" {
		b.WriteString("\n" + s + "\n")
	}
	return b.String()
}

// readOnlyRoots are the read roots that are not write roots.
func readOnlyRoots(l *leg) []string {
	w := map[string]bool{}
	for _, r := range l.fence.WriteRoots() {
		w[r] = true
	}
	var out []string
	for _, r := range l.fence.ReadRoots() {
		if !w[r] {
			out = append(out, r)
		}
	}
	return out
}
