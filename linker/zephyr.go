// SPDX-License-Identifier: Apache-2.0

package linker

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/tcmprof/tcmprof/place"
)

// ZephyrKconfig is the Kconfig fragment the relocation needs.
const ZephyrKconfig = "CONFIG_CODE_DATA_RELOCATION=y\n"

// ZephyrLocation is the relocation target: the text of the DT region named
// "ITCM" (zephyr,memory-region on the itcm node of RT10xx SoCs).
const ZephyrLocation = "ITCM_TEXT"

// pyRegexLiteral escapes s for a regular expression that Python's re (which
// gen_relocate_app.py uses) and Go's RE2 both read as the literal s. Word
// characters stay, '.' becomes "\.", every other ASCII character becomes a
// \xHH escape: so the pattern never holds ';' (it would split the CMake
// list), ',' (the script splits its input line at the first comma after
// the files), '$' or '"' (CMake variable and generator-expression syntax).
func pyRegexLiteral(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		case r == '.':
			b.WriteString(`\.`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r) // not a metacharacter in either dialect
		}
	}
	return b.String(), true
}

// ZephyrFilter is the FILTER regex for a set of section names of one
// object: each name anchored with ^ and $ (re.search is unanchored, and
// ".text.foo" must not take ".text.foobar" or ".text.foo.constprop.0"
// along), joined with '|'.
func ZephyrFilter(sections []string) (string, bool) {
	alts := make([]string, 0, len(sections))
	for _, s := range sections {
		lit, ok := pyRegexLiteral(s)
		if !ok {
			return "", false
		}
		alts = append(alts, "^"+lit+"$")
	}
	return strings.Join(alts, "|"), len(alts) > 0
}

// cmakeQuote writes s as a CMake quoted argument. A backslash must be
// doubled and a quote escaped; "${" would start a variable reference, so
// '$' is escaped too. pyRegexLiteral never emits '$' but as an anchor, and
// never ';', so no list splitting happens downstream.
func cmakeQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`)
	return `"` + r.Replace(s) + `"`
}

// zephyrPathProblem says why a source path can not go into FILES, or "".
// gen_relocate_app.py splits its input line at ':' (region, flags), at the
// first ',' after the files and the file list at ';', and refuses glob
// characters; CMake makes relative paths relative to the current source
// directory, and would evaluate "$<" as a generator expression.
func zephyrPathProblem(p string) string {
	switch {
	case p == "":
		return "no source file known"
	case !path.IsAbs(p):
		return "source path is not absolute"
	case strings.ContainsAny(p, ",;*?[\n\r\""):
		return "source path has a character zephyr_code_relocate can not pass (, ; * ? [ \" or newline)"
	case strings.Contains(p, "$<"):
		return "source path contains a CMake generator expression"
	}
	return ""
}

// RenderZephyr writes one zephyr_code_relocate() call per source file for
// the application's CMakeLists.txt. Each call's FILTER matches exactly the
// planned .text.* sections of that file's object. Entries it can not
// express are returned: a function in plain ".text" (object built without
// -ffunction-sections) can only be moved with its whole file, which is not
// what the plan measured.
//
// The plan's flash group (place.Plan.FlashGroup) is relocated the same way
// into the flash region (ZephyrFlashLocation, NOCOPY: run and load
// address in flash, no copy at boot), which gen_relocate_app.py lays out
// as one block after the vector table, before the ITCM load image and
// .text, sorted by object and section name: together, in another order
// than the plan's, which for code that fits the cache changes no set's
// load.
//
// The relocation also needs ZephyrKconfig, and Zephyr v4.0 or later
// (FILTER arrived with zephyrproject-rtos/zephyr PR #74402).
func RenderZephyr(w io.Writer, p *place.Plan) ([]Skip, error) {
	itcm, itcmSkipped := bySource(p.Entries)
	group, groupSkipped := bySource(p.FlashGroup)
	skipped := append(itcmSkipped, groupSkipped...)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# tcmprof ITCM plan, build-id %s: %d functions, predicted %d bytes incl. padding and veneers.\n",
		orNone(p.BuildID), len(p.Entries)-len(itcmSkipped), p.Prediction.Bytes)
	fmt.Fprintf(bw, "# include() it after find_package(Zephyr). Needs Zephyr >= 4.0 (FILTER) and %s,\n", strings.TrimSpace(ZephyrKconfig))
	fmt.Fprintf(bw, "# which tcmprof plan writes beside this file as .conf: pass it with -DEXTRA_CONF_FILE.\n")
	skipped = append(skipped, writeRelocations(bw, itcm, ZephyrLocation)...)
	if len(p.FlashGroup) > 0 {
		fmt.Fprintf(bw, "# The flash group: %d sampled functions left in flash, linked together (they fit the I-cache).\n",
			len(p.FlashGroup)-len(groupSkipped))
		skipped = append(skipped, writeRelocations(bw, group, ZephyrFlashLocation+" NOCOPY")...)
	}
	return skipped, bw.Flush()
}

// ZephyrFlashLocation is the relocation target of the flash group: the
// text of the cortex-m linker script's XIP region, FLASH.
const ZephyrFlashLocation = "FLASH_TEXT"

// bySource groups entries by source file, and returns those a
// zephyr_code_relocate() call can not name.
func bySource(entries []place.Entry) (map[string][]place.Entry, []Skip) {
	out := make(map[string][]place.Entry)
	var skipped []Skip
	for _, e := range entries {
		if problem := zephyrPathProblem(e.Key.Source); problem != "" {
			skipped = append(skipped, Skip{e, problem})
			continue
		}
		if !strings.Contains(e.Section, ".text.") {
			skipped = append(skipped, Skip{e, fmt.Sprintf("section %s has no \".text.\" in its name (object not built with -ffunction-sections?); gen_relocate_app.py would not relocate it", e.Section)})
			continue
		}
		out[e.Key.Source] = append(out[e.Key.Source], e)
	}
	return out, skipped
}

// writeRelocations writes a zephyr_code_relocate() call per source, in
// source order, to location (with its flags), and returns the entries
// whose sections a FILTER can not name.
func writeRelocations(w io.Writer, bySource map[string][]place.Entry, location string) []Skip {
	sources := make([]string, 0, len(bySource))
	for s := range bySource {
		sources = append(sources, s)
	}
	sort.Strings(sources)
	var skipped []Skip
	for _, src := range sources {
		var sections []string
		for _, e := range bySource[src] {
			sections = append(sections, e.Section)
		}
		sort.Strings(sections)
		filter, ok := ZephyrFilter(sections)
		if !ok {
			for _, e := range bySource[src] {
				skipped = append(skipped, Skip{e, "section name is not valid UTF-8"})
			}
			continue
		}
		fmt.Fprintf(w, "zephyr_code_relocate(FILES %s LOCATION %s FILTER %s)\n", cmakeQuote(src), location, cmakeQuote(filter))
	}
	return skipped
}

// Collision is a function that a Zephyr plan would move although it is not
// planned. gen_relocate_app.py writes KEEP(*<object base name>("<section>"))
// for each relocated section, and GNU ld matches both parts as globs (even
// quoted): "*ip.c.obj" also takes drv/ip.c.obj and myip.c.obj, and a
// section named ".text.a*b" also takes ".text.aXb".
type Collision struct {
	Planned place.Entry
	Other   place.Func
}

// ZephyrCollisions lists the functions of image that the Zephyr rendering
// of p would drag into ITCM with the planned ones.
func ZephyrCollisions(p *place.Plan, image []place.Func) []Collision {
	type id struct{ archive, object, section string }
	isPlanned := make(map[id]bool)
	for _, e := range p.Entries {
		isPlanned[id{e.Archive, e.Object, e.Section}] = true
	}
	var out []Collision
	for _, f := range image {
		if isPlanned[id{f.Archive, f.Object, f.Section}] {
			continue
		}
		for _, e := range p.Entries {
			sectionHit, _ := path.Match(e.Section, f.Section)
			if strings.HasSuffix(f.Object, path.Base(e.Object)) && (sectionHit || f.Section == e.Section) {
				out = append(out, Collision{Planned: e, Other: f})
				break
			}
		}
	}
	return out
}
