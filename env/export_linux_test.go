//go:build linux

package env

// WarmUsed counts the starts a spare took; WarmTrustStale makes a spare serve a start
// after the mount table changed (see TestWarmStartSeesMountsMadeSince).
var (
	WarmUsed       = warmUsed.Load
	WarmTrustStale = warmTrustStale.Store
)
