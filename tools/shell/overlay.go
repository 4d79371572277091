package shell

import "github.com/sema-agent/sema/sandbox"

// kernelOverlays reports whether the kernel's sandbox lays a private write layer over the
// toolchain caches (an overlay mount in the helper's view). Where it cannot, the caches
// are read-only and the toolchains that can be pointed elsewhere write into private
// caches in the layer directory (sandbox.Policy.PrivateCaches).
func kernelOverlays(k sandbox.Kernel) bool { return k.Overlay }

// CachesPrivate reports that the set's commands cannot write the toolchain caches through
// a private layer on this kernel, and get cold private caches instead (Go's, npm's,
// pip's, yarn's; the others read-only): the leg says so (sandbox.CodeCachesPrivate).
func (sb *Sandbox) CachesPrivate() bool {
	return sb != nil && !sb.Options.SharedCaches && !kernelOverlays(sb.Kernel)
}
