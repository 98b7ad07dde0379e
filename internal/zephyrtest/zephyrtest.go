// SPDX-License-Identifier: Apache-2.0

// Package zephyrtest checks a Zephyr rendering of a plan
// (linker.RenderZephyr) by running it through a model of the two programs
// that consume it, written from their sources (zephyrproject-rtos/zephyr
// cmake/modules/extensions.cmake zephyr_code_relocate() and
// scripts/build/gen_relocate_app.py). The linker package's tests run it on
// their test project and on names full of special characters, cmd's on the
// QEMU demo's build:
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
package zephyrtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/internal/armtest"
)

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
	keyword, flags := "", "COPY"
	for _, a := range cmakeListSplit(args) {
		switch a {
		case "NOCOPY":
			flags = "NOCOPY"
			continue
		case "NOKEEP":
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
	out := single["LOCATION"] + ":" + flags + ":" + strings.Join(files, ";") + "," + single["FILTER"]
	if strings.Contains(out, "$<") {
		return "", errors.New("generator expression in the relocation line")
	}
	return out, nil
}

// scriptInput is gen_relocate_app.py's parse_input_string.
func scriptInput(line string) (region, flags string, files []string, filter string, err error) {
	region, rest, ok := strings.Cut(line, ":")
	if !ok {
		return "", "", nil, "", errors.New("no ':' after the region")
	}
	flags, rest, ok = strings.Cut(rest, ":")
	if !ok {
		return "", "", nil, "", errors.New("no ':' after the flags")
	}
	fileList, filter, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", nil, "", errors.New("no ',' after the files")
	}
	for _, f := range strings.Split(fileList, ";") {
		if strings.ContainsAny(f, "*?[") {
			return "", "", nil, "", fmt.Errorf("%s looks like a pattern", f)
		}
		files = append(files, f)
	}
	return region, flags, files, filter, nil
}

// pythonSearch runs Python's re.search(filter, name) for every query and
// returns the names that match, per query.
func pythonSearch(t testing.TB, queries []searchQuery) [][]string {
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

// Relocated runs CMake text through the model and returns, by source file,
// the sections the script would relocate from that source's object (whose
// sections are given by sections) to location, each filter checked with
// Go and Python. The CMake may name two locations: ITCM_TEXT, copied at
// boot, and FLASH_TEXT (a plan's flash group), NOCOPY.
func Relocated(t testing.TB, cmake, location string, sections func(source string) []string) map[string][]string {
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
		region, flags, files, filter, err := scriptInput(dict)
		if err != nil {
			t.Fatalf("gen_relocate_app.py would reject %q: %v", dict, err)
		}
		if wantFlags := map[string]string{"ITCM_TEXT": "COPY", "FLASH_TEXT": "NOCOPY"}[region]; flags != wantFlags || len(files) != 1 || filter == "" {
			t.Fatalf("line %q gives region %q flags %q files %q filter %q", line, region, flags, files, filter)
		}
		if region != location {
			continue
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
