// Package tui is the interactive terminal session of sema: a person types prompts, reads
// the model's answers as they stream, and answers the permission questions in a dialog.
//
// It is a client of the engine, not part of it: it consumes one small interface,
// Backend (prompts and mode changes out, agent.Events in), and answers the gate's
// questions through Approver, a permission.Approver that hands each question to the
// screen and waits for the person. Local is the back-end over an in-process
// agent.Runner; Remote is the one over a running `sema serve` (package client). Only cmd/sema imports this package; the engine never does.
//
// The Bubble Tea model (Model) is pure: it reads messages and returns commands, so the
// screen can be driven and its frames compared without a terminal.
package tui
