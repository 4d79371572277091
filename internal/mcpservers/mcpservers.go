// Package mcpservers collects the MCP servers a leg may start from its layers: the
// workspace's (its .mcp.json and its settings files' mcpServers), the deployment's
// settings files', the deployment's own and the task's, a later layer's server replacing
// an earlier one of the same name. A workspace may not start programs by itself: its
// servers are held back unless the deployment trusts them.
package mcpservers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/settings"
)

// ProjectFile is where a workspace declares its MCP servers, as Claude Code reads it.
const ProjectFile = ".mcp.json"

// Input is what a leg's servers are collected from.
type Input struct {
	// Strict keeps the task's servers only (TaskSpec.StrictMCPConfig).
	Strict bool
	// Trust starts the servers the workspace declares (MCPOptions.TrustProject).
	Trust bool
	// Root is the task root, whose ProjectFile Read reads; an absent file (fs.ErrNotExist)
	// declares nothing.
	Root string
	Read func(ctx context.Context, path string) ([]byte, error)
	// Files are the leg's settings files, lowest layer first.
	Files []settings.File
	// Deployment and Task are the deployment's servers and the task's.
	Deployment, Task []mcp.Server
	// LookupEnv expands the servers' ${VAR} references (os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// OnUntrusted hears the workspace's servers that were held back, before the other
	// layers are read.
	OnUntrusted func(project []mcp.Server)
}

// Collect returns the servers the leg may start, and the workspace's servers that were
// held back for want of trust, for a status listing.
func Collect(ctx context.Context, in Input) (servers, untrusted []mcp.Server, err error) {
	var layers [][]mcp.Server
	if !in.Strict {
		project, err := projectServers(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		if len(project) > 0 && !in.Trust {
			untrusted = project
			in.OnUntrusted(project)
			project = nil
		}
		operator, err := settingsServers(in.Files)
		if err != nil {
			return nil, nil, err
		}
		layers = append(layers, project, operator, in.Deployment)
	}
	layers = append(layers, in.Task)
	var out []mcp.Server
	for _, layer := range layers {
		for _, s := range layer {
			out = slices.DeleteFunc(out, func(x mcp.Server) bool { return x.Name == s.Name })
			out = append(out, s)
		}
	}
	for i, s := range out {
		x, err := s.Expand(in.LookupEnv)
		if err != nil {
			return nil, nil, err
		}
		out[i] = x
	}
	return out, untrusted, nil
}

// settingsServers reads the servers of the deployment's settings files (the user's, the
// command line's, the managed policy), a higher layer's replacing a lower's.
func settingsServers(files []settings.File) ([]mcp.Server, error) {
	var out []mcp.Server
	for _, f := range files {
		if f.Layer.Workspace() || len(f.MCPServers) == 0 {
			continue
		}
		doc, _ := json.Marshal(map[string]json.RawMessage{"mcpServers": f.MCPServers})
		servers, err := mcp.ParseConfig(doc, cmp.Or(f.Path, string(f.Layer)+" settings"))
		if err != nil {
			return nil, err
		}
		for _, s := range servers {
			out = slices.DeleteFunc(out, func(x mcp.Server) bool { return x.Name == s.Name })
			out = append(out, s)
		}
	}
	return out, nil
}

// projectServers reads the servers the workspace declares: the root's ProjectFile and
// the mcpServers member of its settings files, marked Project.
func projectServers(ctx context.Context, in Input) ([]mcp.Server, error) {
	var out []mcp.Server
	path := filepath.Join(in.Root, ProjectFile)
	data, err := in.Read(ctx, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		if hf := sema.HostFault(err, "read "+path); hf != nil {
			return nil, hf
		}
		return nil, sema.Errorf(mcp.CodeConfigInvalid, "cannot read %s: %v", path, err)
	default:
		servers, err := mcp.ParseConfig(data, path)
		if err != nil {
			return nil, err
		}
		out = append(out, servers...)
	}
	for _, f := range in.Files {
		if !f.Layer.Workspace() || len(f.MCPServers) == 0 {
			continue
		}
		doc, _ := json.Marshal(map[string]json.RawMessage{"mcpServers": f.MCPServers})
		servers, err := mcp.ParseConfig(doc, f.Path)
		if err != nil {
			return nil, err
		}
		out = append(out, servers...)
	}
	for i := range out {
		out[i].Project = true
	}
	return out, nil
}
