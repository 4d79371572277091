package main

import (
	"os"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/mcp"
)

// mcpConfigs reads the --mcp-config values, in order: each is inline JSON (it starts
// with "{") or the path of a file, in Claude Code's {"mcpServers": {...}} format. A later
// value's server replaces an earlier one of the same name.
func mcpConfigs(values []string) ([]mcp.Server, error) {
	var out []mcp.Server
	for _, v := range values {
		data, source := []byte(v), "--mcp-config"
		if !strings.HasPrefix(strings.TrimSpace(v), "{") {
			b, err := os.ReadFile(v)
			if err != nil {
				if hf := sema.HostFault(err, "read the --mcp-config file "+v); hf != nil {
					return nil, hf
				}
				return nil, sema.Errorf(mcp.CodeConfigInvalid, "cannot read the --mcp-config file %s: %v; give a file or inline JSON", v, err)
			}
			data, source = b, v
		}
		servers, err := mcp.ParseConfig(data, source)
		if err != nil {
			return nil, err
		}
		for _, s := range servers {
			for i := 0; i < len(out); i++ {
				if out[i].Name == s.Name {
					out = append(out[:i], out[i+1:]...)
					i--
				}
			}
			out = append(out, s)
		}
	}
	return out, nil
}
