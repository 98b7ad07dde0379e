// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	pprof "github.com/google/pprof/profile"

	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/elf/thumb"
	"github.com/tcmprof/tcmprof/profile"
	"github.com/tcmprof/tcmprof/sample"
)

// TestStackProfileOnQEMUDemo captures the demo firmware with stacks and
// checks the call graph of its profile against the image itself: every
// caller above every sampled PC must make that call (a BL/BLX to the
// callee, through a veneer or not, a call or tail call through a register,
// or the tail call the unwinder put back), and the demo's known paths must
// be there: the driver's interrupt handler (from the vector table) calling
// into the network stack (libnet.a, from the link map), the receive path
// net_eth_input -> net_ipv4_input -> net_udp_input (Zephyr's names), and
// net_checksum_hot (the demo's accuracy probe) called from the echo
// application (libapp.a). Names of the workload other than these are not
// assumed.
func TestStackProfileOnQEMUDemo(t *testing.T) {
	// A stack record takes 6 + K buffer words: stream, at a rate QEMU's
	// UART keeps up with; coded against earlier frames (coding 2), whose
	// bytes it checks and whose stacks it unwinds.
	dir, elfPath, mapPath, capture := bootAndCapture(t, "stacks.tcmcap", "--rate", "2000", "--jitter", "25",
		"--fields", "pc,ctx,stack", "--mode", "stream", "--samples", "4000")

	code, stdout, stderr := tcmprof("info", "--json", capture)
	if code != 0 {
		t.Fatalf("info: exit %d\n%s", code, stderr)
	}
	var info struct {
		Records        int     `json:"records"`
		Dropped        int     `json:"dropped"`
		BytesPerRecord float64 `json:"bytes_per_record"`
		StackWords     int     `json:"stack_words"`
	}
	if err := json.Unmarshal([]byte(stdout), &info); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records with stacks of up to %d words, %d dropped by the device, %.1f bytes per record on the line",
		info.Records, info.StackWords, info.Dropped, info.BytesPerRecord)
	if info.Records < 3000 || info.StackWords != 32 {
		t.Fatalf("info: %+v", info)
	}
	// The record coding of protocol 1.4 against 1.2's on the same records.
	// Issue 25's bar, half, is met by 1-2 % on the demo (48-49 % in
	// BenchmarkCaptureQEMU, docs/core.md): too close for a test on a busy
	// machine, where the workload the capture catches moves; this guards
	// against losing the cross-frame references (about 70 % without them).
	c, err := sample.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	v12, n := wireBytes(t, c.Header.Fields, sample.CodingV12, c.Records)
	ratio := info.BytesPerRecord * float64(n) / float64(v12)
	t.Logf("the same records in the coding of 1.2: %.1f bytes each; on the line %.1f %% of that", float64(v12)/float64(n), 100*ratio)
	if c.Header.Coding != sample.CodingV14 || ratio > 0.55 {
		t.Errorf("coding %v: %.1f bytes per stack record on the line, %.0f %% of 1.2's %.1f (want at most 55 %%)",
			c.Header.Coding, info.BytesPerRecord, 100*ratio, float64(v12)/float64(n))
	}

	code, stdout, stderr = tcmprof("report", "--elf", elfPath, "--map", mapPath, "--board", "qemu-demo", "--json", capture)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	var rep struct {
		Unwind struct {
			Records, Complete, Failed, Frames int
			Depth                             int            `json:"truncated_by_depth"`
			Ended                             map[string]int `json:"ended"`
		}
		Callers []profile.FunctionCallers
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	u := rep.Unwind
	t.Logf("unwind: %d stacks, %.2f frames on average, %d complete, %d truncated by depth, %d failed; ended %v",
		u.Records, float64(u.Frames)/float64(u.Records), u.Complete, u.Depth, u.Failed, u.Ended)
	if u.Records != info.Records || u.Complete == 0 || u.Failed*20 > u.Records || u.Frames < 2*u.Records {
		t.Errorf("unwind statistics %+v: want stacks of two frames and more, and under 5 %% failed", u)
	}

	out := filepath.Join(dir, "stacks.pb.gz")
	if code, _, stderr := tcmprof("profile", "--elf", elfPath, "--map", mapPath, "--board", "qemu-demo", capture, "-o", out); code != 0 {
		t.Fatalf("profile: exit %d\n%s", code, stderr)
	}
	p, err := profile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	checkCallEdges(t, img, p)

	m, err := readMap(mapPath)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*image.Function{}
	for _, f := range img.Functions() {
		byName[f.Name] = f
	}
	irq := vectorHandler(t, img, 16+31) // the USB controller model's interrupt
	library := func(fn string) string {
		if f := byName[fn]; f != nil {
			return m.Library(f.Addr)
		}
		return ""
	}
	for _, path := range []struct {
		what   string
		chain  []string                  // from the callee outwards, functions in between allowed
		accept func(stack []string) bool // of the whole stack, when the chain is there
	}{
		{"the driver's interrupt handler calls into the network stack", []string{irq}, func(stack []string) bool {
			for _, fn := range stack[:len(stack)-1] {
				if library(fn) == "libnet.a" {
					return stack[len(stack)-1] == irq // rooted at the handler
				}
			}
			return false
		}},
		{"the receive path", []string{"net_udp_input", "net_ipv4_input", "net_eth_input"}, nil},
		{"the echo application calls the checksum", []string{"net_checksum_hot"}, func(stack []string) bool {
			i := index(stack, "net_checksum_hot")
			return i+1 < len(stack) && library(stack[i+1]) == "libapp.a"
		}},
	} {
		n := 0
		for _, s := range p.Sample {
			stack := physicalStack(s)
			if hasChain(stack, path.chain) && (path.accept == nil || path.accept(stack)) {
				n += int(s.Value[0])
			}
		}
		t.Logf("%s (%s): %d samples", path.what, strings.Join(path.chain, " <- "), n)
		if n == 0 {
			t.Errorf("no stack shows %s", path.what)
		}
	}
}

// physicalStack is the function of each location of s, innermost first:
// the outermost line of its inline chain (the function holding the code).
func physicalStack(s *pprof.Sample) []string {
	var names []string
	for _, l := range s.Location {
		if len(l.Line) > 0 {
			names = append(names, l.Line[len(l.Line)-1].Function.Name)
		}
	}
	return names
}

// hasChain reports whether stack holds chain's functions in that order,
// each further out than the one before.
func hasChain(stack, chain []string) bool {
	i := 0
	for _, fn := range stack {
		if i < len(chain) && fn == chain[i] {
			i++
		}
	}
	return i == len(chain)
}

func index(stack []string, fn string) int {
	for i, s := range stack {
		if s == fn {
			return i
		}
	}
	return 0
}

// vectorHandler is the function of exception number n in the vector table
// the image's VTOR points at (the .vectors section in flash).
func vectorHandler(t *testing.T, img *image.Image, n uint32) string {
	t.Helper()
	sec := img.File().Section(".vectors")
	if sec == nil {
		t.Fatal("no .vectors section")
	}
	b, ok := img.Bytes(uint32(sec.Addr)+4*n, 4)
	if !ok {
		t.Fatalf("no vector %d", n)
	}
	fn := img.FunctionAt(binary.LittleEndian.Uint32(b) &^ 1)
	if fn == nil {
		t.Fatalf("vector %d points at no function", n)
	}
	return fn.Name
}

// checkCallEdges: every caller location of every sample is an instruction
// that calls (or tail-calls) the function of the location below it.
func checkCallEdges(t *testing.T, img *image.Image, p *pprof.Profile) {
	t.Helper()
	ranges := thumb.FuncRanges(img.Functions())
	calls, err := thumb.CallEdges(img.File(), ranges)
	if err != nil {
		t.Fatal(err)
	}
	tails, err := thumb.TailCalls(img.File(), ranges)
	if err != nil {
		t.Fatal(err)
	}
	callee := map[uint32]uint32{} // call or tail-call site -> the function it enters
	for _, e := range append(calls, tails...) {
		callee[e.Site] = e.Callee
	}
	handlers := map[uint32]bool{} // exception handlers: entered from an interrupted PC, not a call
	if sec := img.File().Section(".vectors"); sec != nil {
		for n := uint32(1); n < uint32(sec.Size)/4; n++ {
			if b, ok := img.Bytes(uint32(sec.Addr)+4*n, 4); ok {
				handlers[binary.LittleEndian.Uint32(b)&^1] = true
			}
		}
	}
	// A handler that ends in a tail call (Tick_IRQHandler's b.w kernel_tick)
	// leaves no frame: the function it jumps to sits right above the
	// interrupted code.
	for _, e := range tails {
		if handlers[e.Caller] {
			handlers[e.Callee] = true
		}
	}
	var edges, indirect int
	bad := map[string]int{}
	for _, s := range p.Sample {
		for i := 1; i < len(s.Location); i++ {
			below := img.FunctionAt(uint32(s.Location[i-1].Address))
			site := uint32(s.Location[i].Address)
			if below == nil {
				bad[fmt.Sprintf("%#x: no function below", site)]++
				continue
			}
			edges++
			switch target, ok := callee[site]; {
			case ok && target == below.Addr:
			case ok && tailCallsThroughRegister(img, target):
				// The function called ended in a call through a register
				// with no frame of its own (bx rN): the function below
				// is where it went.
				indirect++
			case !ok && isCallThroughRegister(img, site):
				indirect++
			case handlers[below.Addr]:
			default:
				bad[fmt.Sprintf("%#x in %s does not call %s", site, funcName(img, site), below.Name)]++
			}
		}
	}
	t.Logf("%d caller edges in the profile, %d of them calls or tail calls through a register", edges, indirect)
	if edges == 0 || len(bad) > 0 {
		t.Errorf("caller edges that are not calls: %v", bad)
	}
}

// tailCallsThroughRegister reports whether the function at addr holds a
// BX Rm other than BX LR: a tail call through a register.
func tailCallsThroughRegister(img *image.Image, addr uint32) bool {
	f := img.FunctionAt(addr)
	if f == nil {
		return false
	}
	code, ok := img.Bytes(f.Addr, f.Size)
	for i := 0; ok && i+2 <= len(code); i += 2 {
		if h := binary.LittleEndian.Uint16(code[i:]); h&0xFF87 == 0x4700 && h != 0x4770 {
			return true
		}
	}
	return false
}

// isCallThroughRegister reports whether site holds a BLX Rm.
func isCallThroughRegister(img *image.Image, site uint32) bool {
	got, ok := thumb.CallSite(img.Bytes, (site+2)|1)
	return ok && got == site
}

func funcName(img *image.Image, addr uint32) string {
	if f := img.FunctionAt(addr); f != nil {
		return f.Name
	}
	return fmt.Sprintf("%#x", addr)
}
