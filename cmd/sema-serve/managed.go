package main

import (
	"errors"
	iofs "io/fs"
	"os"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/settings"
)

// managedSettings loads the machine's managed policy for every task: path when the
// operator named one (it must exist), else settings.ManagedFile when it exists, else
// none. A file that does not parse stops the service from starting: tasks would
// otherwise run without the policy the operator wrote.
func managedSettings(path string) (*settings.File, error) {
	named := path != ""
	if !named {
		path = settings.ManagedFile
	}
	if _, err := os.Stat(path); errors.Is(err, iofs.ErrNotExist) {
		if named {
			return nil, sema.Errorf(codeUsage, "--managed-settings %s does not exist; give the managed policy's file", path)
		}
		return nil, nil
	}
	f, err := settings.Load(path, settings.Managed)
	if err != nil {
		return nil, err
	}
	return &f, nil
}
