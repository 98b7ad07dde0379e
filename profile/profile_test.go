// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/profile/profiletest"
	"github.com/tcmprof/tcmprof/sample"
)

// scenario is the known distribution most tests use: 1,000 records from
// the test firmware as checked in (so they run without a toolchain), each
// group at a PC the ARM disassembler located.
type scenario struct {
	fw                                 *profiletest.Firmware
	hashPC, leafPC, checksumPC, idlePC uint32
	scalePC, venePC                    uint32
	leafCallSite, hashCallSite         uint32
	capture                            *sample.Capture
}

const (
	nHash, nLeaf, nChecksum, nIdle, nScale, nVeneer = 400, 200, 100, 200, 90, 10
	nTotal                                          = nHash + nLeaf + nChecksum + nIdle + nScale + nVeneer
	nBusy                                           = nTotal - nIdle
)

func newScenario(t testing.TB) *scenario {
	fw := profiletest.CheckedIn(t) // the same on every machine, with or without a toolchain
	sc := &scenario{fw: fw}
	sc.hashPC = fw.Find(t, "hash_buf", `^eor`, 0) // inside mix, inlined into hash_step, inlined into hash_buf
	sc.leafPC = fw.Entry(t, "leaf_add") + 4
	sc.checksumPC = fw.Entry(t, "net_checksum") + 4
	sc.idlePC = fw.Next(t, "idle_loop", fw.Find(t, "idle_loop", `^wfi`, 0))
	sc.scalePC = fw.Entry(t, "fast_scale") + 4
	sc.venePC = fw.Entry(t, "__fast_scale_veneer")
	sc.leafCallSite = fw.Find(t, "nonleaf", `^bl\s.*<leaf_add>`, 0)
	sc.hashCallSite = fw.Find(t, "main", `^bl\s.*<hash_buf>`, 0)
	veneerCall := fw.Find(t, "main", `^bl\s.*<__fast_scale_veneer>`, 0)
	sc.capture = fw.Capture(t, sample.FieldPC|sample.FieldLR|sample.FieldExc|sample.FieldThread,
		records(nHash, sc.hashPC, fw.ReturnAddress(t, "main", sc.hashCallSite), 0, 1),
		records(nLeaf, sc.leafPC, fw.ReturnAddress(t, "nonleaf", sc.leafCallSite), 0, 1),
		records(nChecksum, sc.checksumPC, 0xFFFFFFF9, 16+3, 1), // in IRQ 3; LR is EXC_RETURN
		records(nIdle, sc.idlePC, fw.Entry(t, "idle_loop")|1, 0, 2),
		records(nScale, sc.scalePC, fw.ReturnAddress(t, "main", veneerCall), 0, 1),
		records(nVeneer, sc.venePC, fw.ReturnAddress(t, "main", veneerCall), 0, 1),
	)
	return sc
}

func (sc *scenario) options() Options {
	return Options{Idle: DefaultIdleRules(), Map: sc.fw.Map}
}

func (sc *scenario) writeProfile(t testing.TB) string {
	t.Helper()
	s, err := Symbolize(sc.capture, sc.fw.Image, sc.options())
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Profile()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fw.pb.gz")
	if err := WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
	return path
}

// traces splits "pprof -traces" output into its blocks: label lines
// ("key:  value") and frame lines (value first, then frames).
type trace struct {
	labels map[string]string
	frames []string
}

func parseTraces(out string) []trace {
	var ts []trace
	for _, block := range strings.Split(out, "-----------+") {
		tr := trace{labels: map[string]string{}}
		for _, line := range strings.Split(block, "\n") {
			f := strings.TrimSpace(line)
			if f == "" || strings.HasPrefix(f, "----") {
				continue
			}
			if k, v, ok := strings.Cut(f, ":  "); ok && !strings.Contains(k, " ") {
				tr.labels[k] = strings.TrimSpace(v)
				continue
			}
			if len(tr.labels) == 0 {
				continue // the header before the first block
			}
			if fields := strings.Fields(f); len(tr.frames) == 0 && len(fields) > 1 {
				f = strings.Join(fields[1:], " ") // drop the value column
			}
			tr.frames = append(tr.frames, f)
		}
		if len(tr.frames) > 0 {
			ts = append(ts, tr)
		}
	}
	return ts
}

func findTrace(t *testing.T, ts []trace, leaf string) trace {
	t.Helper()
	for _, tr := range ts {
		if tr.frames[0] == leaf {
			return tr
		}
	}
	t.Fatalf("no trace with leaf %q in %+v", leaf, ts)
	return trace{}
}

// TestPprofReadsInlineFramesCallersAndLabels checks the written profile
// through go tool pprof: the inline chain at a PC is addr2line's, the
// caller taken from LR is the calling function at addr2line's call line,
// labels carry region, library, context, thread and state.
func TestPprofReadsInlineFramesCallersAndLabels(t *testing.T) {
	sc := newScenario(t)
	path := sc.writeProfile(t)
	traces := parseTraces(profiletest.Pprof(t, "-traces", "-sample_index=samples", path))

	var wantChain []string
	for i, fr := range sc.fw.Addr2line(t, sc.hashPC) {
		name := strings.Fields(fr)[0]
		if i < len(sc.fw.Addr2line(t, sc.hashPC))-1 {
			name += " (inline)"
		}
		wantChain = append(wantChain, name)
	}
	if len(wantChain) != 3 {
		t.Fatalf("addr2line chain at 0x%x is %v; the test firmware should inline two levels", sc.hashPC, wantChain)
	}
	hash := findTrace(t, traces, wantChain[0])
	if got, want := hash.frames, append(wantChain, "main"); !slices.Equal(got, want) {
		t.Errorf("trace at the inline PC: %v, want %v (addr2line + caller)", got, want)
	}
	for k, v := range map[string]string{"region": "flash", "context": "thread", "thread": "main", "state": "busy"} {
		if hash.labels[k] != v {
			t.Errorf("hash trace label %s = %q, want %q", k, hash.labels[k], v)
		}
	}
	if leaf := findTrace(t, traces, "leaf_add"); !slices.Equal(leaf.frames, []string{"leaf_add", "nonleaf"}) {
		t.Errorf("leaf_add trace %v, want [leaf_add nonleaf]", leaf.frames)
	}
	cs := findTrace(t, traces, "net_checksum")
	if len(cs.frames) != 1 || cs.labels["context"] != "irq 3" || cs.labels["library"] != "libnet.a" {
		t.Errorf("net_checksum trace %+v: want one frame (EXC_RETURN LR), context irq 3, library libnet.a", cs)
	}
	if idle := findTrace(t, traces, "idle_loop"); idle.labels["state"] != "idle" || idle.labels["thread"] != "idle" {
		t.Errorf("idle_loop trace labels %v", idle.labels)
	}
	if sc := findTrace(t, traces, "fast_scale"); sc.labels["region"] != "itcm" {
		t.Errorf("fast_scale region %q, want itcm", sc.labels["region"])
	}
	if v := findTrace(t, traces, "__fast_scale_veneer"); v.labels["region"] != "veneer" {
		t.Errorf("veneer region %q, want veneer", v.labels["region"])
	}

	// -raw: the caller's location is the BL itself, at addr2line's line.
	raw := profiletest.Pprof(t, "-raw", path)
	wantCall := sc.fw.Addr2line(t, sc.leafCallSite)[0] // "nonleaf fw.c:38"
	callLoc := regexp.MustCompile(fmt.Sprintf(`0x%x M=1 (\S+) (\S+):(\d+):`, sc.leafCallSite)).FindStringSubmatch(raw)
	if callLoc == nil {
		t.Fatalf("-raw has no location at the call site 0x%x:\n%s", sc.leafCallSite, raw)
	}
	if got := callLoc[1] + " " + filepath.Base(callLoc[2]) + ":" + callLoc[3]; got != wantCall {
		t.Errorf("call-site location %q, want addr2line's %q", got, wantCall)
	}
	if id := hex.EncodeToString(sc.fw.BuildID(t)); !strings.Contains(raw, id+" [FN][FL][LN][IN]") {
		t.Errorf("-raw mapping lacks build-id %s with every Has* flag:\n%s", id, raw)
	}

	// -top: flat samples per function are the distribution.
	top := topFlat(t, profiletest.Pprof(t, "-top", "-sample_index=samples", path))
	for fn, want := range map[string]int{"mix (inline)": nHash, "leaf_add": nLeaf, "net_checksum": nChecksum,
		"idle_loop": nIdle, "fast_scale": nScale, "__fast_scale_veneer": nVeneer} {
		if top[fn] != want {
			t.Errorf("-top flat %s = %d, want %d", fn, top[fn], want)
		}
	}
	// -tags with the busy focus (pprof gives shares of all samples).
	tags := profiletest.Pprof(t, "-tags", "-sample_index=samples", "-tagfocus=state=busy", path)
	for _, want := range []string{
		fmt.Sprintf("%d (%s): flash", nHash+nLeaf+nChecksum, pctOf(nHash+nLeaf+nChecksum, nTotal)),
		fmt.Sprintf("%d (%s): itcm", nScale, pctOf(nScale, nTotal)),
		fmt.Sprintf("%d (%s): libnet.a", nChecksum, pctOf(nChecksum, nTotal)),
		fmt.Sprintf("%d (%s): irq 3", nChecksum, pctOf(nChecksum, nTotal)),
	} {
		if !strings.Contains(tags, want) {
			t.Errorf("-tags lacks %q:\n%s", want, tags)
		}
	}
}

// pctOf formats a percentage the way pprof -tags does.
func pctOf(n, total int) string {
	return fmt.Sprintf("%5.2f%%", 100*float64(n)/float64(total))
}

// topFlat parses "pprof -top" rows into function → flat value.
func topFlat(t *testing.T, out string) map[string]int {
	t.Helper()
	row := regexp.MustCompile(`^\s*(-?\d+)\s+\S+%\s+\S+%\s+-?\d+\s+\S+%\s+(.+)$`)
	m := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		if g := row.FindStringSubmatch(line); g != nil {
			n, _ := strconv.Atoi(g[1])
			m[strings.TrimSpace(g[2])] = n
		}
	}
	if len(m) == 0 {
		t.Fatalf("no rows in -top output:\n%s", out)
	}
	return m
}

// TestLRAcceptedOnlyWhenItIsTheCaller samples chosen points of the compiled
// test firmware with the LR each would really have there, and checks which
// LRs become callers, by which rule, and at which call site.
func TestLRAcceptedOnlyWhenItIsTheCaller(t *testing.T) {
	fw := profiletest.Build(t)
	callNonleaf := fw.Find(t, "main", `^bl\s.*<nonleaf>`, 0)
	callTail := fw.Find(t, "main", `^bl\s.*<tail>`, 0)
	firstLeafCall := fw.Find(t, "nonleaf", `^bl\s.*<leaf_add>`, 0)
	tailJump := fw.Find(t, "tail", `^b(\.w)?\s.*<leaf_add>`, 0)
	prologue := fw.Find(t, "nonleaf", `^push`, 0)
	veneerCall := fw.Find(t, "main", `^bl\s.*<__itcm_outer_veneer>`, 0)
	if prologue != fw.Entry(t, "nonleaf") {
		t.Fatalf("nonleaf does not start with its push (0x%x); the cases below assume it", prologue)
	}
	for _, c := range []struct {
		name       string
		pc, lr     uint32
		wantCaller uint32 // 0: rejected
		want       LRStats
	}{
		{"leaf: LR live throughout", fw.Entry(t, "leaf_add") + 4, fw.ReturnAddress(t, "nonleaf", firstLeafCall),
			firstLeafCall, LRStats{Records: 1, ByCFI: 1}},
		{"non-leaf before its prologue", fw.Entry(t, "nonleaf"), fw.ReturnAddress(t, "main", callNonleaf),
			callNonleaf, LRStats{Records: 1, ByCFI: 1}},
		{"non-leaf after its prologue, LR still the return address", fw.Next(t, "nonleaf", prologue), fw.ReturnAddress(t, "main", callNonleaf),
			callNonleaf, LRStats{Records: 1, ByCallTarget: 1}},
		{"non-leaf after its own call returned: LR is stale", fw.Next(t, "nonleaf", firstLeafCall), fw.ReturnAddress(t, "nonleaf", firstLeafCall),
			0, LRStats{Records: 1, Stale: 1}},
		{"tail-calling function before its jump", tailJump, fw.ReturnAddress(t, "main", callTail),
			callTail, LRStats{Records: 1, ByCFI: 1}},
		{"tail-called leaf returns to the tail caller's caller", fw.Entry(t, "leaf_add"), fw.ReturnAddress(t, "main", callTail),
			callTail, LRStats{Records: 1, ByCFI: 1}},
		{"ITCM non-leaf after its prologue, called through a veneer", fw.Next(t, "itcm_outer", fw.Find(t, "itcm_outer", `^push`, 0)),
			fw.ReturnAddress(t, "main", veneerCall), veneerCall, LRStats{Records: 1, ByCallTarget: 1}},
		{"EXC_RETURN", fw.Entry(t, "leaf_add"), 0xFFFFFFF9, 0, LRStats{Records: 1, ExcReturn: 1}},
		{"LR not after a call", fw.Entry(t, "leaf_add"), fw.Entry(t, "hash_buf") | 1, 0, LRStats{Records: 1, NoCall: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			capt := fw.Capture(t, sample.FieldPC|sample.FieldLR, records(1, c.pc, c.lr, 0, 0))
			s, err := Symbolize(capt, fw.Image, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if s.LR != c.want {
				t.Errorf("LR stats %+v, want %+v", s.LR, c.want)
			}
			var got uint32
			if callers := s.Stacks[0].Callers; len(callers) > 0 {
				got = callers[0].Addr
			}
			if got != c.wantCaller {
				t.Errorf("caller site 0x%x, want 0x%x", got, c.wantCaller)
			}
		})
	}
}

func TestBuildIDMismatchIsRefusedUnlessForced(t *testing.T) {
	fw := profiletest.Build(t)
	c := fw.Capture(t, sample.FieldPC, records(1, fw.Entry(t, "leaf_add"), 0, 0, 0))
	c.Header.BuildID = []byte{0xde, 0xad, 0xbe, 0xef}
	_, err := Symbolize(c, fw.Image, Options{})
	elfID := hex.EncodeToString(fw.BuildID(t))
	if err == nil || !strings.Contains(err.Error(), "capture build-id deadbeef differs from ELF build-id "+elfID) ||
		!strings.Contains(err.Error(), "give that build's ELF or --build-dir") {
		t.Fatalf("error %v, want one naming both build-ids (deadbeef, %s) and what to give", err, elfID)
	}
	s, err := Symbolize(c, fw.Image, Options{Force: true})
	if err != nil {
		t.Fatalf("--force: %v", err)
	}
	if !slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.Contains(w, "deadbeef") }) {
		t.Errorf("forced read without a warning: %v", s.Warnings)
	}
}

// records is n records at pc with lr, exception exc and thread.
func records(n int, pc, lr uint32, exc uint16, thread uint32) profiletest.Group {
	return profiletest.Group{N: n, PC: pc, LR: lr, Exc: exc, Thread: thread}
}

// TestCxxNamesDemangledWithMangledSystemName: pprof shows the demangled
// name addr2line -C gives, and the profile keeps the mangled one as the
// function's system name.
func TestCxxNamesDemangledWithMangledSystemName(t *testing.T) {
	fw := profiletest.Build(t)
	var mangled string
	for _, f := range fw.Image.Functions() {
		if strings.HasPrefix(f.Name, "_ZN3dsp3Fir") {
			mangled = f.Name
		}
	}
	if mangled == "" {
		t.Fatal("no dsp::Fir member in the test firmware")
	}
	pc := fw.Entry(t, mangled) + 4
	out, err := exec.Command("arm-none-eabi-addr2line", "-f", "-C", "-e", fw.ELF, fmt.Sprintf("0x%x", pc)).Output()
	if err != nil {
		t.Fatal(err)
	}
	demangled := strings.SplitN(string(out), "\n", 2)[0] // "dsp::Fir<4>::step(long)"
	c := fw.Capture(t, sample.FieldPC, records(5, pc, 0, 0, 0))
	s, err := Symbolize(c, fw.Image, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Profile()
	if err != nil {
		t.Fatal(err)
	}
	fn := p.Location[0].Line[0].Function
	if fn.Name != demangled || fn.SystemName != mangled {
		t.Errorf("function %q (system %q), want %q (system %q)", fn.Name, fn.SystemName, demangled, mangled)
	}
	path := filepath.Join(t.TempDir(), "cxx.pb.gz")
	if err := WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
	// pprof's own display drops the parameters: "dsp::Fir<4>::step".
	if top := profiletest.Pprof(t, "-top", "-sample_index=samples", path); !strings.Contains(top, strings.TrimSuffix(demangled, "(long)")) {
		t.Errorf("pprof -top does not show %q:\n%s", demangled, top)
	}
}
