// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/profile"
	"github.com/tcmprof/tcmprof/profile/profiletest"
	"github.com/tcmprof/tcmprof/sample"
)

// profileFixture is the profile package's test firmware with a capture of
// 300 busy samples (hash_buf 200, leaf_add 100) and 100 idle ones.
type profileFixture struct {
	fw      *profiletest.Firmware
	capture string // .tcmcap path
}

func newProfileFixture(t *testing.T) profileFixture {
	fw := profiletest.Build(t)
	c := fw.Capture(t, sample.FieldPC|sample.FieldThread,
		profiletest.Group{N: 200, PC: fw.Find(t, "hash_buf", `^eor`, 0), Thread: 1},
		profiletest.Group{N: 100, PC: fw.Entry(t, "leaf_add"), Thread: 1},
		profiletest.Group{N: 100, PC: fw.Entry(t, "idle_loop"), Thread: 2},
	)
	path := filepath.Join(t.TempDir(), "run.tcmcap")
	if err := sample.WriteFile(path, c); err != nil {
		t.Fatal(err)
	}
	return profileFixture{fw, path}
}

func TestProfileReportDiffCommands(t *testing.T) {
	fx := newProfileFixture(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "run.pb.gz")
	if code, _, stderr := tcmprof("profile", "--elf", fx.fw.ELF, "--map", fx.fw.MapPath, fx.capture, "-o", out); code != 0 {
		t.Fatalf("profile: exit %d: %s", code, stderr)
	}
	top := profiletest.Pprof(t, "-top", "-sample_index=samples", "-tagfocus=state=busy", out)
	if !regexp.MustCompile(`(?m)^\s+200\s.*mix \(inline\)$`).MatchString(top) || !regexp.MustCompile(`(?m)^\s+100\s.*leaf_add$`).MatchString(top) {
		t.Errorf("pprof -top of the written profile:\n%s", top)
	}

	code, stdout, stderr := tcmprof("report", "--elf", fx.fw.ELF, fx.capture, "--json")
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	var doc struct {
		Busy      struct{ Count, Total int }
		Functions []struct {
			Name    string
			Samples int
		}
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("report --json: %v\n%s", err, stdout)
	}
	if doc.Busy.Count != 300 || doc.Busy.Total != 400 || doc.Functions[0].Name != "hash_buf" || doc.Functions[0].Samples != 200 {
		t.Errorf("report --json: %+v", doc)
	}
	// diff of the capture against its own profile: nothing changed (the
	// tables are pinned by TestGoldenOutputs).
	base := filepath.Join(dir, "base.pb.gz")
	code, stdout, stderr = tcmprof("diff", "--json", "--elf", fx.fw.ELF, fx.capture, out, "-o", base)
	if code != 0 {
		t.Fatalf("diff: exit %d: %s", code, stderr)
	}
	var d struct{ Functions []struct{ Delta float64 } }
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || len(d.Functions) != 2 || d.Functions[0].Delta != 0 || d.Functions[1].Delta != 0 {
		t.Errorf("diff of a run with itself (%v):\n%s", err, stdout)
	}
	if _, err := os.Stat(base); err != nil {
		t.Errorf("diff -o: %v", err)
	}
}

func TestProfileCommandErrors(t *testing.T) {
	fx := newProfileFixture(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no ELF", []string{"profile", fx.capture, "-o", filepath.Join(t.TempDir(), "x.pb.gz")}, "give --elf or --build-dir"},
		{"not a build dir", []string{"report", "--build-dir", t.TempDir(), fx.capture}, "no zephyr/ directory"},
		{"capture is garbage", []string{"report", "--elf", fx.fw.ELF, fx.fw.ELF}, "capture"},
		{"bad idle glob", []string{"report", "--elf", fx.fw.ELF, "--idle-func", "[", fx.capture}, "idle pattern"},
		{"bad cache", []string{"report", "--elf", fx.fw.ELF, "--icache-size", "1000", fx.capture}, "cache geometry"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := tcmprof(c.args...)
			if code == 0 || !strings.HasPrefix(stderr, "tcmprof: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want a one-line error mentioning %q", code, stderr, c.want)
			}
		})
	}
}

func TestProfileBuildDirLayout(t *testing.T) {
	fx := newProfileFixture(t)
	bd := t.TempDir()
	z := filepath.Join(bd, "zephyr")
	os.MkdirAll(z, 0o755)
	for src, dst := range map[string]string{fx.fw.ELF: "zephyr.elf", fx.fw.MapPath: "zephyr.map"} {
		b, _ := os.ReadFile(src)
		os.WriteFile(filepath.Join(z, dst), b, 0o644)
	}
	os.WriteFile(filepath.Join(z, ".config"), []byte("CONFIG_BOARD=\"qemu-demo\"\n"), 0o644)
	code, stdout, stderr := tcmprof("report", "--build-dir", bd, fx.capture)
	if code != 0 || !strings.Contains(stdout, "busy by library") || !regexp.MustCompile(`(?m)^\s+300\s.*\sflash$`).MatchString(stdout) {
		t.Errorf("report --build-dir (map found, code in flash): exit %d\n%s%s", code, stdout, stderr)
	}
	// A devicetree in the build directory decides the regions: this one
	// calls the flash code's addresses ITCM.
	dts, err := os.ReadFile(filepath.Join("..", "profile", "testdata", "remapped.dts"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(z, "zephyr.dts"), dts, 0o644)
	code, stdout, stderr = tcmprof("report", "--build-dir", bd, fx.capture)
	if code != 0 || !regexp.MustCompile(`(?m)^\s+300\s.*\sitcm$`).MatchString(stdout) {
		t.Errorf("report --build-dir with zephyr.dts: exit %d\n%s%s", code, stdout, stderr)
	}
}

// syncBuffer is a bytes.Buffer safe for the server goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestViewServesACapture(t *testing.T) {
	fx := newProfileFixture(t)
	t.Setenv("HOME", t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	o := &viewOptions{path: fx.capture, ctx: ctx, addr: "127.0.0.1:0", noBrowser: true, input: inputOptions{elfPath: fx.fw.ELF}}
	done := make(chan error, 1)
	go func() { done <- runView(o, Streams{Out: &out, Err: &errOut}) }()
	url := regexp.MustCompile(`http://\S+/ui/`)
	deadline := time.Now().Add(10 * time.Second)
	for url.FindString(out.String()) == "" {
		if time.Now().After(deadline) {
			t.Fatalf("view printed no URL: %q", out.String())
		}
		select {
		case err := <-done:
			t.Fatalf("view returned: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	resp, err := http.Get(url.FindString(out.String()) + "top")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "leaf_add") {
		t.Errorf("/ui/top: %s", resp.Status)
	}
	// Disassembly: not pprof's (it decodes Thumb as ARM) but the command
	// that does it, which objdump runs.
	resp, err = http.Get(url.FindString(out.String()) + "disasm?f=" + neturl.QueryEscape(`^leaf_add$`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	objdump := "arm-none-eabi-objdump -d -l --disassemble=leaf_add " + fx.fw.ELF
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Disassembly is not available") || !strings.Contains(string(body), objdump) {
		t.Errorf("/ui/disasm: %s\n%s", resp.Status, body)
	}
	if listing, err := exec.Command("sh", "-c", objdump).Output(); err != nil || !strings.Contains(string(listing), "<leaf_add>:") {
		t.Errorf("%s: %v\n%s", objdump, err, listing)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("view after cancel: %v", err)
	}
	// The URL is said once, and pprof's refusals to open objects not at all.
	if all := out.String() + errOut.String(); strings.Count(all, strings.TrimSuffix(url.FindString(all), "/ui/")) != 1 ||
		strings.Contains(all, "object files are not opened") {
		t.Errorf("view's output:\n%s", all)
	}
}

// cloneBuild links testdata/clone as the profile package's test firmware
// is laid out, once, cached in $TMPDIR (armtest.Build).
var cloneBuild = &armtest.Build{
	Prefix: "tcmprof-cmd-clone",
	Src:    filepath.Join("testdata", "clone"),
	Recipe: []string{"profile_test.go", profiletest.LinkerScript},
	Make: func(src, out string) error {
		return armtest.Run(out, "arm-none-eabi-gcc", "-mcpu=cortex-m7", "-mthumb", "-g", "-O2", "-ffunction-sections",
			"-nostartfiles", "-nostdlib", "-T", profiletest.LinkerScript, "-Wl,--build-id", "-o", "clone.elf", filepath.Join(src, "clone.c"))
	},
}

// A capture and the profile written from it are one run: diff between them
// finds no change, and names each function one way on both sides, a GCC
// clone (testdata/clone: run_burst, specialised for its one caller) as
// "run_burst [clone .constprop.0]", not also as run_burst.
func TestDiffCaptureAgainstItsProfile(t *testing.T) {
	elfPath := filepath.Join(cloneBuild.Dir(t), "clone.elf")
	dir := t.TempDir()
	img, err := image.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	var clone, main *image.Function
	for _, f := range img.Functions() {
		switch {
		case f.Base == "run_burst" && f.Clone != "":
			clone = f
		case f.Name == "main":
			main = f
		}
	}
	if clone == nil || main == nil {
		t.Fatalf("GCC made no clone of run_burst: %v", img.Functions())
	}
	fw := &profiletest.Firmware{ELF: elfPath}
	capture := writeGroups(t, fw, dir, "run.tcmcap", profiletest.Group{N: 300, PC: clone.Addr, Thread: 1},
		profiletest.Group{N: 100, PC: main.Addr, Thread: 1})
	pb := filepath.Join(dir, "run.pb.gz")
	if code, _, stderr := tcmprof("profile", "--elf", elfPath, capture, "-o", pb); code != 0 {
		t.Fatalf("profile: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := tcmprof("diff", "--json", "--elf", elfPath, capture, pb)
	if code != 0 {
		t.Fatalf("diff: exit %d: %s", code, stderr)
	}
	var d struct{ Functions []profile.Change }
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range d.Functions {
		names = append(names, c.Name)
		if c.Delta != 0 || c.Before.Count != c.After.Count {
			t.Errorf("%s changed: %+v", c.Name, c)
		}
	}
	slices.Sort(names)
	if want := []string{"main", "run_burst [clone " + clone.Clone + "]"}; !slices.Equal(names, want) {
		t.Errorf("functions %q, want %q", names, want)
	}
}
