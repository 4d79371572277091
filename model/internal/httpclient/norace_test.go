//go:build !race

package httpclient

const raceEnabled = false
