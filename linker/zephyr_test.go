// SPDX-License-Identifier: Apache-2.0

package linker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/place"
)

// The Zephyr rendering is checked by running it through a model of the two
// programs that consume it, written from their sources
// (zephyrproject-rtos/zephyr cmake/modules/extensions.cmake
// zephyr_code_relocate() and scripts/build/gen_relocate_app.py):
//
//  1. CMake parses the call (quoted-argument escapes), expands ${ARGN}
//     into cmake_parse_arguments (list splitting at ';'), and appends
//     "LOCATION:COPY:<files joined by ;>,<FILTER>" to a property that
//     file(GENERATE) writes out, evaluating generator expressions ("$<").
//  2. The script splits that line at the first ':' twice and at the first
//     ',' after the files, keeps each object section for which
//     re.search(filter, name) matches and whose kind (".text." in the name)
//     the location asks for, and emits KEEP(*<object base name>("<section>")).
//
// The regex search runs twice: with Go's regexp and with Python's own re
// (python3), which is the oracle.

// cmakeArgs parses one command invocation "name(args)" as CMake does, and
// returns the arguments after quoted-argument unescaping. It refuses what
// the renderer must never emit: variable references and unquoted arguments
// that need escaping.
func cmakeArgs(line string) (string, []string, error) {
	open := strings.IndexByte(line, '(')
	if open < 0 || !strings.HasSuffix(line, ")") {
		return "", nil, errors.New("not a command invocation")
	}
	name, body := line[:open], line[open+1:len(line)-1]
	var args []string
	for i := 0; i < len(body); {
		switch c := body[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '"':
			var b strings.Builder
			i++
			for ; i < len(body) && body[i] != '"'; i++ {
				switch {
				case body[i] == '\\' && i+1 < len(body):
					i++
					switch e := body[i]; {
					case e == 'n':
						b.WriteByte('\n')
					case e == 't':
						b.WriteByte('\t')
					case e == 'r':
						b.WriteByte('\r')
					case e == ';':
						b.WriteString(`\;`) // kept: it only protects ';' in lists
					case e >= 'a' && e <= 'z', e >= 'A' && e <= 'Z', e >= '0' && e <= '9':
						return "", nil, fmt.Errorf("invalid CMake escape \\%c", e)
					default:
						b.WriteByte(e)
					}
				case body[i] == '$' && i+1 < len(body) && body[i+1] == '{':
					return "", nil, errors.New("variable reference in a quoted argument")
				default:
					b.WriteByte(body[i])
				}
			}
			if i >= len(body) {
				return "", nil, errors.New("unterminated quoted argument")
			}
			i++
			args = append(args, b.String())
		default:
			j := i
			for j < len(body) && body[j] != ' ' && body[j] != '\t' {
				j++
			}
			tok := body[i:j]
			if strings.ContainsAny(tok, `\"$;()#`) {
				return "", nil, fmt.Errorf("unquoted argument %q needs escaping", tok)
			}
			args = append(args, tok)
			i = j
		}
	}
	return name, args, nil
}

// cmakeListSplit splits a value at unescaped ';' and drops empty elements,
// as expanding ${ARGN} unquoted does.
func cmakeListSplit(args []string) []string {
	var out []string
	for _, a := range args {
		start := 0
		for i := 0; i < len(a); i++ {
			if a[i] == ';' && (i == 0 || a[i-1] != '\\') {
				if i > start {
					out = append(out, a[start:i])
				}
				start = i + 1
			}
		}
		if start < len(a) {
			out = append(out, a[start:])
		}
	}
	return out
}

// relocationLine is zephyr_code_relocate() up to the property it appends.
func relocationLine(line string) (string, error) {
	name, args, err := cmakeArgs(line)
	if err != nil {
		return "", err
	}
	if name != "zephyr_code_relocate" {
		return "", fmt.Errorf("unexpected command %s", name)
	}
	single := map[string]string{}
	var files []string
	keyword := ""
	for _, a := range cmakeListSplit(args) {
		switch a {
		case "NOCOPY", "NOKEEP":
			return "", fmt.Errorf("unexpected option %s", a)
		case "LIBRARY", "LOCATION", "PHDR", "FILTER", "FILES":
			keyword = a
			continue
		}
		switch keyword {
		case "FILES":
			files = append(files, a)
		case "":
			return "", fmt.Errorf("unparsed argument %q", a)
		default:
			if _, dup := single[keyword]; dup {
				return "", fmt.Errorf("unparsed argument %q after %s", a, keyword)
			}
			single[keyword] = a
		}
	}
	if len(files) == 0 || single["LOCATION"] == "" {
		return "", errors.New("FILES and LOCATION are required")
	}
	for _, f := range files {
		if !path.IsAbs(f) {
			return "", fmt.Errorf("relative file %s", f)
		}
	}
	out := single["LOCATION"] + ":COPY:" + strings.Join(files, ";") + "," + single["FILTER"]
	if strings.Contains(out, "$<") {
		return "", errors.New("generator expression in the relocation line")
	}
	return out, nil
}

// scriptInput is gen_relocate_app.py's parse_input_string.
func scriptInput(line string) (region string, files []string, filter string, err error) {
	region, rest, ok := strings.Cut(line, ":")
	if !ok {
		return "", nil, "", errors.New("no ':' after the region")
	}
	_, rest, ok = strings.Cut(rest, ":")
	if !ok {
		return "", nil, "", errors.New("no ':' after the flags")
	}
	fileList, filter, ok := strings.Cut(rest, ",")
	if !ok {
		return "", nil, "", errors.New("no ',' after the files")
	}
	for _, f := range strings.Split(fileList, ";") {
		if strings.ContainsAny(f, "*?[") {
			return "", nil, "", fmt.Errorf("%s looks like a pattern", f)
		}
		files = append(files, f)
	}
	return region, files, filter, nil
}

// pythonSearch runs Python's re.search(filter, name) for every query and
// returns the names that match, per query.
func pythonSearch(t *testing.T, queries []searchQuery) [][]string {
	t.Helper()
	armtest.NeedTools(t, "python3")
	in, err := json.Marshal(queries)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", "-c", `import json, re, sys
qs = json.load(sys.stdin)
json.dump([[n for n in q["names"] if re.search(q["filter"], n)] for q in qs], sys.stdout)`)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var res [][]string
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

type searchQuery struct {
	Filter string   `json:"filter"`
	Names  []string `json:"names"`
}

// relocated runs CMake text through the model and returns, per CMake line,
// the source file and the sections the script would relocate from that
// source's object (given by sections), each checked with Go and Python.
func relocated(t *testing.T, cmake string, sections func(source string) []string) map[string][]string {
	t.Helper()
	type call struct {
		source, filter string
		names          []string
	}
	var calls []call
	sc := bufio.NewScanner(strings.NewReader(cmake))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		dict, err := relocationLine(line)
		if err != nil {
			t.Fatalf("CMake would reject %q: %v", line, err)
		}
		region, files, filter, err := scriptInput(dict)
		if err != nil {
			t.Fatalf("gen_relocate_app.py would reject %q: %v", dict, err)
		}
		if region != ZephyrLocation || len(files) != 1 || filter == "" {
			t.Fatalf("line %q gives region %q files %q filter %q", line, region, files, filter)
		}
		calls = append(calls, call{files[0], filter, sections(files[0])})
	}
	var queries []searchQuery
	for _, c := range calls {
		queries = append(queries, searchQuery{c.filter, c.names})
	}
	py := pythonSearch(t, queries)
	out := make(map[string][]string)
	for k, c := range calls {
		re, err := regexp.Compile(c.filter)
		if err != nil {
			t.Fatalf("Go regexp rejects %q: %v", c.filter, err)
		}
		var goMatch []string
		for _, n := range c.names {
			if re.MatchString(n) {
				goMatch = append(goMatch, n)
			}
		}
		if fmt.Sprint(goMatch) != fmt.Sprint(py[k]) {
			t.Errorf("filter %q: Go matches %q, Python %q", c.filter, goMatch, py[k])
		}
		for _, n := range py[k] {
			if strings.Contains(n, ".text.") { // SectionKind.TEXT; ITCM_TEXT takes only text
				out[c.source] = append(out[c.source], n)
			}
		}
		sort.Strings(out[c.source])
	}
	return out
}

// TestZephyrRelocatesExactlyThePlan renders the plan of the test firmware
// for Zephyr and runs it through the model against the real objects'
// section lists, near misses included (.text.foobar, .text.foo.constprop.0,
// .rodata.foo, .rel.text.foo, .text.aXb for .text.a*b, .text.dup of other
// files).
func TestZephyrRelocatesExactlyThePlan(t *testing.T) {
	fw := buildFirmware(t)
	base := readImage(t, fw, fw.link(t, "base", ""))
	in := planInput(base)
	// Keep the near misses of planned names in flash: foobar and the
	// fake clone for foo, and drv/ip.c's dup for net/ip.c's.
	for i := range in.Funcs {
		switch shortName(in.Funcs[i].Key.Source, in.Funcs[i].Symbol) {
		case "drv/ip.c:dup", "proj/main.c:foobar", "proj/main.c:foo_clone":
			in.Funcs[i].Pin = "test: near miss stays in flash"
		}
	}
	plan, err := place.Build(in, place.Options{Budget: -1, Layout: place.LayoutZephyr, CurveBudgets: []uint32{}})
	if err != nil {
		t.Fatal(err)
	}
	var cmake bytes.Buffer
	skipped, err := RenderZephyr(&cmake, plan)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("RenderZephyr: %v, skipped %v", err, skipped)
	}
	objectOf := make(map[string]object)
	for _, o := range fw.objects {
		objectOf[o.source] = o
	}
	got := relocated(t, cmake.String(), func(source string) []string {
		o, ok := objectOf[source]
		if !ok {
			t.Fatalf("FILES names %s, which is not a source of the firmware", source)
		}
		return armtest.SectionNames(t, filepath.Join(fw.dir, o.path))
	})
	want := make(map[string][]string)
	for _, e := range plan.Entries {
		want[e.Key.Source] = append(want[e.Key.Source], e.Section)
	}
	for s := range want {
		sort.Strings(want[s])
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("relocated\n  %v\nplanned\n  %v\nCMake:\n%s", got, want, cmake.String())
	}
	planned := make(map[string]bool)
	for _, e := range plan.Entries {
		planned[shortName(e.Key.Source, e.Symbol)] = true
	}
	for _, must := range []string{"proj/main.c:foo", "proj/main.c:star", "proj/main.c:odd", "net/ip.c:dup", "proj/main.c:dup"} {
		if !planned[must] {
			t.Errorf("the plan lost %s; the near-miss checks need it", must)
		}
	}

	// The script's linker script names objects by base name and GNU ld
	// reads both parts as globs: the pinned drv/ip.c dup (drv/ip.o like
	// net/ip.o) and .text.aXb (for .text.a*b) move too. The collision check
	// must name exactly those, and linking the script's lines for real must
	// move exactly the plan plus them.
	col := ZephyrCollisions(plan, base.funcs)
	var colNames []string
	for _, c := range col {
		colNames = append(colNames, shortName(c.Other.Key.Source, c.Other.Symbol))
	}
	sort.Strings(colNames)
	if fmt.Sprint(colNames) != "[drv/ip.c:dup proj/main.c:not_star]" {
		t.Errorf("collisions %v, want drv/ip.c:dup and main.c:not_star", colNames)
	}

	type keep struct{ object, section string }
	var keeps []keep
	for source, sections := range got {
		for _, sec := range sections {
			keeps = append(keeps, keep{filepath.Base(objectOf[source].path), sec})
		}
	}
	sort.Slice(keeps, func(a, b int) bool {
		if keeps[a].object != keeps[b].object {
			return keeps[a].object < keeps[b].object
		}
		return keeps[a].section < keeps[b].section
	})
	var script strings.Builder
	script.WriteString(". = ALIGN(4);\n")
	for _, k := range keeps {
		fmt.Fprintf(&script, "KEEP(*%s(\"%s\"))\n", k.object, k.section)
	}
	script.WriteString(". = ALIGN(4);\n")
	img := readImage(t, fw, fw.link(t, "zephyr", script.String()))
	wantIn := append(append(names(plan.Entries), colNames...), "proj/itcm.c:fast")
	sort.Strings(wantIn)
	if gotIn := keys(img.inITCM()); fmt.Sprint(gotIn) != fmt.Sprint(wantIn) {
		t.Fatalf("in ITCM after the Zephyr-style link\n  %v\nwant\n  %v", gotIn, wantIn)
	}
	rep, err := Verify(plan, verifyImage(img))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Violations) != 1 || rep.Violations[0].Kind != ViolationExcluded || !strings.Contains(rep.Violations[0].Name, "drv/ip.c") {
		t.Errorf("verify: %v, want only the pinned drv/ip.c dup in ITCM", rep.Violations)
	}
	t.Logf("Zephyr-style link: ITCM use %d, predicted %d (tolerance %d); veneers %d, predicted %d",
		rep.ITCMUsed, rep.PredictedITCMUsed, rep.ITCMTolerance, rep.Veneers, rep.PredictedVeneers)
}

// TestZephyrFilterEscaping pushes names with every character that means
// something to CMake, the relocation line or a regex through the model.
func TestZephyrFilterEscaping(t *testing.T) {
	planned := []string{".text.a;b", ".text.c,d", `.text.e"f`, ".text.g$<h>", `.text.i\j`, ".text.k(l)|m", ".text.n+o*p?", ".text.q r", ".text.ü", ".text.s${t}"}
	nearMisses := []string{".text.a", ".text.ab", ".text.cXd", ".text.c", ".text.eXf", ".text.g", `.text.ij`, ".text.k(l)", ".text.m",
		".text.noo", ".text.n+o*p", ".text.qr", ".text.u", ".text.s", ".rel.text.a;b", ".text.a;b.constprop.0", "X.text.a;b"}
	p := &place.Plan{Version: place.PlanVersion, Layout: place.LayoutZephyr, BlockAlign: 8}
	for _, s := range planned {
		p.Entries = append(p.Entries, place.Entry{Key: place.KeyFor("/src/odd.c", "f"), Symbol: "f" + s, Section: s, Object: "odd.c.obj"})
	}
	p.Entries = append(p.Entries,
		place.Entry{Key: place.KeyFor("/src/a,b.c", "g"), Symbol: "g", Section: ".text.g", Object: "x.obj"},
		place.Entry{Key: place.KeyFor("src/rel.c", "h"), Symbol: "h", Section: ".text.h", Object: "y.obj"},
		place.Entry{Key: place.KeyFor("/src/plain.c", "legacy"), Symbol: "legacy", Section: ".text", Object: "z.obj"})
	var cmake bytes.Buffer
	skipped, err := RenderZephyr(&cmake, p)
	if err != nil {
		t.Fatal(err)
	}
	var skippedNames []string
	for _, s := range skipped {
		skippedNames = append(skippedNames, s.Entry.Symbol)
	}
	if fmt.Sprint(skippedNames) != "[g h legacy]" {
		t.Errorf("skipped %v, want the comma path, the relative path and the plain .text", skippedNames)
	}
	got := relocated(t, cmake.String(), func(string) []string { return append(append([]string(nil), planned...), nearMisses...) })
	want := append([]string(nil), planned...)
	sort.Strings(want)
	if fmt.Sprint(got["/src/odd.c"]) != fmt.Sprint(want) || len(got) != 1 {
		t.Fatalf("relocated %q\nwant %q\nCMake:\n%s", got, want, cmake.String())
	}
}
