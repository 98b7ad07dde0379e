// SPDX-License-Identifier: Apache-2.0

package linker

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

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

// filePattern names the entry's input file, as the map names it, with a
// pattern that only it matches among the plan's files. It is always a
// wildcard: GNU ld takes a file name without one for an input file of its
// own and loads it (a second copy of the object, or one from another build
// or directory), while a wildcard only selects among the files the link
// already has. The pattern is the file's base name under any directory
// ("*/ip.o", "*/libnet.a:ip.o"); when another file of the plan has the same
// base name, enough of the trailing directories to tell them apart
// ("*/net/ip.o"), which still matches when the build is relinked in
// another directory; a name without a directory is matched whole
// ("[m]ain.o").
func filePattern(e *place.Entry, others map[string][]string) (string, bool) {
	if e.Archive == "" {
		return fileGlob(e.Object, others[path.Base(e.Object)])
	}
	archive, ok1 := fileGlob(e.Archive, others[path.Base(e.Archive)])
	member, ok2 := ldGlob(e.Object, "")
	return archive + ":" + member, ok1 && ok2
}

// fileGlob is filePattern for one path p; same lists the plan's paths with
// p's base name (p among them).
func fileGlob(p string, same []string) (string, bool) {
	parts := strings.Split(p, "/")
	for k := 1; k < len(parts); k++ {
		suffix := strings.Join(parts[len(parts)-k:], "/")
		clash := false
		for _, q := range same {
			clash = clash || (q != p && strings.HasSuffix(q, "/"+suffix))
		}
		if !clash {
			g, ok := ldGlob(suffix, "/")
			return "*/" + g, ok
		}
	}
	// Only the whole path tells p apart (or it has no directory): match
	// it exactly, made a wildcard by a one-character bracket expression.
	g, ok := ldGlob(p, "/")
	if ok && !strings.HasPrefix(g, "[") {
		_, size := utf8.DecodeRuneInString(g)
		g = "[" + g[:size] + "]" + g[size:]
	}
	return g, ok
}

// planFiles lists, per base name, the distinct object and archive paths of
// the plan's entries and exclusions.
func planFiles(p *place.Plan) map[string][]string {
	out := make(map[string][]string)
	note := func(full string) {
		if full == "" {
			return
		}
		b := path.Base(full)
		for _, q := range out[b] {
			if q == full {
				return
			}
		}
		out[b] = append(out[b], full)
	}
	for _, e := range slices.Concat(p.Entries, p.FlashGroup) {
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
	return out
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
	files := planFiles(p)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "/* tcmprof ITCM plan, build-id %s: %d functions, predicted %d bytes incl. padding and %d veneers.\n",
		orNone(p.BuildID), len(p.Entries), p.Prediction.Bytes, p.Prediction.ITCMStubs)
	fmt.Fprintf(bw, "   INCLUDE inside an ITCM output section placed before the one collecting *(.text*). */\n")
	if len(p.Entries) > 0 {
		fmt.Fprintf(bw, ". = ALIGN(%d);\n", p.BlockAlign)
	}
	skipped := writeSections(bw, p.Entries, files)
	return skipped, bw.Flush()
}

// RenderLDText writes the GNU ld fragment that links the plan's flash
// group (place.Plan.FlashGroup: the sampled code left in flash, when it
// fits the I-cache) together, in the plan's order. INCLUDE it in a flash
// output section of its own before the ITCM load image and the one
// collecting *(.text*) (ld assigns a section to the first pattern that
// matches it), where Zephyr's FLASH_TEXT relocation puts the group and
// the prediction expects it; ld writes the veneers of the group's calls
// into ITCM right after it:
//
//	.text_group : { INCLUDE tcmprof-text.ld } > FLASH
//
// With no group it holds a comment only, so the INCLUDE always finds it.
func RenderLDText(w io.Writer, p *place.Plan) ([]Skip, error) {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "/* tcmprof flash group, build-id %s: %d sampled functions left in flash, %d bytes, linked together.\n",
		orNone(p.BuildID), len(p.FlashGroup), p.FlashGroupBytes())
	fmt.Fprintf(bw, "   INCLUDE in a flash output section of its own, before the ITCM load image and .text. */\n")
	skipped := writeSections(bw, p.FlashGroup, planFiles(p))
	return skipped, bw.Flush()
}

// writeSections writes a file-qualified input section pattern per entry
// and returns those it can not express.
func writeSections(w io.Writer, entries []place.Entry, files map[string][]string) []Skip {
	var skipped []Skip
	for _, e := range entries {
		file, ok1 := filePattern(&e, files)
		section, ok2 := ldGlob(e.Section, "")
		if e.Object == "" {
			skipped = append(skipped, Skip{e, "no object file known"})
			continue
		}
		if !ok1 || !ok2 {
			skipped = append(skipped, Skip{e, "file or section name has characters an ld script can not express"})
			continue
		}
		fmt.Fprintf(w, "%s(%s)\n", file, section)
	}
	return skipped
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
