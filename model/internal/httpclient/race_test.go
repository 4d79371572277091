//go:build race

package httpclient

// raceEnabled: the race detector is on. sync.Pool then drops a share of what is put back
// on purpose, so allocation counts say nothing about a pool.
const raceEnabled = true
