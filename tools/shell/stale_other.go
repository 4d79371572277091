//go:build !linux

package shell

// pidNamespace is constant where pid namespaces do not exist.
func pidNamespace() string { return "-" }

// killMarkedGroups cannot prove membership without /proc: it signals nothing and
// reports that the directory must stay.
func killMarkedGroups([]int, string) bool { return false }
