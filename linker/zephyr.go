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
// The relocation also needs ZephyrKconfig, and Zephyr v4.0 or later
// (FILTER arrived with zephyrproject-rtos/zephyr PR #74402).
func RenderZephyr(w io.Writer, p *place.Plan) ([]Skip, error) {
	bySource := make(map[string][]place.Entry)
	var skipped []Skip
	for _, e := range p.Entries {
		if problem := zephyrPathProblem(e.Key.Source); problem != "" {
			skipped = append(skipped, Skip{e, problem})
			continue
		}
		if !strings.Contains(e.Section, ".text.") {
			skipped = append(skipped, Skip{e, fmt.Sprintf("section %s has no \".text.\" in its name (object not built with -ffunction-sections?); gen_relocate_app.py would not relocate it", e.Section)})
			continue
		}
		bySource[e.Key.Source] = append(bySource[e.Key.Source], e)
	}
	sources := make([]string, 0, len(bySource))
	for s := range bySource {
		sources = append(sources, s)
	}
	sort.Strings(sources)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# tcmprof ITCM plan, build-id %s: %d functions, predicted %d bytes incl. padding and veneers.\n",
		orNone(p.BuildID), len(p.Entries)-len(skipped), p.Prediction.Bytes)
	fmt.Fprintf(bw, "# include() it after find_package(Zephyr). Needs Zephyr >= 4.0 (FILTER) and %s,\n", strings.TrimSpace(ZephyrKconfig))
	fmt.Fprintf(bw, "# which tcmprof plan writes beside this file as .conf: pass it with -DEXTRA_CONF_FILE.\n")
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
		fmt.Fprintf(bw, "zephyr_code_relocate(FILES %s LOCATION %s FILTER %s)\n", cmakeQuote(src), ZephyrLocation, cmakeQuote(filter))
	}
	return skipped, bw.Flush()
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
