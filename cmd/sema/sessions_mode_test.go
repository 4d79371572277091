package main

import (
	"testing"

	"github.com/sema-agent/sema/session"
)

func TestModeOfShowsTheEffectiveMode(t *testing.T) {
	for _, c := range []struct {
		s    session.Session
		want string
	}{
		{session.Session{}, "default"},
		{session.Session{Mode: "plan", EffectiveMode: "plan"}, "plan"},
		{session.Session{Mode: "bypassPermissions", EffectiveMode: "default"}, "default (asked bypassPermissions)"},
		{session.Session{EffectiveMode: "dontAsk"}, "dontAsk (asked default)"},
		{session.Session{Mode: "acceptEdits"}, "acceptEdits"},
	} {
		if got := modeOf(c.s); got != c.want {
			t.Errorf("modeOf(%+v) = %q, want %q", c.s, got, c.want)
		}
	}
}
