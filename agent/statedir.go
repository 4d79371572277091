package agent

import "github.com/sema-agent/sema/statedir"

// WithStateDir returns d with its three state-directory seats filled from dir: Store
// (the session store), History (the file-history store) and StateDir (the directory,
// which tools may then never read or write). Whatever d held in those seats is
// replaced; every other field is returned as it was. It lives here, not in package
// statedir, so the package that opens the stores does not import the runner.
func (d Deps) WithStateDir(dir *statedir.Dir) Deps {
	d.Store, d.History, d.StateDir = dir.Sessions(), dir.History(), dir.Path()
	return d
}
