package hooks

import "encoding/json"

// ParseConfig is a placeholder until the parser lands.
func ParseConfig(raw json.RawMessage, source string) ([]Hook, error) { return nil, nil }
