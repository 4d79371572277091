package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxToolNameLen is the longest tool name the model providers accept (their pattern is
// ^[a-zA-Z0-9_-]{1,64}$), and so the longest name ToolName returns.
const MaxToolNameLen = 64

// hashLen is the number of hex digits of the suffix that keeps a cut name unique.
const hashLen = 8

// ToolName is the name the model calls the tool named tool of the server named server
// by: "mcp__" + sanitize(server) + "__" + sanitize(tool), where sanitize replaces every
// character outside [A-Za-z0-9_-] with '_' — one '_' per UTF-16 code unit, so two for a
// character beyond U+FFFF, and one per byte of invalid UTF-8. This is Claude Code's
// spelling (its JavaScript replaces code units), so permission rules written for it (mcp__srv__tool,
// mcp__srv) match the same tools here; a server's tool named "Write" or "Bash" becomes
// mcp__srv__Write and never shadows an engine tool.
//
// A name longer than MaxToolNameLen is cut to 55 bytes and given "_" and the first 8
// hex digits of the SHA-256 of server, a NUL and tool (as given, before sanitizing),
// 64 bytes in all. The cut alone would make every long name of one server with a
// common start the same name; the hash keeps them apart, and stays the same from run
// to run, so a rule or a transcript can name the tool. Sanitizing can also make two
// names one ("a.b" and "a_b"); a Mount keeps those apart too (see Mount.Tools).
func ToolName(server, tool string) string {
	plain := "mcp__" + sanitize(server) + "__" + sanitize(tool)
	if len(plain) <= MaxToolNameLen {
		return plain
	}
	return hashedName(plain, server, tool)
}

// hashedName is plain cut to leave room for the hash of (server, tool), and that hash.
// The result is at most MaxToolNameLen bytes and never equal to a plain name of
// MaxToolNameLen bytes or less that has no such suffix, save by a hash collision.
func hashedName(plain, server, tool string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	keep := min(len(plain), MaxToolNameLen-1-hashLen)
	return plain[:keep] + "_" + hex.EncodeToString(sum[:])[:hashLen]
}

// sanitize replaces every character outside [A-Za-z0-9_-] with '_' per UTF-16 code
// unit, as ToolName says. The result is ASCII, so a cut at any byte is a cut between
// characters.
func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '_', r == '-', '0' <= r && r <= '9', 'A' <= r && r <= 'Z', 'a' <= r && r <= 'z':
			b.WriteRune(r)
		case r > 0xFFFF:
			b.WriteString("__")
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
