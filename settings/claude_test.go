package settings

import "testing"

func word(b bool) *bool { return &b }

// The command line's word wins; else the highest deployment layer that names
// claudeCompat; a workspace's file is never asked; with no word the files are read.
func TestClaudeFiles(t *testing.T) {
	t.Parallel()
	user := &File{Layer: User, ClaudeCompat: word(false)}
	flag := &File{Layer: Flag, ClaudeCompat: word(true)}
	project := &File{Layer: Project, ClaudeCompat: word(false)}
	cases := []struct {
		name  string
		flag  *bool
		files []*File
		want  bool
	}{
		{"no word anywhere", nil, []*File{{Layer: User}, nil}, true},
		{"the user's false", nil, []*File{user}, false},
		{"--settings above the user", nil, []*File{user, flag}, true},
		{"the managed policy above --settings", nil, []*File{flag, {Layer: Managed, ClaudeCompat: word(false)}}, false},
		{"a workspace may not turn them off", nil, []*File{project}, true},
		{"--claude-compat over the user's false", word(true), []*File{user}, true},
		{"--no-claude-compat", word(false), []*File{flag}, false},
	}
	for _, c := range cases {
		if got := ClaudeFiles(c.flag, c.files...); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
