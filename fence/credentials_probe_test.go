package fence

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
)

// referencePlaces is the credential set as built before directory listings answered for
// the stores: an Lstat of each, and a walk of each that exists. buildCredentials must
// give the same places for every layout of a home directory.
func referencePlaces(ctx context.Context, cfg *Config) []string {
	var places []string
	home := absClean(cfg.Home)
	var canonHome string
	if home != "" {
		if c, _, err := Canonicalize(ctx, cfg.Env, home); err == nil {
			canonHome = c
		}
	}
	for _, p := range CredentialPaths(home, cfg.RuntimeDir, cfg.Hidden) {
		places = appendNew(places, p)
		q := p
		if canonHome != "" && canonHome != home && within(home, p) {
			q = canonHome + p[len(home):]
			places = appendNew(places, q)
		}
		if _, err := cfg.Env.Lstat(ctx, q); err != nil {
			continue
		}
		if c, _, err := Canonicalize(ctx, cfg.Env, q); err == nil && c != q {
			places = appendNew(places, c)
		}
	}
	return places
}

// layoutOps are the pieces a layout is built of: each makes one path of a home directory
// (or of a directory beside it) a directory, a file, a link to a directory outside, a link
// to another store, a dangling link, or a name differing only in case.
var layoutPaths = []string{
	".ssh", ".config", ".config/gh", ".config/gcloud", ".local", ".local/share", ".local/share/keyrings",
	".cargo", ".cargo/credentials", ".aws", ".kube", ".docker", ".docker/config.json", ".netrc",
	".SSH", ".Config", "vault", "proj",
}

// buildLayout makes the layout the bytes of spec describe beneath home (two bytes a
// piece: which path, and what it becomes), with outside a directory a link may point into.
func buildLayout(t testing.TB, home, outside string, spec []byte) {
	for i := 0; i+1 < len(spec); i += 2 {
		p := filepath.Join(home, layoutPaths[int(spec[i])%len(layoutPaths)])
		os.MkdirAll(filepath.Dir(p), 0o755) // may fail where a file or link is in the way
		switch spec[i+1] % 6 {
		case 0:
			os.MkdirAll(p, 0o755)
		case 1:
			os.WriteFile(p, []byte("k"), 0o600)
		case 2:
			os.Symlink(outside, p)
		case 3:
			os.Symlink(filepath.Join(home, ".ssh"), p)
		case 4:
			os.Symlink(filepath.Join(outside, "gone"), p)
		case 5:
			os.Symlink("../"+filepath.Base(outside), p) // relative
		}
	}
}

func checkSamePlaces(t testing.TB, e env.ExecutionEnv, home string, hidden []string) {
	t.Helper()
	ctx := context.Background()
	cfg := Config{Env: e, Home: home, RuntimeDir: filepath.Join(filepath.Dir(home), "run"), Hidden: hidden}
	want := referencePlaces(ctx, &cfg)
	got := buildCredentials(ctx, &cfg, false).places
	if !slices.Equal(got, want) {
		for _, p := range want {
			if !slices.Contains(got, p) {
				t.Errorf("missing %s", p)
			}
		}
		for _, p := range got {
			if !slices.Contains(want, p) {
				t.Errorf("extra %s", p)
			}
		}
		t.Fatalf("the listings' credential places differ from an Lstat and walk of each store (%d vs %d places)", len(got), len(want))
	}
}

func TestCredentialListingsMatchLstat(t *testing.T) {
	cases := map[string][]byte{
		"empty home":                     nil,
		"plain stores":                   {0, 0, 1, 0, 2, 0, 13, 1, 8, 0, 9, 1},
		"store behind a link":            {0, 2, 11, 5},
		"directory of stores is a link":  {1, 2},
		"nested directory is a link":     {4, 0, 5, 2},
		"file where a directory goes":    {1, 1, 8, 1},
		"dangling links":                 {0, 4, 12, 4},
		"link to another store":          {10, 3, 0, 0},
		"names differing only in case":   {14, 2, 15, 0},
		"hidden extras behind links":     {16, 2, 17, 0},
		"everything":                     {0, 2, 1, 0, 2, 2, 4, 0, 5, 0, 6, 2, 7, 0, 8, 1, 9, 3, 10, 5, 11, 0, 12, 1, 13, 4, 14, 0},
		"home's directories are links":   {1, 5, 4, 2, 7, 3},
		"a store beneath a file":         {7, 1, 8, 0},
		"a link in place of each parent": {1, 3, 4, 3, 7, 3, 11, 3},
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			home, outside := filepath.Join(base, "home"), filepath.Join(base, "outside")
			os.MkdirAll(home, 0o755)
			os.MkdirAll(filepath.Join(outside, "gh"), 0o755)
			buildLayout(t, home, outside, spec)
			checkSamePlaces(t, env.NewHost(), home, []string{"~/vault", "proj/secrets", filepath.Join(outside, "x")})
			// The home directory spelled through a link: stores are listed in its target.
			link := filepath.Join(base, "homelink")
			if err := os.Symlink(home, link); err != nil {
				t.Fatal(err)
			}
			checkSamePlaces(t, env.NewHost(), link, []string{"~/vault"})
		})
	}
}

// TestCredentialListingsAtTheRoot runs the listings with the file system's root as the
// home directory (a service account's HOME=/), in memory.
func TestCredentialListingsAtTheRoot(t *testing.T) {
	m := envtest.NewMem()
	for _, d := range []string{"/data/keys", "/.config", "/real"} {
		if err := m.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Symlink("/data/keys", "/.ssh"); err != nil {
		t.Fatal(err)
	}
	if err := m.Symlink("/real", "/.config/gh"); err != nil {
		t.Fatal(err)
	}
	checkSamePlaces(t, m, "/", nil)
	f, err := New(context.Background(), Config{Env: m, Root: "/real", Home: "/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/data/keys", "/real"} {
		if !slices.Contains(f.CredentialPlaces(), want) {
			t.Errorf("the target of a linked store, %s, is not among the places: %v", want, f.CredentialPlaces())
		}
	}
}

// FuzzCredentialListings builds a home directory from the input and holds the listings'
// answer equal to an Lstat and walk of every store.
func FuzzCredentialListings(f *testing.F) {
	f.Add([]byte{0, 2, 1, 0, 4, 0, 5, 2})
	f.Add([]byte{1, 3, 14, 2, 9, 5})
	f.Add([]byte{7, 1, 8, 0, 12, 4})
	f.Fuzz(func(t *testing.T, spec []byte) {
		if len(spec) > 64 {
			return
		}
		base, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		home, outside := filepath.Join(base, "home"), filepath.Join(base, "outside")
		os.MkdirAll(home, 0o755)
		os.MkdirAll(outside, 0o755)
		buildLayout(t, home, outside, spec)
		checkSamePlaces(t, env.NewHost(), home, []string{"~/vault"})
	})
}

// casefoldEnv is foldEnv as Linux's casefold attribute makes a directory: names found in
// any case on a file system that says it does not fold case.
type casefoldEnv struct{ foldEnv }

func (casefoldEnv) CaseInsensitive() bool { return false }

// TestCredentialListingsInAFoldingDirectory: a store listed in another case than its
// spelling is asked of the file system, which finds it — and follows its link. Another
// case is any spelling strings.EqualFold matches, as a folding file system's: .SSH, and
// .ſsh, whose long s folds with s (calibrated: compared in lower case, .ſsh was taken
// for a name that is not .ssh, and the store went unprotected).
func TestCredentialListingsInAFoldingDirectory(t *testing.T) {
	for _, spelled := range []string{".SSH", ".\u017fsh", ".\u017fSh"} {
		t.Run(spelled, func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			home, keys := filepath.Join(base, "home"), filepath.Join(base, "keys")
			for _, d := range []string{home, keys} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(keys, filepath.Join(home, spelled)); err != nil {
				t.Fatal(err)
			}
			e := casefoldEnv{foldEnv{env.NewHost()}}
			checkSamePlaces(t, e, home, nil)
			cfg := Config{Env: e, Home: home}
			if places := buildCredentials(context.Background(), &cfg, false).places; !slices.Contains(places, keys) {
				t.Errorf("the target of .ssh, listed as %s, is not among the places: %v", spelled, places)
			}
		})
	}
}

func TestFoldKeyIsEqualFold(t *testing.T) {
	names := []string{".ssh", ".SSH", ".\u017fsh", "\u212a", "k", "K", "\u00df", "SS", "\u03c3", "\u03c2", "\u03a3", ".aws", ".AWS", "x"}
	for _, a := range names {
		for _, b := range names {
			if got, want := foldKey(a) == foldKey(b), strings.EqualFold(a, b); got != want {
				t.Errorf("foldKey(%q) == foldKey(%q) is %v; strings.EqualFold says %v", a, b, got, want)
			}
		}
	}
}

// countingEnv counts the Lstat calls made through it.
type countingEnv struct {
	env.ExecutionEnv
	lstats int
}

func (e *countingEnv) Lstat(ctx context.Context, p string) (env.FileInfo, error) {
	e.lstats++
	return e.ExecutionEnv.Lstat(ctx, p)
}

// TestCredentialListingsSpareTheLstats: a home holding a few stores is listed, not asked
// about each of the hundred-odd stores (which took one Lstat each, and a walk of each
// one present).
func TestCredentialListingsSpareTheLstats(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	for _, d := range []string{".ssh", ".config/gh", ".local/share", "src"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := &countingEnv{ExecutionEnv: env.NewHost()}
	cfg := Config{Env: e, Home: home}
	buildCredentials(context.Background(), &cfg, false)
	// Canonicalizing the home directory is an Lstat per component of its path.
	if limit := strings.Count(home, "/") + 2; e.lstats > limit {
		t.Errorf("%d Lstat calls for %d stores (at most %d expected)", e.lstats, len(CredentialPaths(home, "", nil)), limit)
	}
}

// boundedCountingEnv is countingEnv over the host, keeping its bounded listing.
type boundedCountingEnv struct{ *countingEnv }

func (e boundedCountingEnv) ReadDirUpTo(ctx context.Context, p string, n int) ([]env.DirEntry, bool, error) {
	return e.ExecutionEnv.(*env.Host).ReadDirUpTo(ctx, p, n)
}

// TestCredentialListingsOfACrowdedHome: a home directory with more entries than there
// are stores is not listed (listing it would cost more than asking store by store), and
// its stores are found as before — a linked one followed to where it is.
func TestCredentialListingsOfACrowdedHome(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, keys := filepath.Join(base, "home"), filepath.Join(base, "keys")
	for _, d := range []string{filepath.Join(home, ".config", "gh"), keys} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		if err := os.WriteFile(filepath.Join(home, fmt.Sprintf("download-%03d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(keys, filepath.Join(home, ".ssh")); err != nil {
		t.Fatal(err)
	}
	checkSamePlaces(t, env.NewHost(), home, nil)
	e := boundedCountingEnv{&countingEnv{ExecutionEnv: env.NewHost()}}
	cfg := Config{Env: e, Home: home}
	places := buildCredentials(context.Background(), &cfg, false).places
	if !slices.Contains(places, keys) {
		t.Errorf("the target of the linked .ssh is not among the places: %v", places)
	}
	if stores := len(CredentialPaths(home, "", nil)); e.lstats < stores {
		t.Errorf("%d Lstat calls for %d stores: the crowded home was listed whole", e.lstats, stores)
	}
}
