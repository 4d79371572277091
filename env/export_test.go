package env

// BaseEnviron is baseEnviron, for the benchmark of what Host.Start adds to a start.
var BaseEnviron = baseEnviron
