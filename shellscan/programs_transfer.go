package shellscan

import "strings"

// The models of programs that copy bytes between places: dd, curl, wget, tar.

func ddReads(c *collector, args []Word) {
	for _, w := range args {
		if !w.Static {
			c.complete = false
			if rest, ok := strings.CutPrefix(w.Raw, "if="); ok {
				c.add(Word{Raw: rest}, OpRead)
			}
			continue
		}
		if strings.HasPrefix(w.Lit, "if=") {
			c.add(attached(w, 3), OpRead)
		}
	}
}

func ddWrites(c *collector, args []Word) {
	for _, w := range args {
		if !w.Static {
			c.complete = false
			if rest, ok := strings.CutPrefix(w.Raw, "of="); ok {
				c.add(Word{Raw: rest}, OpWrite)
			}
			continue
		}
		if strings.HasPrefix(w.Lit, "of=") {
			c.add(attached(w, 3), OpWrite)
		} else if !strings.Contains(w.Lit, "=") && w.Lit != "--help" && w.Lit != "--version" {
			c.complete = false
		}
	}
}

// curl's options (curl 8): the short letters that take a value, the options whose value is a
// file curl writes, and those that write files the text does not name.
var (
	curlSpec = spec("0123456#:aBfgGiIjJkLlMnNOpqRsSvVZ", "AbcCdDeEFHKmoPQrtTuUwxXyYz", "",
		"output= dump-header= cookie-jar= trace= trace-ascii= stderr= libcurl= etag-save= hsts= alt-svc= "+
			"remote-name remote-name-all remote-header-name output-dir= config= write-out= create-dirs "+
			"data= data-binary= data-raw= data-urlencode= data-ascii= form= form-string= header= user-agent= "+
			"cookie= referer= request= user= proxy= proxy-user= upload-file= url= max-time= connect-timeout= "+
			"retry= range= continue-at= cert= key= cacert= capath= json= variable= expand-url= etag-compare= "+
			"location silent show-error fail fail-with-body insecure verbose include head get compressed "+
			"globoff http1.1 http2 ipv4 ipv6 no-progress-meter progress-bar").withWrites(
		"o", "output", "D", "dump-header", "c", "cookie-jar", "trace", "trace-ascii", "stderr", "libcurl", "etag-save", "hsts", "alt-svc")
	curlUnplaced = []string{"remote-name", "remote-name-all", "remote-header-name", "output-dir", "config"}
	curlFileData = setOf("d", "data", "data-binary", "data-urlencode", "data-ascii", "F", "form", "json")
)

func curlWrites(c *collector, args []Word) {
	p := parseOpts(args, curlSpec)
	c.mustKnow(p)
	if p.has("O", "J", "K") || p.has(curlUnplaced...) {
		c.complete = false
	}
	for _, t := range p.tolerated {
		if abbreviates(t, curlUnplaced...) || abbreviates(t, "output", "dump-header", "cookie-jar", "trace", "trace-ascii", "stderr", "libcurl", "etag-save", "hsts", "alt-svc", "write-out") {
			c.complete = false
		}
	}
	for _, v := range p.values("w", "write-out") {
		if !v.Static || strings.Contains(v.Lit, "%output{") {
			c.complete = false
		}
	}
	c.optionFiles(p, curlSpec.writes, OpWrite)
}

func curlReads(c *collector, args []Word) {
	p := parseOpts(args, curlSpec)
	c.complete = false // curl reads certificates, netrc and config files the model does not follow
	c.addAll(p.values("T", "upload-file", "K", "config"), OpRead)
	for _, o := range p.opts {
		if !o.hasValue || !curlFileData[o.name] {
			continue
		}
		v := o.value
		if !v.Static {
			continue
		}
		if i := strings.IndexAny(v.Lit, "@<"); i >= 0 && (i == 0 || o.name == "F" || o.name == "form" || o.name == "data-urlencode") {
			c.addPath(strings.SplitN(v.Lit[i+1:], ";", 2)[0], OpRead)
		}
	}
}

// wget's options: -n takes one more letter (-nv, -nc, -nd, -nH, -np), which wgetArgs folds away.
var (
	wgetSpec = spec("VhbdqvcNSrmpkKEHLFx46n", "OoaeiBtTwQUlADRIXP", "",
		"output-document= output-file= append-output= execute= input-file= directory-prefix= recursive "+
			"mirror page-requisites force-directories timestamping spider quiet no-verbose verbose "+
			"continue tries= timeout= user-agent= header= post-data= post-file= body-file= user= "+
			"password= no-check-certificate level= accept= reject= no-clobber no-directories "+
			"no-parent server-response content-disposition trust-server-names").withWrites(
		"o", "output-file", "a", "append-output")
	wgetUnplaced = []string{"execute", "input-file", "directory-prefix", "recursive", "mirror",
		"page-requisites", "force-directories", "timestamping", "content-disposition", "trust-server-names"}
)

func wgetArgs(args []Word) []Word {
	out := make([]Word, 0, len(args))
	for _, w := range args {
		if w.Static && len(w.Lit) == 3 && w.Lit[0] == '-' && w.Lit[1] == 'n' {
			out = append(out, literalWord("-n")) // -nv and friends: one switch
			continue
		}
		out = append(out, w)
	}
	return out
}

func wgetWrites(c *collector, args []Word) {
	p := parseOpts(wgetArgs(args), wgetSpec)
	c.mustKnow(p)
	if p.has("e", "i", "P", "r", "m", "p", "x", "N") || p.has(wgetUnplaced...) {
		c.complete = false
	}
	for _, t := range p.tolerated {
		if abbreviates(t, wgetUnplaced...) || abbreviates(t, "output-document", "output-file", "append-output") {
			c.complete = false
		}
	}
	c.optionFiles(p, wgetSpec.writes, OpWrite)
	docs := p.values("O", "output-document")
	for _, d := range docs {
		if !(d.Static && d.Lit == "-") {
			c.add(d, OpWrite)
		}
	}
	if len(docs) == 0 && !p.has("spider") {
		c.complete = false // the file is named after the URL
	}
}

func wgetReads(c *collector, args []Word) {
	p := parseOpts(wgetArgs(args), wgetSpec)
	c.complete = false // wget reads .wgetrc and certificate files the model does not follow
	c.addAll(p.values("i", "input-file", "post-file", "body-file"), OpRead)
}

// tar's command line: the old form's first word is a bundle of letters without a dash.
var tarSpec = spec("AcdrtuxvzjJZaBhikmMOpPsSUWwlno", "fCbgHKLNTVXFI", "",
	"create append update catenate concatenate extract get list diff compare delete file= directory= "+
		"gzip bzip2 xz zstd lzma lzip auto-compress verbose listed-incremental= files-from= exclude-from= "+
		"exclude= use-compress-program= to-command= info-script= new-volume-script= checkpoint-action= "+
		"rsh-command= strip-components= no-same-owner no-same-permissions keep-old-files skip-old-files "+
		"overwrite transform= xform= wildcards anchored null absolute-names dereference one-file-system "+
		"preserve-permissions same-permissions numeric-owner owner= group= mode= mtime= sort= format=").withReads(
	"T", "files-from", "X", "exclude-from").withFollows("h", "dereference").withNameLists("T", "files-from")

func tarArgs(args []Word) []Word {
	if len(args) == 0 || !args[0].Static || strings.HasPrefix(args[0].Lit, "-") || args[0].Lit == "" {
		return args
	}
	// "tar xzf a.tar" is "tar -x -z -f a.tar": each value letter takes the next word in turn.
	out := []Word{}
	rest := args[1:]
	for _, l := range args[0].Lit {
		out = append(out, literalWord("-"+string(l)))
		if strings.ContainsRune(tarSpec.vals, l) && len(rest) > 0 {
			out = append(out, rest[0])
			rest = rest[1:]
		}
	}
	return append(out, rest...)
}

type tarCall struct {
	p       parsedArgs
	mode    string // "x", "c", "t", "" …
	archive []Word
}

func readTar(args []Word) tarCall {
	p := parseOpts(tarArgs(args), tarSpec)
	call := tarCall{p: p, archive: p.values("f", "file")}
	for _, m := range []struct{ mode, short, long string }{
		{"x", "x", "extract"}, {"x", "x", "get"}, {"c", "c", "create"}, {"c", "r", "append"},
		{"c", "u", "update"}, {"c", "A", "catenate"}, {"c", "A", "concatenate"}, {"c", "", "delete"},
		{"t", "t", "list"}, {"t", "d", "diff"}, {"t", "d", "compare"},
	} {
		if p.has(m.long) || m.short != "" && p.has(m.short) {
			call.mode = m.mode
		}
	}
	return call
}

func tarWrites(c *collector, args []Word) {
	call := readTar(args)
	c.mustKnow(call.p)
	if call.p.has("I", "use-compress-program", "to-command", "F", "info-script", "new-volume-script",
		"checkpoint-action", "rsh-command") {
		c.complete = false // runs other programs
	}
	c.addAll(call.p.values("g", "listed-incremental"), OpWrite)
	switch call.mode {
	case "x":
		dirs := call.p.values("C", "directory")
		if len(dirs) == 0 {
			dirs = []Word{literalWord(".")}
		}
		for _, d := range dirs {
			c.add(d, OpWrite)
		}
		c.complete = false // the archive decides what is written
	case "c":
		if len(call.archive) == 0 {
			c.complete = false
		}
		c.addAll(call.archive, OpWrite)
	case "t":
	default:
		c.complete = false
	}
}

func tarReads(c *collector, args []Word) {
	call := readTar(args)
	c.mustKnow(call.p)
	if call.mode == "c" {
		// Only when tar makes an archive are -T names and -h links files it reads; when it
		// lists or extracts, they name members of the archive.
		c.indirect(call.p, tarSpec, OpRead)
	}
	c.optionFiles(call.p, tarSpec.reads, OpRead)
	switch call.mode {
	case "x", "t":
		c.addAll(call.archive, OpRead)
	case "c":
		if call.p.has("C", "directory") {
			c.complete = false // later operands are relative to another directory
		}
		c.addAll(call.p.operands, OpRead)
	default:
		c.complete = false
	}
}
