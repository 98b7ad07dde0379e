// SPDX-License-Identifier: Apache-2.0

// Command genfw writes and builds a Zephyr-sized firmware ELF for the
// symbolization benchmarks (bench/symbolize.sh), so that no big binary is
// committed.
//
// What makes a real zephyr.elf with networking and USB carry 10-30 MB of
// DWARF is mostly the type graph of the kernel, device and network headers
// that every file includes, repeated in every compile unit, plus the inline
// trees of static inline helpers. The generated firmware has the same
// shape: a header of struct, union and enum types all reachable from one
// context struct that every function takes; a header of static inline
// helpers calling one another (inline chains up to four deep); several
// static libraries ("subsystems") of C files whose functions call helpers
// and functions of other files; and a main that reaches every file so that
// --gc-sections keeps them. Everything is derived from -seed, so two runs
// build the same image.
//
//	go run ./bench/genfw -out DIR
//
// writes DIR/src (sources), DIR/obj (objects and archives) and
// DIR/genfw.elf, and prints its code and DWARF sizes. With -addrs N it also
// writes DIR/addrs.txt: N instruction addresses drawn uniformly (with
// repeats) from the image; with -capture N, DIR/genfw.tcmcap: an N-sample
// PC capture of the image (PCs Zipf-distributed over functions, as in a
// real profile).
package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/sample"
)

type params struct {
	out      string
	libs     int // static libraries
	files    int // C files per library
	funcs    int // global functions per file (each file also has static ones)
	types    int // struct types in the shared header
	inlines  int // static inline helpers in the shared header
	opt      string
	dwarf    int
	seed     uint64
	jobs     int
	addrs    int
	samples  int
	compiler string
}

func main() {
	var p params
	flag.StringVar(&p.out, "out", "", "output directory (required)")
	flag.IntVar(&p.libs, "libs", 8, "static libraries")
	flag.IntVar(&p.files, "files", 40, "C files per library")
	flag.IntVar(&p.funcs, "funcs", 3, "global functions per file")
	flag.IntVar(&p.types, "types", 96, "struct types in the shared header")
	flag.IntVar(&p.inlines, "inlines", 48, "static inline helpers in the shared header")
	flag.StringVar(&p.opt, "opt", "Os", "optimisation level (Zephyr's default is Os)")
	flag.IntVar(&p.dwarf, "dwarf", 4, "DWARF version (Zephyr's default is 4)")
	flag.Uint64Var(&p.seed, "seed", 1, "seed of everything generated")
	flag.IntVar(&p.jobs, "j", runtime.NumCPU(), "parallel compiler jobs")
	flag.IntVar(&p.addrs, "addrs", 0, "also write addrs.txt: this many instruction addresses drawn from the image")
	flag.IntVar(&p.samples, "capture", 0, "also write genfw.tcmcap: a capture of this many PC samples")
	flag.StringVar(&p.compiler, "cc", "arm-none-eabi-gcc", "C cross compiler")
	flag.Parse()
	if p.out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: genfw -out DIR [-addrs N] [-capture N] [flags]")
		os.Exit(2)
	}
	if err := run(&p); err != nil {
		fmt.Fprintln(os.Stderr, "genfw:", err)
		os.Exit(1)
	}
}

func run(p *params) error {
	src := filepath.Join(p.out, "src")
	obj := filepath.Join(p.out, "obj")
	for _, d := range []string{src, obj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	g := newGenerator(p)
	files, err := g.write(src)
	if err != nil {
		return err
	}
	elfPath := filepath.Join(p.out, "genfw.elf")
	if err := build(p, src, obj, files, elfPath); err != nil {
		return err
	}
	insns, err := instructions(elfPath)
	if err != nil {
		return err
	}
	if err := report(elfPath, len(insns)); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(p.seed, 7))
	if p.addrs > 0 {
		var b bytes.Buffer
		for range p.addrs {
			fmt.Fprintf(&b, "0x%x\n", insns[rng.IntN(len(insns))])
		}
		if err := os.WriteFile(filepath.Join(p.out, "addrs.txt"), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if p.samples > 0 {
		return writeCapture(filepath.Join(p.out, "genfw.tcmcap"), elfPath, insns, p.samples, rng)
	}
	return nil
}

// generator writes the sources. Names are what a reader of a profile would
// see: subsystem_file_function.
type generator struct {
	p      *params
	rng    *rand.Rand
	libs   []string
	global [][]string // global function names per file, all files in order
	file   []string   // file base names, in order
}

var libNames = []string{"kernel", "net", "usb", "drivers", "shell", "fs", "bt", "crypto", "logging", "mgmt", "sensor", "display"}

var verbs = []string{"init", "poll", "send", "recv", "queue", "flush", "lookup", "update", "handle", "parse", "emit", "alloc", "free", "reset", "start", "stop", "bind", "ack", "check", "sync"}

func newGenerator(p *params) *generator {
	g := &generator{p: p, rng: rand.New(rand.NewPCG(p.seed, 1))}
	for l := range p.libs {
		name := libNames[l%len(libNames)]
		if l >= len(libNames) {
			name += strconv.Itoa(l / len(libNames))
		}
		g.libs = append(g.libs, name)
		for f := range p.files {
			base := fmt.Sprintf("%s_m%02d", name, f)
			g.file = append(g.file, base)
			var names []string
			for k := range p.funcs {
				names = append(names, fmt.Sprintf("%s_%s%d", base, verbs[(f+k)%len(verbs)], k))
			}
			g.global = append(g.global, names)
		}
	}
	return g
}

// srcFile is one generated C file and the library it goes into ("" for
// main.c, which is linked directly).
type srcFile struct {
	path, lib string
}

func (g *generator) write(dir string) ([]srcFile, error) {
	inc := filepath.Join(dir, "include")
	if err := os.MkdirAll(inc, 0o755); err != nil {
		return nil, err
	}
	for name, text := range map[string]string{
		"fw_types.h":  g.typesHeader(),
		"fw_inline.h": g.inlineHeader(),
		"fw_api.h":    g.apiHeader(),
	} {
		if err := os.WriteFile(filepath.Join(inc, name), []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	var files []srcFile
	for l, lib := range g.libs {
		if err := os.MkdirAll(filepath.Join(dir, lib), 0o755); err != nil {
			return nil, err
		}
		for f := range g.p.files {
			i := l*g.p.files + f
			path := filepath.Join(dir, lib, g.file[i]+".c")
			if err := os.WriteFile(path, []byte(g.cFile(i)), 0o644); err != nil {
				return nil, err
			}
			files = append(files, srcFile{path: path, lib: lib})
		}
	}
	main := filepath.Join(dir, "main.c")
	if err := os.WriteFile(main, []byte(g.mainFile()), 0o644); err != nil {
		return nil, err
	}
	files = append(files, srcFile{path: main})
	if err := os.WriteFile(filepath.Join(dir, "link.ld"), []byte(linkScript), 0o644); err != nil {
		return nil, err
	}
	return files, nil
}

// typesHeader declares p.types structs. Each has scalar members, an
// array, an enum, a union, a callback, pointers to other structs and
// (embedded) one struct declared before it; fw_ctx points at all of them,
// so every file that takes a fw_ctx carries the whole graph in its DWARF,
// as every Zephyr file carries the kernel's and its subsystem's types.
func (g *generator) typesHeader() string {
	var b strings.Builder
	b.WriteString("#ifndef FW_TYPES_H\n#define FW_TYPES_H\n#include <stdint.h>\n#include <stddef.h>\n\n")
	n := g.p.types
	for k := range n {
		fmt.Fprintf(&b, "struct fw_t%d;\n", k)
	}
	for k := range n {
		fmt.Fprintf(&b, "enum fw_t%d_state { FW_T%d_IDLE, FW_T%d_BUSY, FW_T%d_DONE, FW_T%d_ERR = %d };\n", k, k, k, k, k, 16+k)
		fmt.Fprintf(&b, "typedef void (*fw_t%d_cb)(struct fw_t%d *self, uint32_t ev);\n", k, k)
		fmt.Fprintf(&b, "struct fw_t%d {\n\tuint32_t a;\n\tuint16_t b;\n\tuint8_t flags_%d;\n\tint8_t prio;\n", k, k)
		fmt.Fprintf(&b, "\tenum fw_t%d_state state;\n\tfw_t%d_cb cb;\n\tchar name[%d];\n", k, k, 8+k%5*4)
		fmt.Fprintf(&b, "\tunion { uint32_t word; uint8_t bytes[4]; struct { uint16_t lo, hi; } half; } u%d;\n", k)
		for j := range 2 + k%3 {
			fmt.Fprintf(&b, "\tstruct fw_t%d *link%d;\n", g.rng.IntN(n), j)
		}
		if k > 0 {
			fmt.Fprintf(&b, "\tstruct fw_t%d inner;\n", g.rng.IntN(k))
		}
		fmt.Fprintf(&b, "\tuint32_t stats_%d[%d];\n};\n", k, 2+k%4)
	}
	b.WriteString("struct fw_ctx {\n")
	for k := range n {
		fmt.Fprintf(&b, "\tstruct fw_t%d *t%d;\n", k, k)
	}
	b.WriteString("};\n#endif\n")
	return b.String()
}

// inlineHeader defines p.inlines static inline helpers; helper k may call
// one helper before it, so inline chains form (bounded at four deep).
func (g *generator) inlineHeader() string {
	var b strings.Builder
	b.WriteString("#ifndef FW_INLINE_H\n#define FW_INLINE_H\n#include \"fw_types.h\"\n\n")
	depth := make([]int, g.p.inlines)
	for k := range g.p.inlines {
		t1, t2 := g.rng.IntN(g.p.types), g.rng.IntN(g.p.types)
		attr := ""
		if k%3 == 0 {
			attr = " __attribute__((always_inline))"
		}
		fmt.Fprintf(&b, "static inline%s uint32_t fw_inl%d(struct fw_ctx *ctx, uint32_t x)\n{\n", attr, k)
		fmt.Fprintf(&b, "\tstruct fw_t%d *p = ctx->t%d;\n", t1, t1)
		fmt.Fprintf(&b, "\tuint32_t v = x ^ p->a;\n")
		fmt.Fprintf(&b, "\tif (p->state == FW_T%d_BUSY) {\n\t\tv += p->u%d.half.lo;\n\t}\n", t1, t1)
		callee := -1
		if k > 0 && g.rng.IntN(3) > 0 {
			c := g.rng.IntN(k)
			if depth[c] < 3 {
				callee, depth[k] = c, depth[c]+1
			}
		}
		if callee >= 0 {
			fmt.Fprintf(&b, "\tv = fw_inl%d(ctx, v + %d);\n", callee, k)
		}
		fmt.Fprintf(&b, "\tctx->t%d->stats_%d[0] += v & 0x%x;\n", t2, t2, 1+g.rng.IntN(255))
		fmt.Fprintf(&b, "\treturn v * %d + ctx->t%d->b;\n}\n\n", 3+2*g.rng.IntN(20), t2)
	}
	b.WriteString("#endif\n")
	return b.String()
}

func (g *generator) apiHeader() string {
	var b strings.Builder
	b.WriteString("#ifndef FW_API_H\n#define FW_API_H\n#include \"fw_types.h\"\n\n")
	for i, names := range g.global {
		for _, n := range names {
			fmt.Fprintf(&b, "uint32_t %s(struct fw_ctx *ctx, uint32_t x);\n", n)
		}
		fmt.Fprintf(&b, "uint32_t %s_entry(struct fw_ctx *ctx, uint32_t x);\n", g.file[i])
	}
	b.WriteString("void fw_fault(struct fw_ctx *ctx, uint32_t code);\n#endif\n")
	return b.String()
}

// cFile is file i: one or two static functions, p.funcs global ones
// calling helpers, statics and other files' functions, and the file's
// entry.
func (g *generator) cFile(i int) string {
	var b strings.Builder
	b.WriteString("#include \"fw_types.h\"\n#include \"fw_inline.h\"\n#include \"fw_api.h\"\n\n")
	base := g.file[i]
	nStatic := 1 + g.rng.IntN(2)
	for s := range nStatic {
		t := g.rng.IntN(g.p.types)
		fmt.Fprintf(&b, "static uint32_t %s_local%d(struct fw_ctx *ctx, uint32_t x)\n{\n", base, s)
		fmt.Fprintf(&b, "\tstruct fw_t%d *p = ctx->t%d;\n\tuint32_t acc = x;\n", t, t)
		fmt.Fprintf(&b, "\tfor (unsigned i = 0; i < (x & 7u); i++) {\n\t\tacc = fw_inl%d(ctx, acc + i);\n\t\tp->stats_%d[i & 1] ^= acc;\n\t}\n", g.rng.IntN(g.p.inlines), t)
		fmt.Fprintf(&b, "\tif (p->cb != NULL) {\n\t\tp->cb(p, acc);\n\t}\n\treturn acc + p->name[%d];\n}\n\n", g.rng.IntN(8))
	}
	for k, name := range g.global[i] {
		t := g.rng.IntN(g.p.types)
		fmt.Fprintf(&b, "uint32_t %s(struct fw_ctx *ctx, uint32_t x)\n{\n", name)
		fmt.Fprintf(&b, "\tstruct fw_t%d *self = ctx->t%d;\n\tuint32_t acc = fw_inl%d(ctx, x);\n", t, t, g.rng.IntN(g.p.inlines))
		fmt.Fprintf(&b, "\tif (__builtin_expect(acc == 0x%xu, 0)) {\n\t\tfw_fault(ctx, %d);\n\t\treturn 0;\n\t}\n", g.rng.Uint32()|1, i*100+k)
		other := g.global[g.rng.IntN(len(g.global))]
		fmt.Fprintf(&b, "\tswitch (self->state) {\n\tcase FW_T%d_BUSY:\n\t\tacc = fw_inl%d(ctx, acc ^ %du);\n\t\tbreak;\n", t, g.rng.IntN(g.p.inlines), g.rng.Uint32()%1000)
		fmt.Fprintf(&b, "\tcase FW_T%d_DONE:\n\t\tacc = %s(ctx, acc);\n\t\tbreak;\n\tdefault:\n\t\tbreak;\n\t}\n", t, other[g.rng.IntN(len(other))])
		fmt.Fprintf(&b, "\twhile (acc > self->a) {\n\t\tacc = %s_local%d(ctx, acc >> 1);\n\t\tself->u%d.word += acc;\n\t}\n", base, g.rng.IntN(nStatic), t)
		fmt.Fprintf(&b, "\tself->state = (enum fw_t%d_state)(acc & 3u);\n\treturn acc + self->b;\n}\n\n", t)
	}
	fmt.Fprintf(&b, "uint32_t %s_entry(struct fw_ctx *ctx, uint32_t x)\n{\n\tuint32_t acc = x;\n", base)
	for _, name := range g.global[i] {
		fmt.Fprintf(&b, "\tacc += %s(ctx, acc);\n", name)
	}
	b.WriteString("\treturn acc;\n}\n")
	return b.String()
}

func (g *generator) mainFile() string {
	var b strings.Builder
	b.WriteString("#include \"fw_types.h\"\n#include \"fw_api.h\"\n\n")
	b.WriteString("static struct fw_ctx the_ctx;\nvolatile uint32_t fw_last_fault;\n\n")
	b.WriteString("void fw_fault(struct fw_ctx *ctx, uint32_t code)\n{\n\t(void)ctx;\n\tfw_last_fault = code;\n}\n\n")
	b.WriteString("static uint32_t (*const entries[])(struct fw_ctx *, uint32_t) = {\n")
	for _, f := range g.file {
		fmt.Fprintf(&b, "\t%s_entry,\n", f)
	}
	b.WriteString("};\n\nvoid _start(void)\n{\n\tuint32_t acc = 1;\n\tfor (;;) {\n")
	b.WriteString("\t\tfor (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {\n\t\t\tacc = entries[i](&the_ctx, acc);\n\t\t}\n\t}\n}\n")
	return b.String()
}

// linkScript puts code in flash at 0x60000000 and data in DTCM, like the
// Teensy 4.1.
const linkScript = `MEMORY
{
	DTCM (rw)  : ORIGIN = 0x20000000, LENGTH = 512K
	FLASH (rx) : ORIGIN = 0x60000000, LENGTH = 8M
}
ENTRY(_start)
SECTIONS
{
	.text : { *(.text .text.*) *(.rodata .rodata.*) . = ALIGN(4); } > FLASH
	.ARM.exidx : { *(.ARM.exidx*) } > FLASH
	.data : { *(.data .data.*) } > DTCM AT > FLASH
	.bss (NOLOAD) : { *(.bss .bss.* COMMON) . = ALIGN(8); end = .; } > DTCM
}
`

var arch = []string{"-mcpu=cortex-m7", "-mthumb", "-mfpu=fpv5-d16", "-mfloat-abi=hard"}

// build compiles every file (p.jobs at a time), archives each library and
// links.
func build(p *params, src, obj string, files []srcFile, out string) error {
	cflags := append(append([]string{}, arch...), "-"+p.opt, fmt.Sprintf("-gdwarf-%d", p.dwarf),
		"-ffunction-sections", "-fdata-sections", "-I", filepath.Join(src, "include"), "-c")
	objs := make([]string, len(files))
	errs := make([]error, len(files))
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(p.jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				f := files[i]
				objs[i] = filepath.Join(obj, strings.TrimSuffix(filepath.Base(f.path), ".c")+".o")
				errs[i] = runTool(p.compiler, append(cflags, f.path, "-o", objs[i])...)
			}
		}()
	}
	for i := range files {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	members := map[string][]string{}
	var direct []string
	for i, f := range files {
		if f.lib == "" {
			direct = append(direct, objs[i])
		} else {
			members[f.lib] = append(members[f.lib], objs[i])
		}
	}
	args := append(append([]string{}, arch...), "--specs=nano.specs", "--specs=nosys.specs", "-nostartfiles",
		"-T", filepath.Join(src, "link.ld"), "-Wl,--gc-sections", "-Wl,--build-id", "-o", out)
	args = append(args, direct...)
	args = append(args, "-Wl,--start-group")
	libs := make([]string, 0, len(members))
	for lib := range members {
		libs = append(libs, lib)
	}
	sort.Strings(libs)
	for _, lib := range libs {
		a := filepath.Join(obj, "lib"+lib+".a")
		os.Remove(a)
		if err := runTool("arm-none-eabi-ar", append([]string{"rcs", a}, members[lib]...)...); err != nil {
			return err
		}
		args = append(args, a)
	}
	args = append(args, "-lc", "-Wl,--end-group")
	return runTool(p.compiler, args...)
}

func runTool(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v\n%s", name, err, out)
	}
	return nil
}

// instructions lists every instruction address objdump disassembles
// (literal pools, shown as .word, excluded).
func instructions(path string) ([]uint32, error) {
	out, err := exec.Command("arm-none-eabi-objdump", "-d", path).Output()
	if err != nil {
		return nil, fmt.Errorf("arm-none-eabi-objdump: %v", err)
	}
	var addrs []uint32
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 3 || !strings.HasSuffix(f[0], ":") || strings.HasPrefix(f[2], ".") {
			continue
		}
		a, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(f[0], ":")), 16, 32)
		if err != nil {
			continue
		}
		addrs = append(addrs, uint32(a))
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("objdump found no instructions in %s", path)
	}
	return addrs, nil
}

// report prints the image's code and DWARF sizes.
func report(path string, insns int) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var code, debug uint64
	for _, s := range f.Sections {
		switch {
		case strings.HasPrefix(s.Name, ".debug_"):
			debug += s.Size
		case s.Flags&elf.SHF_EXECINSTR != 0:
			code += s.Size
		}
	}
	fmt.Printf("%s: %d KB of code, %d instructions, %.1f MB of DWARF\n", path, code>>10, insns, float64(debug)/(1<<20))
	return nil
}

// writeCapture writes an n-sample PC-only capture of the image at elfPath
// (a full demo buffer is 16,384 PC samples): functions are drawn
// Zipf-distributed (a few hot, a long tail) in a shuffled order, and each
// sample's PC uniformly among the function's instructions.
func writeCapture(path, elfPath string, insns []uint32, n int, rng *rand.Rand) error {
	f, err := elf.Open(elfPath)
	if err != nil {
		return err
	}
	defer f.Close()
	id, err := image.BuildID(f)
	if err != nil {
		return err
	}
	syms, err := f.Symbols()
	if err != nil {
		return err
	}
	sort.Slice(insns, func(i, j int) bool { return insns[i] < insns[j] })
	var funcs [][]uint32 // instruction addresses of each function
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 {
			continue
		}
		lo := uint32(s.Value) &^ 1
		i := sort.Search(len(insns), func(i int) bool { return insns[i] >= lo })
		j := sort.Search(len(insns), func(i int) bool { return insns[i] >= lo+uint32(s.Size) })
		if j > i {
			funcs = append(funcs, insns[i:j])
		}
	}
	rng.Shuffle(len(funcs), func(i, j int) { funcs[i], funcs[j] = funcs[j], funcs[i] })
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(len(funcs)-1))
	c := &sample.Capture{Header: sample.Header{
		ProtoMajor: 1, Fields: sample.FieldPC,
		CPUHz: 600_000_000, TimerHz: 24_000_000, IntervalTicks: 2400, BuildID: id,
	}}
	c.Records = make([]sample.Record, n)
	for i := range c.Records {
		fn := funcs[zipf.Uint64()]
		c.Records[i] = sample.Record{Index: uint32(i), PC: fn[rng.IntN(len(fn))]}
	}
	if err := c.Validate(); err != nil {
		return err
	}
	return sample.WriteFile(path, c)
}
