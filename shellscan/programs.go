package shellscan

import (
	"path"
	"strings"
	"sync"
)

// Option specs of the modeled programs (GNU coreutils, findutils, grep, sed, ripgrep, curl,
// wget, tar), in the words of their manuals.
var (
	catSpec  = spec("AbeEnstTuv", "", "", "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting")
	headSpec = spec("qvz", "cn", "", "bytes= lines= quiet silent verbose zero-terminated").numericOpt()
	tailSpec = spec("fFqvz", "cns", "", "bytes= follow? lines= max-unchanged-stats= pid= quiet retry silent sleep-interval= verbose zero-terminated").numericOpt()
	wcSpec   = spec("cmlLw", "", "", "bytes chars lines max-line-length words files0-from= total= zero-terminated").withReads("files0-from").withNameLists("files0-from")
	grepSpec = spec("EFGPyiIvwxcLloqsbHhnTZzaUrRV", "efmABCdD", "", "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case no-ignore-case word-regexp line-regexp null-data no-messages invert-match max-count= byte-offset line-number no-line-number line-buffered with-filename no-filename label= only-matching quiet silent binary-files= text directories= devices= recursive dereference-recursive include= exclude= exclude-from= exclude-dir= files-without-match files-with-matches count initial-tab null after-context= before-context= context= color? colour? group-separator= no-group-separator").numericOpt().withReads("f", "file", "exclude-from").withFollows("R", "dereference-recursive")
	rgSpec   = spec("0.abcFHIiLlnNopPqsSuUvVwxz", "ABCEMTdefgjmrt", "", "after-context= before-context= context= color= colors= context-separator= dfa-size-limit= encoding= engine= field-context-separator= field-match-separator= file= glob= iglob= ignore-file= max-columns= max-count= max-depth= max-filesize= path-separator= pre= pre-glob= regex-size-limit= regexp= replace= sort= sortr= threads= type= type-add= type-clear= type-not= hostname-bin= hyperlink-format= generate= files type-list follow no-follow").withReads("f", "file", "ignore-file").withFollows("L", "follow")
	statSpec = spec("LfFt", "c", "", "dereference file-system format= printf= terse cached=").withFollows("L", "dereference")
	fileSpec = spec("bcCdEhiIkLlNnprsSvz0", "eFfmP", "", "brief checking-printout compile debug exclude= exclude-quiet= extension files-from= separator= mime mime-type mime-encoding keep-going list magic-file= no-dereference dereference no-pad no-sandbox print0 parameter= preserve-date raw special-files uncompress uncompress-noreport apple").withReads("f", "files-from", "m", "magic-file").withFollows("L", "dereference").withNameLists("f", "files-from")
	duSpec   = spec("0abcDhHklLmPsSxv", "BdtX", "", "null all apparent-size block-size= bytes total dereference-args human-readable inodes dereference count-links max-depth= no-dereference separate-dirs si summarize threshold= time? time-style= exclude-from= exclude= one-file-system files0-from=").withReads("X", "exclude-from", "files0-from").withFollows("L", "dereference", "D", "H", "dereference-args").withNameLists("files0-from")
	dfSpec   = spec("ahHiklPTv", "Btx", "", "all block-size= human-readable si inodes local no-sync output? portability print-type sync total type= exclude-type=")
	diffSpec = spec("abBcdeEfhilnNpqrsTtuvwyZ", "CUFIxXSWLD", "", "normal brief report-identical-files context? unified? ed rcs side-by-side width= left-column suppress-common-lines show-c-function show-function-line= label= expand-tabs initial-tab tabsize= suppress-blank-empty paginate ignore-case ignore-file-name-case no-ignore-file-name-case ignore-tab-expansion ignore-trailing-space ignore-space-change ignore-all-space ignore-blank-lines ignore-matching-lines= text strip-trailing-cr new-file unidirectional-new-file recursive no-dereference exclude= exclude-from= starting-file= from-file= to-file= line-format= old-line-format= new-line-format= unchanged-line-format= old-group-format= new-group-format= unchanged-group-format= changed-group-format= minimal horizon-lines= speed-large-files color? palette= ifdef=").numericOpt().withReads("X", "exclude-from", "from-file", "to-file")
	sortSpec = spec("bcCdfghiMmnrRsuVz", "kotST", "", "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort random-source= reverse sort= version-sort batch-size= check? compress-program= debug files0-from= key= merge output= stable buffer-size= field-separator= temporary-directory= parallel= unique zero-terminated").withReads("files0-from", "random-source").withWrites("o", "output", "T", "temporary-directory").withNameLists("files0-from")
	cutSpec  = spec("nsz", "bcdf", "", "bytes= characters= delimiter= fields= complement only-delimited output-delimiter= zero-terminated")
	treeSpec = spec("adlfxpsugDFqNQrtvcUSnCXJAhiR", "LPIoHT", "", "noreport charset= filelimit= timefmt= sort= dirsfirst filesfirst si du prune info gitignore gitfile= infofile= fromfile fromtabfile noindent inodes device nolinks hyperlink scheme= authority= ignore-case matchdirs metafirst opt-toggle output=").withReads("gitfile", "infofile").withWrites("o", "output").withFollows("l")
	lsSpec   = spec("aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1", "ITw", "", "all almost-all author escape block-size= ignore-backups color? directory dired classify? file-type format= full-time group-directories-first no-group human-readable si dereference-command-line dereference-command-line-symlink-to-dir hide= hyperlink? indicator-style= inode ignore= kibibytes dereference numeric-uid-gid literal hide-control-chars show-control-chars quote-name quoting-style= reverse recursive size sort= time= time-style= tabsize= width= context zero").withFollows(
		"L", "dereference", "H", "dereference-command-line", "dereference-command-line-symlink-to-dir")
	realSpec  = spec("eLmPqsz", "", "", "canonicalize-existing canonicalize-missing logical physical quiet relative-to= relative-base= strip no-symlinks zero")
	rlinkSpec = spec("efmnqsvz", "", "", "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero")

	rmSpec       = spec("dfiIrRv", "", "", "force interactive? one-file-system no-preserve-root preserve-root? recursive dir verbose").strictOpts()
	rmdirSpec    = spec("pv", "", "", "ignore-fail-on-non-empty parents verbose").strictOpts()
	unlinkSpec   = spec("", "", "", "").strictOpts()
	mkdirSpec    = spec("pvZ", "m", "", "mode= parents verbose context?").strictOpts()
	touchSpec    = spec("acfhm", "drt", "", "date= reference= time= no-create no-dereference").strictOpts().withReads("r", "reference")
	cpSpec       = spec("abdfiHlLnPpRrsTuvxZ", "St", "", "archive attributes-only backup? copy-contents debug dereference force interactive link no-clobber no-dereference preserve? no-preserve= parents recursive reflink? remove-destination sparse= strip-trailing-slashes symbolic-link suffix= target-directory= no-target-directory update? verbose one-file-system context? keep-directory-symlink").strictOpts().withFollows("L", "H", "dereference")
	mvSpec       = spec("bfinTuvZ", "St", "", "backup? force interactive no-clobber strip-trailing-slashes suffix= target-directory= no-target-directory update? verbose context exchange no-copy debug").strictOpts()
	lnSpec       = spec("bdFfiLnPrsTv", "St", "", "backup? directory force interactive logical no-dereference physical relative symbolic suffix= target-directory= no-target-directory verbose").strictOpts()
	installSpec  = spec("bcCdDpsTvZ", "gmoSt", "", "backup? compare directory group= mode= owner= preserve-timestamps strip strip-program= suffix= target-directory= no-target-directory verbose preserve-context context? debug").strictOpts()
	truncateSpec = spec("co", "rs", "", "no-create io-blocks reference= size=").strictOpts().withReads("r", "reference")
	chownSpec    = spec("cfhvRHLP", "", "", "changes dereference no-dereference from= no-preserve-root preserve-root quiet silent reference= recursive verbose").strictOpts().withReads("reference").withFollows("L", "H")
	shredSpec    = spec("fuvxz", "ns", "", "force iterations= random-source= size= remove? verbose exact zero").strictOpts()
	mkfifoSpec   = spec("Z", "m", "", "mode= context?").strictOpts()
)

// readModels collect the reads of one program from its arguments.
var readModels map[string]func(c *collector, args []Word)

// writeModels collect the writes of one program from its arguments.
var writeModels map[string]func(c *collector, args []Word)

// modelsOnce builds readModels and writeModels on first use (the tables refer to
// functions that consult them, so they cannot be initialised in their declarations).
var modelsOnce sync.Once

func initModels() {
	readModels = map[string]func(c *collector, args []Word){
		"cat":      operandReader(catSpec, false),
		"head":     operandReader(headSpec, false),
		"tail":     operandReader(tailSpec, false),
		"wc":       operandReader(wcSpec, false),
		"stat":     operandReader(statSpec, false),
		"file":     operandReader(fileSpec, false),
		"du":       operandReader(duSpec, true),
		"df":       operandReader(dfSpec, false),
		"diff":     diffReads,
		"sort":     operandReader(sortSpec, false),
		"cut":      operandReader(cutSpec, false),
		"tree":     operandReader(treeSpec, true),
		"ls":       operandReader(lsSpec, true),
		"realpath": operandReader(realSpec, false),
		"readlink": operandReader(rlinkSpec, false),
		"grep":     grepReads,
		"rg":       rgReads,
		"rsync":    rsyncReads,
		"jq":       jqReads,
		"find":     findReads,
		"git":      gitReads,
		"sed":      sedReads,
		"uniq":     uniqReads,
		"date":     optionReader(dateSpec, "f", "file", "r", "reference"),
		"touch":    optionReader(touchSpec, "r", "reference"),
		"truncate": optionReader(truncateSpec, "r", "reference"),
		"chmod":    chmodReads,
		"chown":    optionReader(chownSpec, "reference"),
		"chgrp":    optionReader(chownSpec, "reference"),
		"cp":       sourceReads(cpSpec),
		"mv":       sourceReads(mvSpec),
		"install":  sourceReads(installSpec),
		"ln":       optionReader(lnSpec),
		"tee":      optionReader(teeSpec),
		"shred":    optionReader(shredSpec),
		"dd":       ddReads,
		"tar":      tarReads,
		"curl":     curlReads,
		"wget":     wgetReads,
	}
	writeModels = map[string]func(c *collector, args []Word){
		"rm":       operandWriter(rmSpec, OpRemove),
		"rmdir":    operandWriter(rmdirSpec, OpRemove),
		"unlink":   operandWriter(unlinkSpec, OpRemove),
		"mkdir":    operandWriter(mkdirSpec, OpCreate),
		"touch":    operandWriter(touchSpec, OpCreate),
		"mkfifo":   operandWriter(mkfifoSpec, OpCreate),
		"mknod":    mknodWrites,
		"truncate": operandWriter(truncateSpec, OpWrite),
		"tee":      operandWriter(teeSpec, OpWrite),
		"shred":    shredWrites,
		"cp":       copyWriter(cpSpec, ""),
		"mv":       copyWriter(mvSpec, OpRemove),
		"ln":       copyWriter(lnSpec, ""),
		"install":  installWrites,
		"chmod":    chmodWrites,
		"chown":    ownerWriter(chownSpec),
		"chgrp":    ownerWriter(chownSpec),
		"sed":      sedWrites,
		"sort":     sortWrites,
		"uniq":     uniqWrites,
		"tree":     treeWrites,
		"find":     findWrites,
		"git":      gitWrites,
		"rg":       rgWrites,
		"file":     fileWrites,
		"date":     dateWrites,
		"dd":       ddWrites,
		"curl":     curlWrites,
		"wget":     wgetWrites,
		"tar":      tarWrites,
	}
}

// operandReader reads every operand (and the spec's file-valued options); dot adds the current
// directory when there is no operand.
func operandReader(sp *optSpec, dot bool) func(*collector, []Word) {
	return func(c *collector, args []Word) {
		p := parseOpts(args, sp)
		c.mustKnow(p)
		c.indirect(p, sp, OpRead)
		c.optionFiles(p, sp.reads, OpRead)
		c.addAll(p.operands, OpRead)
		if dot && len(p.operands) == 0 {
			c.addPath(".", OpRead)
		}
	}
}

// optionReader reads only the values of the named options.
func optionReader(sp *optSpec, names ...string) func(*collector, []Word) {
	return func(c *collector, args []Word) {
		p := parseOpts(args, sp)
		c.mustKnow(p)
		c.addAll(p.values(names...), OpRead)
	}
}

func (c *collector) optionFiles(p parsedArgs, names map[string]bool, op string) {
	for _, o := range p.opts {
		if o.hasValue && names[o.name] {
			if o.value.Static && o.value.Lit == "-" {
				continue
			}
			c.add(o.value, op)
		}
	}
}

// operandWriter applies op to every operand.
func operandWriter(sp *optSpec, op string) func(*collector, []Word) {
	return func(c *collector, args []Word) {
		p := parseOpts(args, sp)
		c.mustKnow(p)
		for _, w := range p.operands {
			c.add(w, op)
		}
	}
}

func mknodWrites(c *collector, args []Word) {
	p := parseOpts(args, mkfifoSpec)
	c.mustKnow(p)
	if len(p.operands) > 0 {
		c.add(p.operands[0], OpCreate)
	}
}

func shredWrites(c *collector, args []Word) {
	p := parseOpts(args, shredSpec)
	c.mustKnow(p)
	op := OpWrite
	if p.has("u", "remove") {
		op = OpRemove
	}
	for _, w := range p.operands {
		c.add(w, op)
	}
}

// destination splits cp/mv/ln/install operands into sources and destinations.
func destination(p parsedArgs) (sources, dests []Word) {
	if dirs := p.values("t", "target-directory"); len(dirs) > 0 {
		return p.operands, dirs
	}
	if len(p.operands) < 2 {
		return p.operands, nil
	}
	n := len(p.operands)
	return p.operands[:n-1], p.operands[n-1:]
}

// copyWriter models cp, mv and ln: the destination is written; sourceOp, when set, applies to
// the sources (mv removes them).
func copyWriter(sp *optSpec, sourceOp string) func(*collector, []Word) {
	return func(c *collector, args []Word) {
		p := parseOpts(args, sp)
		c.mustKnow(p)
		sources, dests := destination(p)
		if sp == lnSpec && len(dests) == 0 && len(sources) == 1 {
			// ln TARGET makes a link named after TARGET in the current directory.
			src := sources[0]
			if !src.Static {
				c.add(src, OpWrite)
				return
			}
			c.addPath(path.Base(src.Lit), OpWrite)
			return
		}
		for _, d := range dests {
			c.add(d, OpWrite)
		}
		if sourceOp != "" && len(dests) > 0 {
			for _, s := range sources {
				c.add(s, sourceOp)
			}
		}
	}
}

func sourceReads(sp *optSpec) func(*collector, []Word) {
	return func(c *collector, args []Word) {
		p := parseOpts(args, sp)
		c.mustKnow(p)
		if sp == installSpec && p.has("d", "directory") {
			return
		}
		c.indirect(p, sp, OpRead)
		sources, dests := destination(p)
		if len(dests) > 0 {
			c.addAll(sources, OpRead)
		}
	}
}

func installWrites(c *collector, args []Word) {
	p := parseOpts(args, installSpec)
	c.mustKnow(p)
	if p.has("d", "directory") {
		for _, w := range p.operands {
			c.add(w, OpCreate)
		}
		return
	}
	_, dests := destination(p)
	for _, d := range dests {
		c.add(d, OpWrite)
	}
}

// chmodArgs reads chmod's arguments: GNU chmod takes a word such as -w or -rwx for a mode, not
// for options.
func chmodArgs(args []Word) (operands []Word, reference []Word, follow string, known bool) {
	known = true
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			if !w.OptionSafe {
				known = false
			}
			operands = append(operands, w)
			continue
		}
		lit := w.Lit
		switch {
		case lit == "--":
			return append(operands, args[i+1:]...), reference, follow, known
		case strings.HasPrefix(lit, "--"):
			name, val, hasEq := strings.Cut(lit[2:], "=")
			switch {
			case abbreviates(name, "reference") && len(name) >= 3:
				if hasEq {
					reference = append(reference, attached(w, len(lit)-len(val)))
				} else if i+1 < len(args) {
					i++
					reference = append(reference, args[i])
				}
			case name == "changes" || name == "silent" || name == "quiet" || name == "verbose" ||
				name == "recursive" || name == "preserve-root" || name == "no-preserve-root" ||
				name == "dereference" || name == "no-dereference" || name == "help" || name == "version":
			default:
				known = false
			}
		case len(lit) > 1 && lit[0] == '-':
			switch {
			case strings.Trim(lit[1:], "cfvRHLP") == "":
				// -L and -H (coreutils 9.5 and later) make -R follow the links it meets.
				if j := strings.IndexAny(lit, "LH"); j > 0 && follow == "" {
					follow = lit[j : j+1]
				}
			case strings.Trim(lit[1:], "rwxXstugoa=+-,01234567") == "":
				operands = append(operands, w)
			default:
				known = false
			}
		default:
			operands = append(operands, w)
		}
	}
	return operands, reference, follow, known
}

func chmodWrites(c *collector, args []Word) {
	operands, ref, follow, known := chmodArgs(args)
	if !known {
		c.complete = false
	}
	if follow != "" {
		c.unknown(OpWrite, followSentence("chmod", follow, OpWrite))
	}
	if len(ref) == 0 && len(operands) > 0 {
		operands = operands[1:] // the mode
	}
	for _, w := range operands {
		c.add(w, OpWrite)
	}
}

func chmodReads(c *collector, args []Word) {
	_, ref, _, known := chmodArgs(args)
	if !known {
		c.complete = false
	}
	c.addAll(ref, OpRead)
}

func ownerWriter(sp *optSpec) func(*collector, []Word) {
	return func(c *collector, args []Word) {
		p := parseOpts(args, sp)
		c.mustKnow(p)
		c.indirect(p, sp, OpWrite) // -R with -L or -H changes what the links it meets point to
		operands := p.operands
		if !p.has("reference") && len(operands) > 0 {
			operands = operands[1:] // the owner or group
		}
		for _, w := range operands {
			c.add(w, OpWrite)
		}
	}
}

// sedWrites models sed's writes. A script that runs commands (the e command, the e flag of
// s) can write anything, and so can a script the text does not hold (-f FILE, an expanded
// word): both are writes of unknown places, which no placement can clear.
func sedWrites(c *collector, args []Word) {
	call := readSed(args)
	if !call.complete {
		c.complete = false
	}
	switch {
	case call.script.exec:
		c.unknown(OpWrite, "the sed script runs shell commands (the e command or the e flag of s), which can touch any file")
	case !call.scriptKnown:
		c.unknown(OpWrite, "the sed script is not in the command text (-f FILE or an expanded word), and a sed script can run commands and write files")
	}
	for _, f := range call.script.writes {
		if !harmlessDevices[f] {
			c.addPath(f, OpWrite)
		}
	}
	if !call.inPlace {
		return
	}
	for _, w := range call.files {
		c.add(w, OpWrite)
		if call.suffix == "" || !w.Static {
			continue
		}
		// The backup: SUFFIX appended to the file name, or SUFFIX with each * replaced by the
		// file's base name; a suffix holding a / places it elsewhere.
		if !strings.Contains(call.suffix, "*") {
			c.addPath(w.Lit+call.suffix, OpWrite)
			continue
		}
		name := strings.ReplaceAll(call.suffix, "*", path.Base(w.Lit))
		if strings.Contains(name, "/") {
			c.add(Word{Raw: name}, OpWrite) // relative to what GNU sed decides: not placeable
			continue
		}
		c.addPath(path.Join(path.Dir(w.Lit), name), OpWrite)
	}
}

func sedReads(c *collector, args []Word) {
	call := readSed(args)
	if !call.complete {
		c.complete = false
	}
	p := parseOpts(args, sedSpec)
	c.addAll(p.values("f", "file"), OpRead)
	for _, f := range call.script.reads {
		if !harmlessDevices[f] {
			c.addPath(f, OpRead)
		}
	}
	c.addAll(call.files, OpRead)
}

func sortWrites(c *collector, args []Word) {
	p := parseOpts(args, sortSpec)
	c.mustKnow(p)
	if p.has("compress-program") {
		c.complete = false
	}
	c.optionFiles(p, sortSpec.writes, OpWrite)
}

func uniqOperands(c *collector, args []Word) []Word {
	p := parseOpts(args, uniqSpec)
	c.mustKnow(p)
	for _, w := range p.operands {
		if !w.Static {
			c.complete = false // a glob or a split word can become two operands
		}
	}
	return p.operands
}

func uniqWrites(c *collector, args []Word) {
	if ops := uniqOperands(c, args); len(ops) > 1 && !(ops[1].Static && ops[1].Lit == "-") {
		c.add(ops[1], OpWrite)
	}
}

func uniqReads(c *collector, args []Word) {
	if ops := uniqOperands(c, args); len(ops) > 0 {
		c.addAll(ops[:1], OpRead)
	}
}

func treeWrites(c *collector, args []Word) {
	p := parseOpts(args, treeSpec)
	c.mustKnow(p)
	if p.has("R") {
		c.complete = false // -R writes 00Tree.html into every directory
	}
	c.optionFiles(p, treeSpec.writes, OpWrite)
}

func rgWrites(c *collector, args []Word) {
	p := parseOpts(args, rgSpec)
	c.mustKnow(p)
	if _, _, bad := findDangerous(args, "", "pre", "hostname-bin"); bad {
		c.complete = false // runs other programs
	}
}

func fileWrites(c *collector, args []Word) {
	if _, _, bad := findDangerous(args, "Cp", "compile", "preserve-date"); bad {
		c.complete = false // writes a compiled magic file, or access times
	}
	if _, risky := firstRisky(args); risky {
		c.complete = false
	}
}

func dateWrites(c *collector, args []Word) {
	if dateReadOnly(args, nil) != "" {
		c.complete = false // sets the clock, or an argument the model does not know
	}
}
