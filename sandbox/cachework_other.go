//go:build !linux

package sandbox

import "time"

// SweepCacheWorkWhenFree sweeps the layer (SweepCacheWork): there are no cache layers
// elsewhere than on Linux.
func SweepCacheWorkWhenFree(layer string, max time.Duration) error { return SweepCacheWork(layer) }
