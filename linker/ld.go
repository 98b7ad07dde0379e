package linker

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/tcmprof/tcmprof/place"
)

// ldGlob escapes the glob metacharacters of a literal for an ld input
// section pattern. GNU ld runs fnmatch() on patterns even inside double
// quotes, and a backslash does not escape there; a one-character bracket
// expression does ([*] matches '*'). ok is false when the name holds a
// character the ld script lexer would split on, which has no escape.
func ldGlob(s string, extra string) (string, bool) {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '*' || r == '?' || r == '[' || r == ']':
			b.WriteString("[" + string(r) + "]")
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("_.$-+~"+extra, r):
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// filePattern names the entry's input file so that only it matches: the
// file's base name under any directory ("*/ip.o", "*/libnet.a:ip.o"), or
// the whole recorded path when another object of the plan has the same base
// name (two static foo in two ip.o files must stay apart).
func filePattern(e *place.Entry, ambiguous map[string]bool) (string, bool) {
	file := func(p string) (string, bool) {
		if !strings.Contains(p, "/") {
			return ldGlob(p, "")
		}
		if ambiguous[path.Base(p)] {
			return ldGlob(p, "/")
		}
		g, ok := ldGlob(path.Base(p), "")
		return "*/" + g, ok
	}
	if e.Archive == "" {
		return file(e.Object)
	}
	archive, ok1 := file(e.Archive)
	member, ok2 := ldGlob(e.Object, "")
	return archive + ":" + member, ok1 && ok2
}

// ambiguousBases finds file base names that stand for more than one path
// among the plan's entries and exclusions.
func ambiguousBases(p *place.Plan) map[string]bool {
	paths := make(map[string]string)
	amb := make(map[string]bool)
	note := func(full string) {
		if full == "" {
			return
		}
		b := path.Base(full)
		if prev, ok := paths[b]; ok && prev != full {
			amb[b] = true
		}
		paths[b] = full
	}
	for _, e := range p.Entries {
		note(e.Archive)
		if e.Archive == "" {
			note(e.Object)
		}
	}
	for _, x := range p.Excluded {
		note(x.Archive)
		if x.Archive == "" {
			note(x.Object)
		}
	}
	return amb
}

// RenderLD writes a GNU ld fragment that lists the planned input sections
// with file-qualified patterns, in the plan's order (the order the padding
// was predicted for). INCLUDE it inside an output section that is placed
// in ITCM and comes before the output section collecting *(.text*), since
// ld assigns each input section to the first pattern that matches it:
//
//	.itcm_plan : { INCLUDE tcmprof-itcm.ld } > ITCM AT> FLASH
//
// The entries it can not express are returned, not dropped silently.
func RenderLD(w io.Writer, p *place.Plan) ([]Skip, error) {
	amb := ambiguousBases(p)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "/* tcmprof ITCM plan, build-id %s: %d functions, predicted %d bytes incl. padding and %d veneers.\n",
		orNone(p.BuildID), len(p.Entries), p.Prediction.Bytes, p.Prediction.ITCMStubs)
	fmt.Fprintf(bw, "   INCLUDE inside an ITCM output section placed before the one collecting *(.text*). */\n")
	if len(p.Entries) > 0 {
		fmt.Fprintf(bw, ". = ALIGN(%d);\n", p.BlockAlign)
	}
	var skipped []Skip
	for _, e := range p.Entries {
		file, ok1 := filePattern(&e, amb)
		section, ok2 := ldGlob(e.Section, "")
		if e.Object == "" {
			skipped = append(skipped, Skip{e, "no object file known"})
			continue
		}
		if !ok1 || !ok2 {
			skipped = append(skipped, Skip{e, "file or section name has characters an ld script can not express"})
			continue
		}
		fmt.Fprintf(bw, "%s(%s)\n", file, section)
	}
	return skipped, bw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
