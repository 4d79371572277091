package shellscan

import (
	"path"
	"strings"
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

func init() {
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

// diffReads models diff: GNU diff follows symbolic links unless told --no-dereference, so a
// recursive comparison can walk out of the directories it names.
func diffReads(c *collector, args []Word) {
	p := parseOpts(args, diffSpec)
	c.mustKnow(p)
	if p.has("r", "recursive") && !p.has("no-dereference") {
		c.unknown(OpRead, "`diff -r` follows symbolic links while it walks directories (unless --no-dereference is given), so it can read files outside the places the command names")
	}
	c.optionFiles(p, diffSpec.reads, OpRead)
	c.addAll(p.operands, OpRead)
}

// rsyncReads models what rsync reads only as far as its link-following and name-list options
// go: remote paths, filter rules and daemon settings are not modeled, so the reading is
// always incomplete. rsync's short options come in bundles; a letter anywhere in one counts.
func rsyncReads(c *collector, args []Word) {
	c.complete = false
	var operands []Word
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			operands = append(operands, w)
			continue
		}
		long, short, isOpt := optionWord(w)
		switch {
		case w.Lit == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case !isOpt:
			operands = append(operands, w)
		case long != "":
			switch {
			case abbreviates(long, "copy-links", "copy-dirlinks", "copy-unsafe-links") && len(long) >= 6:
				c.unknown(OpRead, followSentence("rsync", long, OpRead))
			case abbreviates(long, "files-from") && len(long) >= 3:
				c.unknown(OpRead, nameListSentence("rsync", "files-from"))
			}
		case strings.ContainsAny(short, "Lk"):
			c.unknown(OpRead, followSentence("rsync", short[strings.IndexAny(short, "Lk"):][:1], OpRead))
		}
	}
	if n := len(operands); n > 1 {
		c.addAll(operands[:n-1], OpRead)
	}
}

func grepReads(c *collector, args []Word) {
	p := parseOpts(args, grepSpec)
	c.mustKnow(p)
	c.indirect(p, grepSpec, OpRead)
	c.optionFiles(p, grepSpec.reads, OpRead)
	operands := p.operands
	if !p.has("e", "regexp", "f", "file") && len(operands) > 0 {
		operands = operands[1:] // the pattern
	}
	c.addAll(operands, OpRead)
	if len(operands) == 0 && p.has("r", "R", "recursive", "dereference-recursive") {
		c.addPath(".", OpRead)
	}
}

func rgReads(c *collector, args []Word) {
	p := parseOpts(args, rgSpec)
	c.mustKnow(p)
	c.indirect(p, rgSpec, OpRead)
	c.optionFiles(p, rgSpec.reads, OpRead)
	operands := p.operands
	if !p.has("e", "regexp", "f", "file", "files", "type-list") && len(operands) > 0 {
		operands = operands[1:] // the pattern
	}
	c.addAll(operands, OpRead)
	if len(operands) == 0 && !p.has("type-list") {
		c.addPath(".", OpRead)
	}
}

// jqLong are jq 1.7's long options that take no value or are handled below; jq matches long
// options exactly, never by abbreviation.
var jqLong = setOf("--seq", "--stream", "--stream-errors", "--slurp", "--raw-input", "--null-input",
	"--compact-output", "--tab", "--color-output", "--monochrome-output", "--ascii-output",
	"--unbuffered", "--sort-keys", "--raw-output", "--raw-output0", "--join-output", "--exit-status",
	"--binary", "--help", "--version", "--build-configuration")

// jqImports reports a filter that loads modules or data: import and include name files that
// jq finds on its library path at run time (by default ~/.jq and directories next to jq).
func jqImports(filter Word) bool {
	text := filter.Lit
	if !filter.Static {
		text = filter.Raw
	}
	return strings.Contains(text, "import") || strings.Contains(text, "include") || strings.Contains(text, "modulemeta")
}

// jqReads models jq: the first operand is the filter unless -f/--from-file names a file; the
// others are input files, except after --args/--jsonargs, where they are values. A library
// path (-L), a filter file and a filter that imports read files the command does not name.
func jqReads(c *collector, args []Word) {
	filterSeen := false
	positionalArgs := false
	filter := func(w Word) {
		filterSeen = true
		if jqImports(w) {
			c.unknown(OpRead, "the jq filter imports modules or data that jq finds on its library path, so the files it reads are not named in the command")
		}
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			if !w.OptionSafe {
				c.complete = false
			}
			if positionalArgs {
				continue
			}
			if !filterSeen {
				filter(w)
				continue
			}
			c.add(w, OpRead)
			continue
		}
		lit := w.Lit
		switch {
		case lit == "--args" || lit == "--jsonargs":
			positionalArgs = true
		case lit == "-f" || lit == "--from-file":
			if i+1 < len(args) {
				i++
				c.add(args[i], OpRead)
				filterSeen = true
				c.unknown(OpRead, "`jq "+lit+"` runs a filter from a file, which can import files jq finds at run time")
			}
		case lit == "--arg" || lit == "--argjson":
			i += 2
		case lit == "--slurpfile" || lit == "--rawfile" || lit == "--argfile":
			if i+2 < len(args) {
				c.add(args[i+2], OpRead)
			}
			i += 2
		case lit == "--indent":
			i++
		case lit == "-L" || lit == "--library-path" || strings.HasPrefix(lit, "-L"):
			if lit == "-L" || lit == "--library-path" {
				i++
			}
			c.unknown(OpRead, "`jq -L` adds a library directory whose modules the filter loads at run time, so the files it reads are not named in the command")
		case strings.HasPrefix(lit, "--"):
			if !jqLong[lit] {
				c.complete = false // an option this model does not know
			}
		case len(lit) > 1 && lit[0] == '-':
			if strings.Trim(lit[1:], "nrjasCMSecR0h") != "" {
				c.complete = false
			}
		case positionalArgs:
		case !filterSeen:
			filter(w)
		default:
			if lit != "-" {
				c.add(w, OpRead)
			}
		}
	}
}

// findArgs splits find's arguments into starting points and the expression.
func findArgs(args []Word) (starts []Word, expr []Word) {
	i := 0
	for i < len(args) && args[i].Static {
		lit := args[i].Lit
		if lit == "-H" || lit == "-L" || lit == "-P" || strings.HasPrefix(lit, "-O") {
			i++
			continue
		}
		if lit == "-D" {
			i += 2
			continue
		}
		break
	}
	for ; i < len(args); i++ {
		w := args[i]
		if w.Static && (strings.HasPrefix(w.Lit, "-") || w.Lit == "(" || w.Lit == "!" || w.Lit == ")" || w.Lit == ",") {
			break
		}
		if !w.Static && !w.OptionSafe {
			break
		}
		starts = append(starts, w)
	}
	if i > len(args) {
		i = len(args)
	}
	return starts, args[i:]
}

func findWrites(c *collector, args []Word) {
	starts, expr := findArgs(args)
	if len(starts) == 0 {
		starts = []Word{literalWord(".")}
	}
	for i := 0; i < len(expr); i++ {
		w := expr[i]
		if !w.Static {
			if !w.OptionSafe {
				c.complete = false
			}
			continue
		}
		switch w.Lit {
		case "-delete":
			for _, s := range starts {
				c.add(s, OpRemove)
			}
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if i+1 < len(expr) {
				c.add(expr[i+1], OpWrite)
			}
			i++
			if w.Lit == "-fprintf" {
				i++
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			c.complete = false // the command find runs is not modeled
		}
	}
}

func findReads(c *collector, args []Word) {
	// -L follows every link; -H those on the command line. Both come before the starting
	// points.
	for _, w := range args {
		if !w.Static || !strings.HasPrefix(w.Lit, "-") {
			break
		}
		if w.Lit == "-L" || w.Lit == "-H" {
			c.unknown(OpRead, "`find "+w.Lit+"` follows symbolic links, so it can read files outside the places the command names")
		}
	}
	starts, expr := findArgs(args)
	if len(starts) == 0 {
		c.addPath(".", OpRead)
	}
	c.addAll(starts, OpRead)
	for i := 0; i < len(expr); i++ {
		w := expr[i]
		if !w.Static {
			if !w.OptionSafe {
				c.complete = false
			}
			continue
		}
		switch w.Lit {
		case "-follow":
			c.unknown(OpRead, "`find -follow` follows symbolic links, so it can read files outside the places the command names")
		case "-files0-from":
			c.unknown(OpRead, "`find -files0-from` reads its starting points from a file, so the files it reads are not named in the command")
		}
		switch {
		case w.Lit == "-newer" || w.Lit == "-anewer" || w.Lit == "-cnewer" || w.Lit == "-samefile" ||
			w.Lit == "-files0-from" || strings.HasPrefix(w.Lit, "-newer") && len(w.Lit) == len("-newerXY"):
			if i+1 < len(expr) {
				c.add(expr[i+1], OpRead)
			}
			i++
		case w.Lit == "-exec" || w.Lit == "-execdir" || w.Lit == "-ok" || w.Lit == "-okdir":
			c.complete = false
		}
	}
}

// gitSubcommand reads git's global options and subcommand; ok is false for a global option that
// is not among the read-only ones (they move git to another repository or configuration).
func gitSubcommand(args []Word) (sub string, rest []Word, ok bool) {
	for i, w := range args {
		if !w.Static {
			return "", nil, false
		}
		if gitGlobalReadOnly[w.Lit] {
			continue
		}
		if strings.HasPrefix(w.Lit, "-") {
			return "", nil, false
		}
		return w.Lit, args[i+1:], true
	}
	return "", nil, false
}

// gitReaders are git subcommands that only read, and so run only the programs the
// repository's configuration names for reading: diff drivers, textconv, clean filters,
// fsmonitor, pagers.
var gitReaders = setOf("status", "log", "diff", "show", "branch", "rev-parse", "ls-files", "grep",
	"blame", "annotate", "cat-file", "archive", "shortlog", "describe", "ls-tree", "whatchanged",
	"show-branch", "diff-files", "diff-index", "diff-tree", "range-diff", "format-patch")

// RunsGitReader reports whether a segment runs git (through any wrapper) with a subcommand
// that reads, or with global options this package does not read past (-c, --config-env, -C,
// --git-dir, --exec-path, …: they set configuration or choose another repository, whose
// configuration can name programs); unread reports the latter.
func RunsGitReader(seg Segment) (reads, unread bool) {
	inner, _, ok := seg.Unwrap()
	if !ok || len(inner.Words) == 0 || program(inner.Words[0]) != "git" {
		return false, false
	}
	sub, _, known := gitSubcommand(inner.Words[1:])
	if !known {
		return true, true
	}
	return gitReaders[sub], false
}

func gitWrites(c *collector, args []Word) {
	sub, rest, ok := gitSubcommand(args)
	switch {
	case !ok:
		c.complete = false
		return
	case sub == "branch":
		if gitBranchReadOnly(rest) != "" {
			c.complete = false
		}
		return
	case sub != "status" && sub != "log" && sub != "diff" && sub != "show" && sub != "rev-parse" && sub != "ls-files":
		c.complete = false
		return
	}
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if w.Static && w.Lit == "--" {
			return
		}
		long, _, isOpt := optionWord(w)
		switch {
		case !w.Static && !w.OptionSafe:
			c.complete = false
		case !isOpt || long == "":
		case long == "output":
			if eq := strings.IndexByte(w.Lit, '='); eq >= 0 {
				c.add(attached(w, eq+1), OpWrite)
			} else if i+1 < len(rest) {
				i++
				c.add(rest[i], OpWrite)
			}
		case abbreviates(long, "output", "ext-diff", "textconv"):
			c.complete = false
		}
	}
}

func gitReads(c *collector, args []Word) {
	_, rest, ok := gitSubcommand(args)
	if !ok {
		c.complete = false
		return
	}
	c.addPath(".", OpRead)
	for _, w := range rest {
		if w.Static && w.Lit == "--no-index" {
			c.complete = false // compares arbitrary files
		}
	}
}

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
