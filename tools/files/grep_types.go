package files

import (
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
)

// grepTypeGlobs is Grep's file type table, after ripgrep's (`rg --type-list`): globs on
// the base name. It is built on first use, not at every start of the process.
var grepTypeGlobs = sync.OnceValue(func() map[string][]string {
	return map[string][]string{
		"asm":        {"*.asm", "*.s", "*.S"},
		"c":          {"*.c", "*.h", "*.H"},
		"clojure":    {"*.clj", "*.cljc", "*.cljs", "*.cljx", "*.edn"},
		"cmake":      {"*.cmake", "CMakeLists.txt"},
		"cpp":        {"*.C", "*.cc", "*.cpp", "*.cxx", "*.c++", "*.h", "*.H", "*.hh", "*.hpp", "*.hxx", "*.h++", "*.inl", "*.ipp"},
		"cs":         {"*.cs"},
		"csharp":     {"*.cs"},
		"css":        {"*.css", "*.scss", "*.sass", "*.less"},
		"csv":        {"*.csv", "*.tsv"},
		"dart":       {"*.dart"},
		"docker":     {"Dockerfile", "Dockerfile.*", "*.dockerfile", "Containerfile"},
		"elixir":     {"*.ex", "*.exs", "*.eex", "*.heex", "*.leex"},
		"erlang":     {"*.erl", "*.hrl"},
		"go":         {"*.go"},
		"gradle":     {"*.gradle", "*.gradle.kts"},
		"graphql":    {"*.graphql", "*.graphqls", "*.gql"},
		"haskell":    {"*.hs", "*.lhs"},
		"html":       {"*.htm", "*.html", "*.xhtml", "*.ejs"},
		"java":       {"*.java", "*.jsp"},
		"js":         {"*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"},
		"json":       {"*.json", "*.jsonl", "*.ndjson", "*.geojson", "*.sarif"},
		"jsonc":      {"*.jsonc"},
		"julia":      {"*.jl"},
		"kotlin":     {"*.kt", "*.kts"},
		"lua":        {"*.lua"},
		"make":       {"Makefile", "makefile", "GNUmakefile", "*.mk", "*.mak"},
		"markdown":   {"*.md", "*.markdown", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
		"md":         {"*.md", "*.markdown", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
		"nix":        {"*.nix"},
		"ocaml":      {"*.ml", "*.mli", "*.mll", "*.mly"},
		"perl":       {"*.pl", "*.pm", "*.t", "*.pod"},
		"php":        {"*.php", "*.php3", "*.php4", "*.php5", "*.phtml"},
		"proto":      {"*.proto"},
		"protobuf":   {"*.proto"},
		"ps":         {"*.ps1", "*.psm1", "*.psd1"},
		"py":         {"*.py", "*.pyi", "*.pyw"},
		"python":     {"*.py", "*.pyi", "*.pyw"},
		"r":          {"*.R", "*.r", "*.Rmd", "*.Rnw"},
		"rb":         {"*.rb", "*.rake", "*.gemspec", "Gemfile", "Rakefile", "*.erb"},
		"ruby":       {"*.rb", "*.rake", "*.gemspec", "Gemfile", "Rakefile", "*.erb"},
		"rust":       {"*.rs"},
		"scala":      {"*.scala", "*.sbt", "*.sc"},
		"sh":         {"*.sh", "*.bash", "*.zsh", "*.ksh", "*.csh", "*.tcsh", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile", ".zshenv", ".kshrc", ".cshrc"},
		"sql":        {"*.sql", "*.psql"},
		"svelte":     {"*.svelte"},
		"swift":      {"*.swift"},
		"terraform":  {"*.tf", "*.tfvars", "*.tf.json"},
		"tex":        {"*.tex", "*.ltx", "*.cls", "*.sty", "*.bib"},
		"tf":         {"*.tf", "*.tfvars", "*.tf.json"},
		"toml":       {"*.toml", "Cargo.lock"},
		"ts":         {"*.ts", "*.tsx", "*.mts", "*.cts"},
		"txt":        {"*.txt"},
		"typescript": {"*.ts", "*.tsx", "*.mts", "*.cts"},
		"vue":        {"*.vue"},
		"xml":        {"*.xml", "*.xml.dist", "*.dtd", "*.xsl", "*.xslt", "*.xsd", "*.xjb", "*.rng", "*.sch", "*.svg"},
		"yaml":       {"*.yaml", "*.yml"},
		"zig":        {"*.zig"},
	}
})

// grepTypeNames lists the known types, sorted, for the error a bad type gets.
func grepTypeNames() string {
	names := make([]string, 0, len(grepTypeGlobs()))
	for n := range grepTypeGlobs() {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// fileFilter decides which files of a walk Grep searches: a type's globs and the glob
// parameter's include and exclude patterns.
type fileFilter struct {
	typeExts  map[string]bool // "*.go" as ".go"
	typeNames map[string]bool // exact base names
	typeGlobs []string        // the rest, matched with doublestar
	hasType   bool
	include   []string
	exclude   []string
}

// newFileFilter builds the filter for a type name ("" for any) and a glob parameter: one
// or more patterns separated by spaces (or commas outside braces), "!" excluding. A
// pattern with a "/" matches the path relative to the search directory, any other the
// base name. ok is false for an unknown type; err is set for a malformed pattern.
func newFileFilter(typ, globs string) (f *fileFilter, ok bool, bad string) {
	f = &fileFilter{}
	if typ != "" {
		list, known := grepTypeGlobs()[strings.ToLower(typ)]
		if !known {
			return nil, false, ""
		}
		f.hasType = true
		f.typeExts, f.typeNames = map[string]bool{}, map[string]bool{}
		for _, g := range list {
			switch {
			case strings.HasPrefix(g, "*.") && !strings.ContainsAny(g[1:], "*?[{"):
				f.typeExts[g[1:]] = true
			case !strings.ContainsAny(g, "*?[{"):
				f.typeNames[g] = true
			default:
				f.typeGlobs = append(f.typeGlobs, g)
			}
		}
	}
	for _, field := range strings.Fields(globs) {
		parts := []string{field}
		if !strings.Contains(field, "{") {
			parts = strings.Split(field, ",")
		}
		for _, p := range parts {
			if p == "" {
				continue
			}
			neg := strings.HasPrefix(p, "!")
			p = strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/")
			if !doublestar.ValidatePattern(p) {
				return nil, true, p
			}
			if neg {
				f.exclude = append(f.exclude, p)
			} else {
				f.include = append(f.include, p)
			}
		}
	}
	return f, true, ""
}

// allows reports whether the file at rel (relative to the search directory) is searched.
func (f *fileFilter) allows(rel string) bool {
	base := path.Base(rel)
	if f.hasType && !f.typeMatch(base) {
		return false
	}
	for _, p := range f.exclude {
		if globMatch(p, rel, base) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, p := range f.include {
		if globMatch(p, rel, base) {
			return true
		}
	}
	return false
}

func (f *fileFilter) typeMatch(base string) bool {
	if f.typeNames[base] {
		return true
	}
	// Every suffix starting at a dot: "a.tf.json" tries ".tf.json" and ".json".
	for i := 0; i < len(base); i++ {
		if base[i] == '.' && f.typeExts[base[i:]] {
			return true
		}
	}
	for _, g := range f.typeGlobs {
		if doublestar.MatchUnvalidated(g, base) {
			return true
		}
	}
	return false
}

// globMatch matches a filter pattern: against the relative path when it has a "/",
// else against the base name.
func globMatch(p, rel, base string) bool {
	if strings.Contains(p, "/") {
		return doublestar.MatchUnvalidated(p, rel)
	}
	return doublestar.MatchUnvalidated(p, base)
}
