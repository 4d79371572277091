package main

import "testing"

func TestRawJSONUndoesOnlyHTMLEscapes(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"\u003cx\u003e \u0026 y"}`: `{"a":"<x> & y"}`,
		`{"b":"\\u003c"}`:                `{"b":"\\u003c"}`, // an escaped backslash, then text
		`{"c":"\u00e9\n"}`:               `{"c":"\u00e9\n"}`,
		`{"z":1,"a":2}`:                  `{"z":1,"a":2}`, // key order kept
	} {
		if got := rawJSON([]byte(in)); got != want {
			t.Errorf("rawJSON(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestFailedExit(t *testing.T) {
	for in, want := range map[string]string{
		"out\n\nThe command exited with code 2.":  "exit 2",
		"out\n\nThe command exited with code 0.":  "",
		"The command ended by signal 9 (killed).": "signal",
		"just output": "",
		"The command was still running at its timeout of 1000 ms.": "",
	} {
		if got := failedExit(in); got != want {
			t.Errorf("failedExit(%q) = %q, want %q", in, got, want)
		}
	}
}
