package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/sema-agent/sema"
	"github.com/spf13/cobra"
)

// serveBinary is the service's own binary. `sema serve` runs it, so that River, pgx and
// the Prometheus client (about 10 MB and 5 ms of package initialisation) are not part of
// every `sema run`.
const serveBinary = "sema-serve"

// codeServeMissing: `sema serve` found no sema-serve binary to run.
const codeServeMissing = "serve.binary_missing"

func newServeCmd(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "serve [--listen ADDR] [--store postgres://…] | serve token create | serve tenant set|show|delete | serve webhook add|list|remove | serve schedule add|list|delete | serve replay SESSION",
		Short: "Run sema as a service: an HTTP API with server-sent events (the sema-serve binary)",
		Long: `Run sema as a service: an HTTP API with server-sent events (see /v1/openapi.json).

sema serve runs the sema-serve binary that sits next to sema (else the one on PATH) with
the same arguments: go build -o sema-serve ./cmd/sema-serve, or go install ./cmd/...
Once it is built, sema serve --help lists its flags.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := findServe()
			if err != nil && slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" }) {
				// Asked what sema serve is: say it, with how to build the binary that
				// lists its flags, rather than only refusing.
				return cmd.Help()
			}
			if err != nil {
				return &exitErr{code: exitUsage, err: err}
			}
			// Replace this process: signals (SIGTERM's graceful shutdown) and the exit
			// status are the service's own.
			return syscall.Exec(path, append([]string{path}, args...), os.Environ())
		},
	}
}

// findServe finds sema-serve beside this executable, else on PATH.
func findServe() (string, error) {
	if self, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			self = real
		}
		p := filepath.Join(filepath.Dir(self), serveBinary)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(serveBinary)
	if err == nil {
		return p, nil
	}
	if !errors.Is(err, exec.ErrNotFound) {
		return "", sema.Errorf(codeServeMissing, "sema serve runs %s, which cannot be run: %v", serveBinary, err)
	}
	return "", sema.Errorf(codeServeMissing, "sema serve runs the %s binary, found neither next to sema nor on PATH; build it with: go build -o %s ./cmd/sema-serve (or go install ./cmd/...)", serveBinary, serveBinary)
}
