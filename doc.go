// Package sema holds the few types every package of the agent core shares: the coded
// [Error] a caller can branch on, and the [Notice] the engine uses for non-fatal
// announcements. It imports no other package of the module.
//
// The engine itself lives in package agent (the Runner); see docs/layout.md for the map.
package sema
