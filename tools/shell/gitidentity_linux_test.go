//go:build linux

package shell

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileGitconfig is a user's global git configuration with an identity and the ways
// people keep credentials in it: a credential helper with an inline token, an insteadOf
// URL with userinfo, an extra header, an include of another file.
const hostileGitconfig = `[user]
	name = Ada Example
	email = ada@example.com
[init]
	defaultBranch = trunk
[credential]
	helper = "!f() { echo password=TOKEN-IN-HELPER; }; f"
[url "https://x-access-token:TOKEN-IN-URL@github.com/"]
	insteadOf = https://github.com/
[http "https://example.com/"]
	extraHeader = Authorization: Bearer TOKEN-IN-HEADER
[include]
	path = ~/.gitconfig-secret
[alias]
	leak = "!echo TOKEN-IN-ALIAS"
`

// TestConfinedGitGetsTheIdentityNotTheSecrets: in a fake home whose .gitconfig holds an
// identity and tokens, plain bash reads the tokens (calibration); a confined command's
// git sees the identity and harmless keys and no token, cannot read ~/.gitconfig or
// ~/.config/git, and commits as the user.
func TestConfinedGitGetsTheIdentityNotTheSecrets(t *testing.T) {
	needGit(t)
	home := tempDir(t)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(hostileGitconfig), 0o600)
	os.WriteFile(filepath.Join(home, ".gitconfig-secret"), []byte("[user]\n\tsigningkey = TOKEN-IN-INCLUDE\n[core]\n\tsshCommand = ssh -i TOKEN-IN-INCLUDE\n"), 0o600)
	os.MkdirAll(filepath.Join(home, ".config", "git"), 0o700)
	os.WriteFile(filepath.Join(home, ".config", "git", "config"), []byte("[github]\n\ttoken = TOKEN-IN-XDG\n"), 0o600)
	homeEnv := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	withHome := func(c *Config) { c.ExtraEnv = append(c.ExtraEnv, homeEnv...) }
	script := `git config --global --list; cat ~/.gitconfig; cat ~/.config/git/config; git config --get-all github.token`
	tokens := []string{"TOKEN-IN-HELPER", "TOKEN-IN-URL", "TOKEN-IN-HEADER", "TOKEN-IN-INCLUDE", "TOKEN-IN-XDG", "TOKEN-IN-ALIAS"}

	free := newFix(t, withHome)
	out := free.bash(script)
	for _, tok := range []string{"TOKEN-IN-HELPER", "TOKEN-IN-URL", "TOKEN-IN-HEADER", "TOKEN-IN-XDG"} {
		if !strings.Contains(out, tok) {
			t.Fatalf("calibration: plain bash did not show %s: %q", tok, out)
		}
	}

	sb := sandboxed(t)
	f := newFix(t, withHome, sb, func(c *Config) { c.Sandbox.Options.Home = home })
	out = f.bash(script + `; git config --global --includes --list`)
	for _, tok := range tokens {
		if strings.Contains(out, tok) {
			t.Errorf("a confined command saw %s: %q", tok, out)
		}
	}
	for _, want := range []string{"user.name=Ada Example", "user.email=ada@example.com", "init.defaultbranch=trunk"} {
		if !strings.Contains(out, want) {
			t.Errorf("the confined global configuration lacks %q: %q", want, out)
		}
	}
	for _, key := range []string{"credential.", "url.", "http.", "include.", "alias."} {
		if strings.Contains(out, "\n"+key) || strings.HasPrefix(out, key) {
			t.Errorf("the confined global configuration has a %s key: %q", key, out)
		}
	}
	if !strings.Contains(out, "No such file or directory") && !strings.Contains(out, "Permission denied") {
		t.Errorf("cat ~/.gitconfig did not fail: %q", out)
	}
	// git commit keeps working, as the user.
	out = f.bash(`git init -q . && echo x > f && git add f && git commit -qm one && git log -1 --format='%an <%ae>' && git branch --show-current`)
	if !strings.Contains(out, "Ada Example <ada@example.com>") || !strings.Contains(out, "trunk") {
		t.Fatalf("a confined commit did not carry the user's identity and default branch: %q", out)
	}
}

// TestSanitizedGitConfigKeepsOnlySafeKeys: the sanitizer keeps listed keys, quotes their
// values so no value can open a section or a key of its own, and drops everything else.
func TestSanitizedGitConfigKeepsOnlySafeKeys(t *testing.T) {
	list := strings.Join([]string{
		"user.name\nEve \"the\" \\ Example\n[credential]\n\thelper = x",
		"user.email\neve@example.com",
		"credential.helper\nstore",
		"url.https://tok@github.com/.insteadof\nhttps://github.com/",
		"http.https://example.com/.extraheader\nAuthorization: Bearer x",
		"include.path\n/etc/x",
		"includeif.gitdir:~/work/.path\n/etc/y",
		"core.sshcommand\nssh -i key",
		"core.autocrlf\ninput",
		"safe.directory\n*",
	}, "\x00") + "\x00"
	got := string(sanitizedGitConfig([]byte(list)))
	for _, bad := range []string{"[credential]\n", "helper = \"store\"", "insteadof", "extraheader", "include", "sshcommand"} {
		if strings.Contains(got, bad) {
			t.Errorf("the sanitized configuration holds %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{"\tname = \"Eve \\\"the\\\" \\\\ Example\\n[credential]\\n\\thelper = x\"\n", "\temail = \"eve@example.com\"", "[core]\n\tautocrlf = \"input\"", "[safe]\n\tdirectory = \"*\""} {
		if !strings.Contains(got, want) {
			t.Errorf("the sanitized configuration lacks %q:\n%s", want, got)
		}
	}
}
