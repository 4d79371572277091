package files

import (
	"regexp"
	"strings"
	"sync"

	"github.com/sema-agent/sema/fence"
)

// The engine's memory write-scan (station 5b) runs after the deployment's BeforeWrite
// hook, and only for writes into an advertised memory directory. Memory files outlive
// the task: they are read back into the prompt of every later session, so a credential
// written there leaks into contexts nobody reviewed. Ordinary workspace files are the
// user's business (writing a key into a project's .env can be the task), so the
// workspace is not scanned. The scan is deliberately small and exact — a handful of
// formats whose shape alone says "secret" — so it refuses real credentials and nothing
// else; it is a seat belt, not a data-loss-prevention system. The patterns are
// compiled on first use, not at every start of the process.
var memorySecretPatterns = sync.OnceValue(func() []secretPattern {
	return []secretPattern{
		// PEM private keys of every flavour: RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS#8, and
		// the armoured "PGP PRIVATE KEY BLOCK".
		{"private key", regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)},
		// AWS access key ids: long-term (AKIA) and temporary (ASIA).
		{"AWS access key id", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
		// GitHub tokens: classic personal (ghp_), OAuth (gho_), user-to-server (ghu_),
		// server-to-server (ghs_), refresh (ghr_), and fine-grained personal tokens.
		{"GitHub token", regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36}\b`)},
		{"GitHub token", regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{22,}\b`)},
	}
})

// secretPattern is one format of memorySecretPatterns.
type secretPattern struct {
	kind string
	re   *regexp.Regexp
}

// memorySecret reports the kind of the first secret in content and its 1-based line,
// or kind "" when there is none.
func memorySecret(content string) (kind string, line int) {
	best := -1
	for _, p := range memorySecretPatterns() {
		loc := p.re.FindStringIndex(content)
		if loc != nil && (best < 0 || loc[0] < best) {
			best, kind = loc[0], p.kind
		}
	}
	if best < 0 {
		return "", 0
	}
	return kind, strings.Count(content[:best], "\n") + 1
}

// inMemoryDir reports whether the canonical key lies in one of the memory directories.
func (lc LaneConfig) inMemoryDir(key string) bool {
	for _, d := range lc.MemoryDirs {
		if fence.Contains(d, key) {
			return true
		}
	}
	return false
}
