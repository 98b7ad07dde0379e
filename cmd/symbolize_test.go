// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/elf/symbolizer"
	"github.com/tcmprof/tcmprof/internal/armtest"
)

// TestSymbolizeCmd runs the command on firmware it builds once.
func TestSymbolizeCmd(t *testing.T) {
	path := filepath.Join(armtest.SymbolizeDir(t), "O2-dwarf5.elf")
	t.Run("text matches llvm-symbolizer", func(t *testing.T) { testSymbolizeText(t, path) })
	t.Run("json", func(t *testing.T) { testSymbolizeJSON(t, path) })
	t.Run("bad input", func(t *testing.T) { testSymbolizeBadInput(t, path) })
}

// codeAddrs returns every halfword of the named functions.
func codeAddrs(t *testing.T, im *image.Image, names ...string) []uint32 {
	t.Helper()
	var addrs []uint32
	for _, name := range names {
		var fn *image.Function
		for _, f := range im.Functions() {
			if f.Name == name {
				fn = f
			}
		}
		if fn == nil {
			t.Fatalf("no function %s", name)
		}
		for a := fn.Addr; a < fn.Addr+fn.Size; a += 2 {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// testSymbolizeText checks the default output against
// llvm-symbolizer's default output byte for byte, on C functions with
// inlined callees (the names of C functions agree; clones and C++ names are
// the documented differences tested in package elf/image).
func testSymbolizeText(t *testing.T, path string) {
	armtest.NeedTools(t, "llvm-symbolizer")
	im, err := image.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	addrs := codeAddrs(t, im, "c_entry", "main", "other_entry")
	// Then the same addresses shuffled, again and again, over more than
	// two batches, the last one short: a batch is answered in address
	// order, each distinct address once, and the answers must still come
	// in input order.
	rng := rand.New(rand.NewPCG(1, 2))
	for n := len(addrs); len(addrs) < 2*symbolizer.MaxBatch+300; {
		addrs = append(addrs, addrs[rng.IntN(n)])
	}
	var in, llvmIn strings.Builder
	for i, a := range addrs {
		fmt.Fprintf(&llvmIn, "0x%x\n", a) // llvm-symbolizer wants the 0x
		if i%2 == 0 {
			fmt.Fprintf(&in, "0x%x\n", a)
		} else {
			fmt.Fprintf(&in, "%X\n", a|1) // no 0x, upper case, Thumb bit set
		}
	}
	code, got, stderr := tcmprofStdin(in.String(), "symbolize", "--elf", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	llvm := exec.Command("llvm-symbolizer", "--obj="+path)
	llvm.Stdin = strings.NewReader(llvmIn.String())
	want, err := llvm.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("output differs from llvm-symbolizer\n--- ours\n%s\n--- llvm\n%s", got, want)
	}
	if n := strings.Count(got, "\n\n"); n != len(addrs) {
		t.Errorf("%d blocks for %d addresses", n, len(addrs))
	}
	if !strings.Contains(got, "mix\n") {
		t.Error("no inlined frame in the output")
	}
}

type jsonAnswer struct {
	Address string `json:"address"`
	Frames  []struct {
		Function string `json:"function"`
		File     string `json:"file"`
		Line     int    `json:"line"`
	} `json:"frames"`
}

func testSymbolizeJSON(t *testing.T, path string) {
	im, err := image.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	addrs := codeAddrs(t, im, "c_entry", "cpp_entry", "_ZNK3net2ip5Iface6lookupEm")
	args := []string{"symbolize", "--elf", path, "--json", "0x70000000"}
	for _, a := range addrs {
		args = append(args, fmt.Sprintf("0x%x", a))
	}
	for _, demangle := range []bool{true, false} {
		a := args
		if !demangle {
			a = append(append([]string{}, args[:4]...), append([]string{"--no-demangle"}, args[4:]...)...)
		}
		code, out, stderr := tcmprof(a...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != len(addrs)+1 {
			t.Fatalf("%d lines for %d addresses", len(lines), len(addrs)+1)
		}
		if lines[0] != `{"address":"0x70000000","frames":[]}` {
			t.Errorf("unknown address: %s", lines[0])
		}
		sawCPP := false
		for i, line := range lines[1:] {
			var ans jsonAnswer
			if err := json.Unmarshal([]byte(line), &ans); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			want := im.Symbolize(addrs[i])
			if ans.Address != fmt.Sprintf("0x%x", addrs[i]) || len(ans.Frames) != len(want) || len(want) == 0 {
				t.Fatalf("%s: want %d frames at 0x%x", line, len(want), addrs[i])
			}
			for k, f := range ans.Frames {
				name := want[k].Function
				if !demangle && want[k].Mangled != "" {
					name = want[k].Mangled
				}
				if f.Function != name || f.File != want[k].File || f.Line != want[k].Line || f.Line == 0 {
					t.Errorf("%s: frame %d, want %+v", line, k, want[k])
				}
				sawCPP = sawCPP || strings.Contains(f.Function, "net::ip::Iface::lookup(unsigned long) const")
			}
		}
		if sawCPP != demangle {
			t.Errorf("demangle=%v but demangled C++ names seen=%v", demangle, sawCPP)
		}
	}
}

func testSymbolizeBadInput(t *testing.T, path string) {
	for _, tc := range []struct {
		name, stdin string
		args        []string // --elf FILE is prepended unless ownELF
		ownELF      bool
		wantErr     string
		wantOut     string
	}{
		{"bad arg", "", []string{"0x60000000", "0xzz"}, false, `bad address "0xzz"`, ""},
		{"too wide", "", []string{"0x100000000"}, false, `address "0x100000000" is wider than 32 bits`, ""},
		// A bad line is answered ?? and the lines after it still are.
		{"bad stdin line", "0x70000000\n\nnothex\n0x70000000\n", nil, false,
			`1 of 3 lines of standard input were answered ?? for not being an address; the first: stdin line 3: bad address "nothex"`,
			"??\n??:0:0\n\n??\n??:0:0\n\n??\n??:0:0\n\n"},
		// A line longer than the input buffer too.
		{"bad stdin lines", "0x70000000\nzz\n" + strings.Repeat("x", 70000) + "\n0x70000000", nil, false,
			"2 of 4 lines of standard input were answered ?? for not being an address; the first: stdin line 2: bad address \"zz\"",
			strings.Repeat("??\n??:0:0\n\n", 4)},
		{"bad stdin line in JSON", "zz\n", []string{"--json"}, false, "1 of 1 lines",
			`{"address":"zz","error":"stdin line 1: bad address \"zz\": want hex, e.g. 0x60001234","frames":[]}` + "\n"},
		{"not an ELF", "", []string{"--elf", "symbolize_test.go", "0x0"}, true, "symbolize_test.go: not an ELF file (bad magic)", ""},
		{"no ELF flag", "", []string{"0x0"}, true, `required flag(s) "elf" not set`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"symbolize"}, tc.args...)
			if !tc.ownELF {
				args = append([]string{"symbolize", "--elf", path}, tc.args...)
			}
			code, out, stderr := tcmprofStdin(tc.stdin, args...)
			if code == 0 {
				t.Fatal("exit 0")
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "tcmprof: ") || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("stderr %q, want one line with %q", stderr, tc.wantErr)
			}
			if out != tc.wantOut {
				t.Errorf("stdout %q, want %q", out, tc.wantOut)
			}
		})
	}
}
