//go:build !linux

package lease

// selfProcess: without /proc a process's start cannot be told from its pid, so holders
// carry no identity and a dead holder's lease runs out as it always did.
func selfProcess() (process, bool) { return process{}, false }

func probeProcess(int) (procState, uint64) { return procUnknown, 0 }
