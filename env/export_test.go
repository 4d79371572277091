package env

// BaseEnviron is baseEnviron, for the benchmark of what Host.Start adds to a start.
var BaseEnviron = baseEnviron

// TempName and WriterTag are tempName and writerTag, for the tests of CleanStaleTemps.
var (
	TempName  = tempName
	WriterTag = writerTag
)
