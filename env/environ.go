package env

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
)

// Codes of the environment rule.
const (
	// CodeEnvPassthroughInvalid refuses a pass-through entry that is not a variable name
	// or a NAME_* prefix: empty, with '=' or a blank inside, or a glob other than one
	// trailing '*'.
	CodeEnvPassthroughInvalid = "config.env_passthrough_invalid"
	// CodeEnvPassthroughRefused refuses a pass-through entry naming a variable a model
	// provider reads its key from: that one never reaches a program sema starts.
	CodeEnvPassthroughRefused = "config.env_passthrough_refused"
	// CodeEnvScrubbed is the notice naming the variables of sema's environment that the
	// programs it starts do not inherit (names only, never values).
	CodeEnvScrubbed = "env.scrubbed"
)

// Reason says why a variable is held back.
type Reason string

// The reasons, from strongest to weakest: a variable held for several gets the first.
const (
	// HeldProviderKey: a model provider's key variable. No pass-through keeps it.
	HeldProviderKey Reason = "provider_key"
	// HeldSocket: an agent's socket (ssh-agent, gpg-agent, a keyring): a program that
	// holds its address signs and decrypts with the person's keys.
	HeldSocket Reason = "agent_socket"
	// HeldName: the name is credential-shaped (*_TOKEN, *_SECRET, *PASSWORD*, …).
	HeldName Reason = "credential_name"
	// HeldValue: the value is credential-shaped (a URL with a password, a known key
	// prefix, a private key block).
	HeldValue Reason = "credential_value"
	// HeldGroup: GIT_CONFIG_COUNT and its KEY/VALUE pairs go together when one of them
	// is held, or git refuses to start ("missing config key").
	HeldGroup Reason = "git_config_group"
)

// providerKeys are the variables sema's model providers read a key from (model/anthropic,
// model/openai, the Anthropic SDK's defaults). sema may use any of them in one process (a
// model is chosen by which key is set, per task and per custom command), so all of them
// are what "the key sema itself uses" means.
var providerKeys = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"}

// ProviderKeys returns the names of the variables model providers read their keys from;
// the programs sema starts never inherit them.
func ProviderKeys() []string { return slices.Clone(providerKeys) }

// isProviderKey compares without case: an entry spelled otherwise is refused too, so a
// person's typo is never read as consent.
func isProviderKey(name string) bool {
	for _, k := range providerKeys {
		if strings.EqualFold(name, k) {
			return true
		}
	}
	return false
}

// agentSockets are variables whose value reaches an agent holding the person's keys.
var agentSockets = map[string]bool{"SSH_AUTH_SOCK": true, "GPG_AGENT_INFO": true, "GNOME_KEYRING_CONTROL": true}

// Classify says whether a program sema starts is kept from inheriting name=value of
// sema's own environment, and why; "" keeps it. It judges the name (without case) and
// the value; a pass-through list is Inherit's business.
func Classify(name, value string) Reason {
	switch {
	case isProviderKey(name):
		return HeldProviderKey
	case agentSockets[strings.ToUpper(name)]:
		return HeldSocket
	case credentialName(name):
		return HeldName
	case credentialValue(value):
		return HeldValue
	}
	return ""
}

// nameSubstrings held anywhere in an upper-cased name.
var nameSubstrings = []string{"PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "CREDENTIAL", "PRIVATE_KEY",
	"PRIVATEKEY", "APIKEY", "API_KEY", "ACCESSKEY", "ACCESS_KEY", "WEBHOOK", "CONNECTION_STRING", "CONNSTR"}

// credentialName reports whether name is shaped like a credential's. It works on the
// name's words (split at '_', '-', '.'), so that TOKENIZERS_PARALLELISM, KEYBOARD, PWD,
// OLDPWD and GIT_CONFIG_KEY_0 stay while GITHUB_TOKEN, AWS_ACCESS_KEY_ID, MYSQL_PWD and
// NPM_CONFIG__AUTH go.
func credentialName(name string) bool {
	up := strings.ToUpper(name)
	for _, s := range nameSubstrings {
		if strings.Contains(up, s) {
			return true
		}
	}
	words := strings.FieldsFunc(up, func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	n := len(words)
	for i, w := range words {
		last := i == n-1
		switch {
		case strings.HasSuffix(w, "TOKEN"), strings.HasSuffix(w, "TOKENS"):
			return true // GITHUB_TOKEN, AWS_SESSION_TOKEN, HF_TOKEN, AUTHTOKEN
		case w == "AUTH", w == "AUTHORIZATION", w == "BEARER":
			return true // NPM_CONFIG__AUTH, AUTH_HEADER, DOCKER_AUTH_CONFIG, REDISCLI_AUTH
		case w == "PASS", w == "CRED", w == "CREDS", w == "COOKIE", w == "COOKIES", w == "JWT":
			return true // SMTP_PASS, GOOGLE_CREDS, SESSION_COOKIE
		case last && (w == "KEY" || w == "KEYS" || strings.HasSuffix(w, "KEY") && len(w) > 3):
			return true // STRIPE_KEY, *_SIGNING_KEY, SECRETKEY
		case w == "KEY" && !last && words[i+1] == "ID":
			return true // AWS_ACCESS_KEY_ID, *_KEY_ID
		case last && w == "PAT" && n > 1:
			return true // GITHUB_PAT, AZURE_DEVOPS_PAT
		case last && w == "PWD" && n > 1:
			return true // MYSQL_PWD, DB_PWD; PWD itself is the working directory
		}
	}
	// Password managers' session keys: 1Password's OP_SESSION_<account>, Bitwarden's.
	return strings.HasPrefix(up, "OP_SESSION_") || up == "BW_SESSION"
}

// valuePattern matches a credential-shaped value: a URL with a password in its userinfo,
// a key with a provider's published prefix (long enough that a word or a path does not
// match), a private key block, a webhook URL (the URL is the secret), an Authorization
// header, a connection string's password.
// It is compiled on first use: every process sema starts again (a spare) would pay for
// it in its init otherwise.
var valuePattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(
		`[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@?#]*:[^/\s@?#]+@` +
			`|(?:^|[^A-Za-z0-9])(?:` +
			`sk-ant-[A-Za-z0-9_-]{8,}` +
			`|sk-[A-Za-z0-9_-]{32,}` +
			`|gh[pousr]_[A-Za-z0-9]{20,}` +
			`|github_pat_[A-Za-z0-9_]{20,}` +
			`|glpat-[A-Za-z0-9_-]{20,}` +
			`|xox[abposr]-[A-Za-z0-9-]{10,}` +
			`|xapp-[A-Za-z0-9-]{10,}` +
			`|(?:AKIA|ASIA)[A-Z0-9]{16}` +
			`|hf_[A-Za-z0-9]{30,}` +
			`|npm_[A-Za-z0-9]{36}` +
			`|pypi-[A-Za-z0-9_-]{50,}` +
			`|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}` +
			`|AIza[0-9A-Za-z_-]{35}` +
			`|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.` +
			`)` +
			`|-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----` +
			`|hooks\.slack\.com/services/` +
			`|discord(?:app)?\.com/api/webhooks/` +
			`|(?i:authorization:\s*\S)` +
			`|(?i:(?:^|;)\s*(?:password|pwd|accountkey|sharedaccesskey)\s*=\s*[^;\s])`)
})

// valueHints are cheap tests that let most values skip the pattern: a value none of them
// is in cannot match it.
var valueHints = []string{"://", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "_pat_", "glpat-", "xox", "xapp-",
	"AKIA", "ASIA", "hf_", "npm_", "pypi-", "k_live_", "k_test_", "AIza", "eyJ", "PRIVATE KEY", "slack.com", "discord",
	"uthorization", "UTHORIZATION", "assword", "ASSWORD", "wd", "WD", "Key", "KEY", "key"}

func credentialValue(v string) bool {
	if len(v) < 8 {
		return false
	}
	for _, h := range valueHints {
		if strings.Contains(v, h) {
			return valuePattern().MatchString(v)
		}
	}
	return false
}

// Passthrough is a checked pass-through list: the variables a person named to be
// inherited even though the rule would hold them back. Its zero value keeps none.
type Passthrough struct {
	names    map[string]bool
	prefixes []string
}

// ParsePassthrough checks a pass-through list: each entry an exact variable name or a
// prefix ending in one '*' (NAME_*), names compared with case as the environment does.
// where names the list's origin in a refusal ("envPassthrough in /x/settings.json",
// "--env-passthrough"); "" says "the pass-through list". An invalid entry is refused
// (config.env_passthrough_invalid), and so is one naming a provider's key variable
// (config.env_passthrough_refused). A prefix never keeps a provider's key either.
func ParsePassthrough(list []string, where string) (Passthrough, error) {
	if where == "" {
		where = "the pass-through list"
	}
	var p Passthrough
	for _, e := range list {
		if err := checkEntry(e, where); err != nil {
			return Passthrough{}, err
		}
		if pre, ok := strings.CutSuffix(e, "*"); ok {
			p.prefixes = append(p.prefixes, pre)
			continue
		}
		if p.names == nil {
			p.names = map[string]bool{}
		}
		p.names[e] = true
	}
	return p, nil
}

func checkEntry(e, where string) error {
	bad := func(why string) error {
		return sema.Errorf(CodeEnvPassthroughInvalid, "the entry %q of %s %s; write a variable name (GOFLAGS) or a prefix ending in one * (MYAPP_*)", e, where, why).
			With("entry", e).With("where", where)
	}
	body := strings.TrimSuffix(e, "*")
	switch {
	case e == "":
		return bad("is empty")
	case strings.ContainsRune(e, '='):
		return bad("holds '=' (name a variable; its value comes from sema's environment)")
	case strings.IndexFunc(e, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return bad("holds a blank or a control character")
	case body == "":
		return bad("is a bare * (it would pass every secret through)")
	case strings.ContainsAny(body, "*?[]{}\\"):
		return bad("is a glob other than one trailing *")
	case isProviderKey(e):
		return sema.Errorf(CodeEnvPassthroughRefused, "the entry %q of %s names the variable a model provider reads its key from; no program sema starts inherits it — remove the entry, and give a program that needs a key of its own its own variable", e, where).
			With("entry", e).With("where", where)
	}
	return nil
}

// Keeps reports whether the list names name.
func (p Passthrough) Keeps(name string) bool {
	if p.names[name] {
		return true
	}
	for _, pre := range p.prefixes {
		if strings.HasPrefix(name, pre) {
			return true
		}
	}
	return false
}

// Inheritance is what a program sema starts inherits of an environment.
type Inheritance struct {
	// Env are the NAME=value entries kept, in the environment's order.
	Env []string
	// Held are the names held back, sorted, each once.
	Held []string
	// Why says why each name of Held was held back.
	Why map[string]Reason
}

// Inherit applies the rule to environ (NAME=value entries, as os.Environ gives them):
// every variable Classify holds back goes, unless pass keeps it — never a provider's
// key. What a caller sets explicitly on a request (ExecRequest.Env) is not judged: it
// was given on purpose.
func Inherit(environ []string, pass Passthrough) Inheritance {
	var in Inheritance
	hold := func(name string, why Reason) {
		if in.Why == nil {
			in.Why = map[string]Reason{}
		}
		if _, ok := in.Why[name]; !ok {
			in.Why[name] = why
		}
	}
	group := false
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		why := Classify(name, value)
		if why != "" && (why == HeldProviderKey || !pass.Keeps(name)) {
			hold(name, why)
			group = group || gitConfigMember(name)
		}
	}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if group && gitConfigMember(name) && !pass.Keeps(name) || name == "GIT_CONFIG_COUNT" && group {
			hold(name, HeldGroup)
		}
		if _, held := in.Why[name]; !held {
			in.Env = append(in.Env, kv)
		}
	}
	in.Held = slices.Sorted(maps.Keys(in.Why))
	return in
}

// gitConfigMember reports whether name is one of git's GIT_CONFIG_KEY_<n> and
// GIT_CONFIG_VALUE_<n> variables.
func gitConfigMember(name string) bool {
	for _, pre := range []string{"GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"} {
		if n, ok := strings.CutPrefix(name, pre); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

// own remembers the last answer of inheritOwn: this process's environment rarely
// changes between two programs, and judging it again costs tens of microseconds.
var own struct {
	sync.Mutex
	environ, list []string
	kept          []string
}

// inheritOwn is Inherit of this process's environment, kept entries only, as a slice the
// caller may append to. list is pass as given, the key of the remembered answer.
func inheritOwn(list []string, pass Passthrough) []string {
	environ := os.Environ()
	own.Lock()
	defer own.Unlock()
	if !slices.Equal(environ, own.environ) || !slices.Equal(list, own.list) {
		own.environ, own.list = environ, slices.Clone(list)
		own.kept = Inherit(environ, pass).Env
	}
	return slices.Clip(slices.Clone(own.kept))
}
