//go:build !linux

package sandbox

// SweepCacheWorkAfter sweeps the layer (SweepCacheWork): there are no cache layers
// elsewhere than on Linux.
func SweepCacheWorkAfter(layer string, pid int) error { return SweepCacheWork(layer) }
