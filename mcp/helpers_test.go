package mcp

import (
	"errors"
	"regexp"
)

// providerName is the pattern the model providers hold tool names to.
var providerName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// errorsAs is errors.As, for brevity in tables.
func errorsAs(err error, target any) bool { return errors.As(err, target) }
