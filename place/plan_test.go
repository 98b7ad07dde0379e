// SPDX-License-Identifier: Apache-2.0

package place

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"math/rand"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/elf/symname"
	"github.com/tcmprof/tcmprof/internal/golden"
	"github.com/tcmprof/tcmprof/internal/texttable"
)

// graphInput is a hand-made image: a boot path that reaches memcpy, a hot
// application path that also calls memcpy, and one function of each kind
// the planner must leave alone. With resetCallsMain the reset handler also
// calls main, which makes the whole application boot-reachable.
func graphInput(resetCallsMain bool) *Input {
	in := &Input{ITCMSize: 64 << 10, ITCMUsed: 0x100, BusySamples: 10000, BootRoots: []string{"Reset_Handler", "no_such_root"}}
	addr := uint32(flashBase)
	fn := func(name, source, section string, samples int) {
		in.Funcs = append(in.Funcs, Func{Key: KeyFor(source, name), Symbol: name, Section: section,
			Object: strings.TrimSuffix(source, ".c") + ".o", Addr: addr, Size: 64, Align: 4, Region: "FLASH", Samples: samples})
		addr += 64
	}
	fn("Reset_Handler", "boot.c", ".text.Reset_Handler", 0)
	fn("SystemInit", "boot.c", ".text.SystemInit", 0)
	fn("data_copy", "boot.c", ".text.data_copy", 0)
	fn("memcpy", "string.c", ".text.memcpy", 900) // hot, but the boot copy needs it
	fn("early_cycle_a", "boot.c", ".text.early_cycle_a", 50)
	fn("early_cycle_b", "boot.c", ".text.early_cycle_b", 50)
	fn("main", "main.c", ".text.startup.main", 20)
	fn("hot", "main.c", ".text.hot", 3000)
	fn("ip_input", "net_ip.c", ".text.ip_input", 2000)
	fn("legacy", "old.c", "", 500) // shares old.o's plain .text with other functions
	fn("sampler_isr", "sampler.c", ".text.sampler_isr", 700)
	in.Funcs[len(in.Funcs)-1].Pin = "sampler code"
	fn("rare", "main.c", ".text.rare", 3)
	fn("rodata_fn", "main.c", ".ramfunc.rodata_fn", 40)
	in.Funcs = append(in.Funcs, Func{Key: KeyFor("itcm.c", "fast"), Symbol: "fast", Section: ".itcm.fast",
		Object: "itcm.o", Addr: 0x40, Size: 32, Align: 4, Region: "ITCM", Samples: 400})
	at := func(name string) uint32 {
		for _, f := range in.Funcs {
			if f.Symbol == name {
				return f.Addr
			}
		}
		panic(name)
	}
	edges := [][2]string{
		{"Reset_Handler", "SystemInit"}, {"Reset_Handler", "data_copy"}, {"data_copy", "memcpy"},
		{"SystemInit", "early_cycle_a"}, {"early_cycle_a", "early_cycle_b"}, {"early_cycle_b", "early_cycle_a"},
		{"main", "hot"}, {"hot", "memcpy"}, {"hot", "ip_input"},
	}
	if resetCallsMain {
		edges = append(edges, [2]string{"Reset_Handler", "main"})
	}
	calls := make(map[string]uint32) // calls so far per caller, for the call sites
	for _, e := range edges {
		calls[e[0]]++
		in.Edges = append(in.Edges, Edge{Caller: at(e[0]), Callee: at(e[1]), Site: at(e[0]) + 4*calls[e[0]]})
	}
	return in
}

func reasons(p *Plan) map[string]string {
	r := make(map[string]string)
	for _, x := range p.Excluded {
		r[x.Symbol] = x.Reason
	}
	return r
}

// TestExclusions checks the transitive boot closure (through a cycle), pins,
// patterns, plain .text, non-.text sections, too few samples, and code that
// already is in ITCM.
// KeyFor splits names as the ELF reader does: "foo.bar" is no clone.
func TestKeyForUsesTheELFCloneRule(t *testing.T) {
	for sym, want := range map[string]FuncKey{
		"foo.bar":             {Source: "s.c", Base: "foo.bar"},
		"foo.constprop.0":     {Source: "s.c", Base: "foo", Clone: ".constprop.0"},
		"foo.isra.0.part.1":   {Source: "s.c", Base: "foo", Clone: ".isra.0.part.1"},
		"foo.bar.constprop.0": {Source: "s.c", Base: "foo.bar", Clone: ".constprop.0"},
	} {
		base, clone := symname.SplitClone(sym)
		if got := KeyFor("s.c", sym); got != want || got.Base != base || got.Clone != clone {
			t.Errorf("KeyFor(%q) = %+v, want %+v", sym, got, want)
		}
	}
}

func TestExclusions(t *testing.T) {
	in := graphInput(false)
	// A budget of exactly hot and main: with room for rare too, the plan
	// would take it as well (TestFillTakesTheSparseFunctions).
	plan, err := Build(in, Options{Budget: 144, Excludes: []string{"net_*.c"}, CurveBudgets: []uint32{0, 64, 1024}})
	if err != nil {
		t.Fatal(err)
	}
	got := reasons(plan)
	want := map[string]string{
		"Reset_Handler": ReasonBoot, "SystemInit": ReasonBoot, "data_copy": ReasonBoot, "memcpy": ReasonBoot,
		"early_cycle_a": ReasonBoot, "early_cycle_b": ReasonBoot,
		"ip_input": ReasonExcluded, "legacy": ReasonNoSection, "sampler_isr": ReasonPinned,
		"rare": ReasonFewSamples, "rodata_fn": ReasonNotText, "fast": ReasonInITCM,
	}
	for name, reason := range want {
		if got[name] != reason {
			t.Errorf("%s: excluded as %q, want %q", name, got[name], reason)
		}
	}
	if len(got) != len(want) {
		t.Errorf("excluded %v, want exactly %v", got, want)
	}
	var planned []string
	for _, e := range plan.Entries {
		planned = append(planned, e.Symbol)
	}
	if fmt.Sprint(planned) != "[hot main]" { // emission order: by section name within main.o
		t.Errorf("planned %v, want [hot main]", planned)
	}
	if len(plan.Warnings) != 1 || !strings.Contains(plan.Warnings[0], "no_such_root") {
		t.Errorf("warnings %q, want one about no_such_root", plan.Warnings)
	}
	// What "tcmprof plan" prints for this plan (the warning is the
	// command's to print, on stderr).
	var sum bytes.Buffer
	if err := WriteSummary(&sum, plan, false); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "summary.golden"), sum.Bytes())
}

// TestBootClosureFollowsEveryPath: with Reset_Handler → main in the graph,
// the whole application is boot-reachable and nothing may move. (Real
// boards list as roots only what runs before the ITCM copy.)
func TestBootClosureFollowsEveryPath(t *testing.T) {
	plan, err := Build(graphInput(true), Options{Budget: -1, CurveBudgets: []uint32{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Entries) != 0 {
		t.Fatalf("planned %v although everything is reachable from Reset_Handler", plan.Entries)
	}
	if r := reasons(plan); r["ip_input"] != ReasonBoot || r["hot"] != ReasonBoot {
		t.Fatalf("reasons %v", r)
	}
}

// TestBootClosureStopsAtTheCopy: a reset handler that calls the ITCM copy
// and then main pins what it calls up to the copy and everything the copy
// calls (memcpy, hot as it is), but not main's application code.
func TestBootClosureStopsAtTheCopy(t *testing.T) {
	in := graphInput(true)
	in.BootCopies = []string{"data_copy"}
	plan, err := Build(in, Options{Budget: -1, CurveBudgets: []uint32{}})
	if err != nil {
		t.Fatal(err)
	}
	r := reasons(plan)
	for _, name := range []string{"Reset_Handler", "SystemInit", "early_cycle_a", "early_cycle_b", "data_copy", "memcpy"} {
		if r[name] != ReasonBoot {
			t.Errorf("%s: excluded as %q, want %q", name, r[name], ReasonBoot)
		}
	}
	var planned []string
	for _, e := range plan.Entries {
		planned = append(planned, e.Symbol)
	}
	sort.Strings(planned)
	// rare, with fewer than MinSamples samples, fills the budget left.
	if fmt.Sprint(planned) != "[hot ip_input main rare]" {
		t.Errorf("planned %v, want main and its callees [hot ip_input main], and rare", planned)
	}
}

// TestFillTakesTheSparseFunctions: a budget that holds every function
// with MinSamples samples or more goes on to the sampled functions below
// (rare, 3 samples), and the plan and its curve point say so; a budget
// without room for them keeps the plan as it was.
func TestFillTakesTheSparseFunctions(t *testing.T) {
	roomy, err := Build(graphInput(false), Options{Budget: 1024, Excludes: []string{"net_*.c"}, CurveBudgets: []uint32{0, 144, 1024}})
	if err != nil {
		t.Fatal(err)
	}
	if got := planned(roomy); fmt.Sprint(got) != "[hot main rare]" || !roomy.Filled || roomy.MinSamples != DefaultMinSamples {
		t.Errorf("planned %v (filled %v, min samples %d), want [hot main rare] filled at %d", got, roomy.Filled, roomy.MinSamples, DefaultMinSamples)
	}
	if r := reasons(roomy); r["rare"] != "" {
		t.Errorf("rare is planned yet excluded as %q", r["rare"])
	}
	for _, c := range roomy.Curve {
		if c.Budget == 1024 && c.Exact.Samples != roomy.Prediction.Samples {
			t.Errorf("the curve at the plan's budget covers %d samples, the plan %d", c.Exact.Samples, roomy.Prediction.Samples)
		}
		if c.Budget == 144 && c.Exact.Functions != 2 {
			t.Errorf("the curve at 144 B plans %d functions, want hot and main", c.Exact.Functions)
		}
	}
	var out strings.Builder
	if err := WriteSummary(&out, roomy, false); err != nil || !strings.Contains(out.String(), "the budget holds every function with 10 samples or more") {
		t.Errorf("the summary does not say the plan was filled (%v):\n%s", err, out.String())
	}
	tight, err := Build(graphInput(false), Options{Budget: 144, Excludes: []string{"net_*.c"}, CurveBudgets: []uint32{144}})
	if err != nil {
		t.Fatal(err)
	}
	if got := planned(tight); fmt.Sprint(got) != "[hot main]" || tight.Filled {
		t.Errorf("at 144 B: planned %v (filled %v), want [hot main] as planned", got, tight.Filled)
	}
}

// TestBootClosureCallSites checks the cut-off rule on small graphs: calls
// are listed in address order from 4 bytes into their caller.
func TestBootClosureCallSites(t *testing.T) {
	for _, tc := range []struct {
		name   string
		copies []string
		edges  [][2]string
		boot   string // the boot-critical functions, sorted
	}{
		{"calls after the copy are free", []string{"copy"},
			[][2]string{{"root", "a"}, {"root", "copy"}, {"root", "b"}, {"a", "a_child"}, {"copy", "copy_child"}, {"b", "b_child"}, {"b", "shared"}, {"copy_child", "shared"}},
			"[a a_child copy copy_child root shared]"},
		{"no copy routine named: every call", nil,
			[][2]string{{"root", "a"}, {"root", "copy"}, {"root", "b"}, {"b", "b_child"}},
			"[a b b_child copy root]"},
		{"the last of several copies", []string{"copy"},
			[][2]string{{"root", "copy"}, {"root", "b"}, {"root", "copy"}, {"root", "a"}},
			"[b copy root]"},
		{"a copy called below a root cuts nothing", []string{"copy"},
			[][2]string{{"root", "a"}, {"root", "b"}, {"a", "copy"}, {"b", "b_child"}},
			"[a b b_child copy root]"},
		{"a reached function calls all it calls", []string{"copy"},
			[][2]string{{"root", "copy"}, {"copy", "a"}, {"a", "copy"}, {"a", "b"}},
			"[a b copy root]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &Input{ITCMSize: 64 << 10, BootRoots: []string{"root"}, BootCopies: tc.copies}
			at := make(map[string]uint32)
			for k, name := range []string{"root", "a", "a_child", "copy", "copy_child", "b", "b_child", "shared"} {
				at[name] = flashBase + 64*uint32(k)
				in.Funcs = append(in.Funcs, Func{Key: KeyFor("m.c", name), Symbol: name, Section: ".text." + name,
					Object: "m.o", Addr: at[name], Size: 64, Align: 4, Region: "FLASH"})
			}
			calls := make(map[string]uint32)
			for _, e := range tc.edges {
				calls[e[0]]++
				in.Edges = append(in.Edges, Edge{Caller: at[e[0]], Callee: at[e[1]], Site: at[e[0]] + 4*calls[e[0]]})
			}
			plan, err := Build(in, Options{Budget: -1, CurveBudgets: []uint32{}})
			if err != nil {
				t.Fatal(err)
			}
			var boot []string
			for _, x := range plan.Excluded {
				if x.Reason == ReasonBoot {
					boot = append(boot, x.Symbol)
				}
			}
			sort.Strings(boot)
			if fmt.Sprint(boot) != tc.boot {
				t.Errorf("boot-critical %v, want %s", boot, tc.boot)
			}
		})
	}
}

// TestPlainTextObject: a function that is all of its object's plain .text
// (newlib's memcpy alone in libc_nano.a:lib_a-memcpy.o) is planned in the
// ld layout, where a pattern naming that object's .text moves exactly it;
// in the Zephyr layout it is reported, since gen_relocate_app.py relocates
// only .text.* sections; and boot code stays boot code either way.
func TestPlainTextObject(t *testing.T) {
	input := func(bootCallsMemcpy bool) *Input {
		in := &Input{ITCMSize: 64 << 10, BusySamples: 1000, BootRoots: []string{"Reset_Handler"}}
		in.Funcs = []Func{
			{Key: KeyFor("boot.c", "Reset_Handler"), Symbol: "Reset_Handler", Section: ".text.Reset_Handler", Object: "boot.o", Addr: flashBase, Size: 64, Align: 4},
			{Key: KeyFor("", "memcpy"), Symbol: "memcpy", Section: ".text", Object: "lib_a-memcpy.o", Archive: "/newlib/libc_nano.a",
				Addr: flashBase + 64, Size: 308, Align: 4, Samples: 600},
		}
		if bootCallsMemcpy {
			in.Edges = []Edge{{Caller: flashBase, Callee: flashBase + 64, Site: flashBase + 4}}
		}
		return in
	}
	for _, tc := range []struct {
		layout          Layout
		bootCallsMemcpy bool
		reason, detail  string // "" reason: planned
	}{
		{LayoutLD, false, "", ""},
		{LayoutZephyr, false, ReasonNotText, "plain .text of /newlib/libc_nano.a:lib_a-memcpy.o: Zephyr's gen_relocate_app.py only relocates sections named .text.*"},
		{LayoutLD, true, ReasonBoot, "reachable from Reset_Handler"},
	} {
		t.Run(fmt.Sprintf("%s boot=%v", tc.layout, tc.bootCallsMemcpy), func(t *testing.T) {
			plan, err := Build(input(tc.bootCallsMemcpy), Options{Budget: -1, Layout: tc.layout, CurveBudgets: []uint32{}})
			if err != nil {
				t.Fatal(err)
			}
			var x *Exclusion
			for k := range plan.Excluded {
				if plan.Excluded[k].Symbol == "memcpy" {
					x = &plan.Excluded[k]
				}
			}
			switch {
			case tc.reason == "" && (x != nil || len(plan.Entries) != 1 || plan.Entries[0].Section != ".text" || plan.Entries[0].Size != 308):
				t.Errorf("memcpy not planned whole: entries %+v, exclusion %+v", plan.Entries, x)
			case tc.reason != "" && (x == nil || x.Reason != tc.reason || !strings.HasPrefix(x.Detail, tc.detail) || len(plan.Entries) != 0):
				t.Errorf("memcpy: exclusion %+v, entries %+v; want %s: %s", x, plan.Entries, tc.reason, tc.detail)
			}
		})
	}
	// One .text per object: two functions claiming the same one is an
	// integrator's mistake (imageinput.Read gives functions that share a
	// section no Section), not two candidates.
	in := input(false)
	in.Funcs = append(in.Funcs, Func{Key: KeyFor("", "memmove"), Symbol: "memmove", Section: ".text", Object: "lib_a-memcpy.o",
		Archive: "/newlib/libc_nano.a", Addr: flashBase + 512, Size: 8, Align: 4})
	if err := in.Validate(); err == nil || !strings.Contains(err.Error(), "share input section .text") {
		t.Errorf("two functions in one object's .text: %v", err)
	}
}

func TestBadInputs(t *testing.T) {
	in := graphInput(false)
	if _, err := Build(in, Options{Excludes: []string{"[unclosed"}}); err == nil {
		t.Error("bad glob accepted")
	}
	if _, err := Build(in, Options{Budget: 1 << 20}); err == nil {
		t.Error("budget beyond free ITCM accepted")
	}
	dup := graphInput(false)
	dup.Funcs[1].Section = dup.Funcs[0].Section
	dup.Funcs[1].Object = dup.Funcs[0].Object
	if err := dup.Validate(); err == nil || !strings.Contains(err.Error(), "share input section") {
		t.Errorf("shared section: %v", err)
	}
	huge := graphInput(false)
	huge.ITCMSize = 1 << 28
	for i := 0; i < 3000; i++ {
		name := fmt.Sprintf("many%d", i)
		huge.Funcs = append(huge.Funcs, Func{Key: KeyFor("m.c", name), Symbol: name, Section: ".text." + name,
			Object: "m.o", Addr: 0x7000_0000 + uint32(i)*16, Size: 16, Align: 4, Samples: 10})
		huge.BusySamples += 10
	}
	if _, err := Build(huge, Options{Budget: -1}); err == nil || !strings.Contains(err.Error(), "MiB") {
		t.Errorf("a 256 MiB ITCM with 3000 candidates: %v", err)
	}
	over := graphInput(false)
	over.BusySamples = 10
	if err := over.Validate(); err == nil {
		t.Error("more function samples than busy samples accepted")
	}
}

// TestRankIntervalsAreWilson: rank's share intervals are the 95 % Wilson
// score intervals (computed by profile.NewShare, not here).
func TestRankIntervalsAreWilson(t *testing.T) {
	// Reference values: Newcombe, Stat. Med. 17 (1998) 857, method 3.
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{{1, 29, 0.0061, 0.1718}, {81, 263, 0.2553, 0.3662}, {15, 148, 0.0624, 0.1605}} {
		in := &Input{ITCMSize: 1 << 10, BusySamples: c.n, Funcs: []Func{{Key: KeyFor("a.c", "f"), Symbol: "f", Size: 4, Samples: c.k}}}
		rows := Rank(in, 0)
		if len(rows) != 1 {
			t.Fatalf("%d rows for one sampled function", len(rows))
		}
		ci := rows[0].ShareCI
		if math.Abs(ci.Lo-c.lo) > 5e-5 || math.Abs(ci.Hi-c.hi) > 5e-5 {
			t.Errorf("Wilson(%d/%d) = [%.4f, %.4f], want [%.4f, %.4f]", c.k, c.n, ci.Lo, ci.Hi, c.lo, c.hi)
		}
		scale := float64(c.n) / 4
		if d := rows[0].DensityCI; d.Lo != ci.Lo*scale || d.Hi != ci.Hi*scale {
			t.Errorf("density interval %v is not the share interval %v scaled by %g", d, ci, scale)
		}
	}
}

func TestRank(t *testing.T) {
	in := graphInput(false)
	rows := Rank(in, 0)
	if rows[0].Func.Symbol != "hot" || rows[1].Func.Symbol != "ip_input" {
		t.Fatalf("order %s, %s", rows[0].Func.Symbol, rows[1].Func.Symbol)
	}
	for _, r := range rows {
		if r.Ranked != (r.Samples >= DefaultMinSamples) {
			t.Errorf("%s: ranked %v with %d samples", r.Func.Symbol, r.Ranked, r.Samples)
		}
		if !(r.ShareCI.Lo <= r.Share && r.Share <= r.ShareCI.Hi) || !(r.DensityCI.Lo <= r.Density && r.Density <= r.DensityCI.Hi) {
			t.Errorf("%s: estimate outside its interval", r.Func.Symbol)
		}
	}
	// The one function below the minimum comes last, under a line that
	// says why; --wide names it with its source.
	for _, tc := range []struct {
		wide bool
		last string
	}{{false, "  rare"}, {true, "  rare (main.c)"}} {
		var buf bytes.Buffer
		if err := WriteRankTable(&buf, rows, tc.wide); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if n := len(lines); n != len(rows)+2 || !strings.HasPrefix(lines[n-2], "  too few samples to rank") || !strings.HasSuffix(lines[n-1], tc.last) {
			t.Errorf("wide %v: table:\n%s", tc.wide, buf.String())
		}
	}
}

// rank writes what report writes the same way: the region's kind, a clone
// as "[clone …]", a share and its interval to one decimal with " %".
func TestRankTableWords(t *testing.T) {
	fn := &Func{Key: KeyFor("app.c", "run_burst.isra.0"), Symbol: "run_burst.isra.0", Object: "app.o", Size: 64,
		Region: "FLASH", Kind: board.KindFlash}
	rows := []RankRow{{Func: fn, Samples: 4934, Share: 0.4934, ShareCI: Interval{Lo: 0.451, Hi: 0.5362}, Density: 77.09, Ranked: true}}
	for _, tc := range []struct {
		wide bool
		want string
	}{
		{false, `  samples   share  size  samples/B  region  function
     4934  49.3 %    64     77.090   flash  run_burst [clone .isra.0]
`},
		{true, `  samples   share  95 % interval  size  samples/B  region  library  function
     4934  49.3 %    45.1–53.6 %    64     77.090   flash    app.o  run_burst [clone .isra.0] (app.c)
`},
	} {
		var buf bytes.Buffer
		if err := WriteRankTable(&buf, rows, tc.wide); err != nil || buf.String() != tc.want {
			t.Errorf("wide %v: table:\n%s\nwant:\n%s", tc.wide, buf.String(), tc.want)
		}
	}
}

func TestResolveToleratesCloneRenumbering(t *testing.T) {
	f := func(source, sym string, size uint32) Func {
		return Func{Key: KeyFor(source, sym), Symbol: sym, Size: size}
	}
	image := []Func{
		f("a.c", "foo", 10), f("b.c", "foo", 20), // two statics named foo
		f("a.c", "bar.constprop.3", 30),
		f("a.c", "baz.isra.1", 40), f("a.c", "baz.isra.2", 44),
		f("", "memcpy", 50),
	}
	entry := func(source, sym string, size uint32) Entry {
		return Entry{Key: KeyFor(source, sym), Symbol: sym, Size: size}
	}
	got := Resolve([]Entry{
		entry("b.c", "foo", 20), entry("a.c", "bar.constprop.0", 30), entry("a.c", "baz.isra.0", 45),
		entry("newlib/memcpy.c", "memcpy", 50), entry("a.c", "gone", 1), entry("a.c", "bar.part.0", 30),
	}, image)
	want := []struct {
		match Match
		sym   string
	}{{MatchExact, "foo"}, {MatchRenumbered, "bar.constprop.3"}, {MatchAmbiguous, "baz.isra.2"},
		{MatchExact, "memcpy"}, {MatchMissing, ""}, {MatchMissing, ""}}
	for k, w := range want {
		sym := ""
		if got[k].Func != nil {
			sym = got[k].Func.Symbol
			if got[k].Func.Key.Source != got[k].Entry.Key.Source && got[k].Func.Key.Source != "" {
				t.Errorf("%d: matched across source files", k)
			}
		}
		if got[k].Match != w.match || sym != w.sym {
			t.Errorf("%s: %s %q, want %s %q", got[k].Entry.Symbol, got[k].Match, sym, w.match, w.sym)
		}
	}
	if got[0].Func != &image[1] {
		t.Error("static foo of b.c resolved to the wrong file")
	}

	plan := &Plan{Entries: []Entry{entry("a.c", "bar.constprop.0", 30), entry("a.c", "gone", 1)},
		Excluded: []Exclusion{{Entry: entry("b.c", "foo", 20), Reason: ReasonBoot, Detail: "reachable from x"}, {Entry: entry("a.c", "old_boot", 8), Reason: ReasonBoot}}}
	plan.Entries[0].Samples = 77
	plan.Excluded[0].Object, plan.Excluded[0].Addr, plan.Excluded[0].Samples = "old/b.o", 0x60000000, 5
	image[1].Object, image[1].Addr = "new/b.o", 0x60001000
	rebound, res := plan.Rebind(image)
	if len(rebound.Entries) != 1 || rebound.Entries[0].Symbol != "bar.constprop.3" || rebound.Entries[0].Samples != 77 ||
		res[1].Match != MatchMissing || len(plan.Entries) != 2 {
		t.Errorf("Rebind gave %+v, %+v", rebound.Entries, res)
	}
	// Exclusions name the rebuilt image's functions too (an old object
	// path next to the new ones would make RenderLD take one object for
	// two); the one gone from the image is dropped.
	if x := rebound.Excluded; len(x) != 1 || x[0].Object != "new/b.o" || x[0].Addr != 0x60001000 || x[0].Samples != 5 ||
		x[0].Reason != ReasonBoot || x[0].Detail != "reachable from x" || len(plan.Excluded) != 2 || plan.Excluded[0].Object != "old/b.o" {
		t.Errorf("Rebind's exclusions %+v (plan's %+v)", rebound.Excluded, plan.Excluded)
	}
}

// TestCurveSVG decodes the SVG as XML and finds every point where CurveXY
// puts it.
func classOf(se xml.StartElement) string {
	for _, a := range se.Attr {
		if a.Name.Local == "class" {
			return a.Value
		}
	}
	return ""
}

func TestCurveSVG(t *testing.T) {
	rngIn := randomInput(rand.New(rand.NewSource(3)), 12, true)
	plan, err := Build(rngIn, Options{Budget: 256, CurveBudgets: []uint32{0, 64, 128, 256}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := RenderCurveSVG(&buf, plan, "test <curve> & co"); err != nil {
		t.Fatal(err)
	}
	type circle struct {
		Class string  `xml:"class,attr"`
		CX    float64 `xml:"cx,attr"`
		CY    float64 `xml:"cy,attr"`
	}
	var found []circle
	dec := xml.NewDecoder(&buf)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "circle" && classOf(se) != "plan-cycles" && classOf(se) != "greedy-cycles" {
			var c circle
			for _, a := range se.Attr {
				switch a.Name.Local {
				case "class":
					c.Class = a.Value
				case "cx":
					fmt.Sscan(a.Value, &c.CX)
				case "cy":
					fmt.Sscan(a.Value, &c.CY)
				}
			}
			found = append(found, c)
		}
	}
	if len(found) != 2*len(plan.Curve) {
		t.Fatalf("%d points, want %d", len(found), 2*len(plan.Curve))
	}
	for i, c := range plan.Curve {
		for _, s := range []struct {
			class string
			share float64
			got   circle
		}{{"greedy", c.Greedy.Share, found[i]}, {"exact", c.Exact.Share, found[len(plan.Curve)+i]}} {
			x, y := CurveXY(c.Budget, s.share, 256)
			if s.got.Class != s.class || math.Abs(s.got.CX-x) > 0.06 || math.Abs(s.got.CY-y) > 0.06 {
				t.Errorf("point %d %s at (%.1f,%.1f), want (%.1f,%.1f)", i, s.class, s.got.CX, s.got.CY, x, y)
			}
		}
		if c.Exact.Samples < c.Greedy.Samples {
			t.Errorf("budget %d: exact %d < greedy %d", c.Budget, c.Exact.Samples, c.Greedy.Samples)
		}
	}
	var table bytes.Buffer
	if err := WriteCurveTable(&table, plan.Curve, 0, false); err != nil || strings.Count(table.String(), "\n") != len(plan.Curve)+1 {
		t.Errorf("curve table:\n%s", table.String())
	}
}

// The curve table fits 80 columns at its widest: a 512 KiB ITCM, plans of
// six-digit sizes, a steep curve, and cycles per unit of a modelled
// capture (the longest headings).
func TestCurveTableFitsEightyColumns(t *testing.T) {
	var curve []CurvePoint
	for b := uint32(0); b <= 512<<10; b += 4 << 10 {
		share := min(1, float64(b)/(4<<10))
		p := Prediction{Samples: 11119, Share: share, StallShare: 0.5 * share}
		p.Bytes = int64(b)
		curve = append(curve, CurvePoint{Budget: b, Exact: p, Greedy: p})
	}
	for _, perUnit := range []float64{0, 1234567} {
		var table bytes.Buffer
		if err := WriteCurveTable(&table, curve, perUnit, false); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(table.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > texttable.Width {
				t.Errorf("cycles per unit %v: a %d-column line %q", perUnit, n, line)
			}
		}
	}
}
