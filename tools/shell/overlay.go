package shell

import "github.com/sema-agent/sema/sandbox"

// kernelOverlays reports whether the kernel's sandbox lays a private write layer over the
// toolchain caches (an overlay mount in the helper's view). Until the probe says so, it
// does not: the caches are read-only and the toolchains that can be pointed elsewhere
// write into private caches in the layer directory (sandbox.Policy.PrivateCaches).
func kernelOverlays(k sandbox.Kernel) bool { return false }
