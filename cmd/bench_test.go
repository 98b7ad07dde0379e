// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/loadtest"
	"github.com/tcmprof/tcmprof/loadtest/echotest"
)

// Short steps for tests; the defaults (2 s steps, 3 passes) are for real use.
var shortBench = []string{"--step-time", "0.6s", "--window", "0.2s:0.6s", "--drain", "0.2s", "--passes", "1"}

// TestBenchCompareModels: the before/after loop on two echoes of known
// capacity, 500/s and 1000/s. Each run's files are written and read back
// (JSON by loadtest's reader, CSV by encoding/csv, SVG by encoding/xml), and
// compare reports the speed-ups of what the two files hold and overlays
// both runs. (How close a measured peak comes to a model's capacity depends
// on the host's delays: loadtest's BenchmarkModelPeers.)
func TestBenchCompareModels(t *testing.T) {
	dir := t.TempDir()
	runs := map[string]*loadtest.Run{}
	for _, c := range []struct {
		name     string
		capacity float64
	}{{"slow", 500}, {"fast", 1000}} {
		addr := echotest.StartModel(t, 0, time.Duration(float64(time.Second)/c.capacity), 32).Addr
		base := filepath.Join(dir, c.name)
		args := append([]string{"bench", "udp-echo", addr.String(), "--steps", "250:250:750", "--tail", "1250",
			"--json", base + ".json", "--csv", base + ".csv", "--svg", base + ".svg"}, shortBench...)
		code, stdout, stderr := tcmprof(args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
		}
		t.Logf("%s:\n%s", c.name, stdout)
		if !strings.Contains(stdout, "lossless rate:") || !strings.Contains(stdout, "peak goodput:") {
			t.Errorf("%s: table without a summary:\n%s", c.name, stdout)
		}
		run, err := loadtest.ReadFile(base + ".json")
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Steps) != 4 || run.Label != c.name || run.Target != addr.String() {
			t.Errorf("%s: %d steps, label %q, target %q", c.name, len(run.Steps), run.Label, run.Target)
		}
		runs[c.name] = run
		rows := readCSV(t, base+".csv")
		if len(rows) != 5 || rows[0][0] != "pass" || rows[4][1] != "1250" {
			t.Errorf("%s: CSV %v", c.name, rows)
		}
		if n := countCircles(t, base+".svg"); n != 2*4 {
			t.Errorf("%s: %d points in the SVG, want 8 (4 rates, 2 panels)", c.name, n)
		}
	}
	svg := filepath.Join(dir, "compare.svg")
	code, stdout, stderr := tcmprof("bench", "compare", filepath.Join(dir, "slow.json"), filepath.Join(dir, "fast.json"), "--svg", svg)
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, stderr)
	}
	t.Logf("compare:\n%s", stdout)
	slow, fast := runs["slow"].Summary, runs["fast"].Summary
	m := regexp.MustCompile(`peak goodput .* ([0-9.]+)×`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no peak speed-up in:\n%s", stdout)
	}
	if want := fmt.Sprintf("%.2f", fast.Peak/slow.Peak); m[1] != want {
		t.Errorf("peak speed-up %s, want %s (%.1f/s over %.1f/s)", m[1], want, fast.Peak, slow.Peak)
	}
	// A run with no lossless rate (the lowest rate lost some: a busy host
	// can hold the sender back into a burst the queue drops) has no
	// lossless speed-up.
	if slow.Lossless > 0 && fast.Lossless > 0 && !(slow.LosslessIsHighest && fast.LosslessIsHighest) {
		m := regexp.MustCompile(`lossless rate +(?:≥ )?[0-9]+/s +(?:≥ )?[0-9]+/s +(?:[≥≤] )?([0-9.]+)×`).FindStringSubmatch(stdout)
		if want := fmt.Sprintf("%.2f", fast.Lossless/slow.Lossless); m == nil || m[1] != want {
			t.Errorf("lossless speed-up %v, want %s (%v/s over %v/s) in:\n%s", m, want, fast.Lossless, slow.Lossless, stdout)
		}
	}
	if n := countCircles(t, svg); n != 2*2*4 {
		t.Errorf("%d points in the comparison SVG, want 16 (2 runs, 4 rates, 2 panels)", n)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// countCircles parses an SVG file as XML and counts its data points.
func countCircles(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("%s is not well-formed: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "circle" {
			n++
		}
	}
}

// TestBenchInterrupted: Ctrl-C after the first step still writes the step
// that was measured, and says so.
func TestBenchInterrupted(t *testing.T) {
	addr := echotest.StartEcho(t, false, false)
	stop := make(chan struct{})
	o := &benchUDPEchoOptions{target: addr.String(), opts: loadtest.DefaultOptions(), steps: "100:100:500", window: "0.2s:0.6s", interrupt: stop}
	o.opts.StepTime, o.opts.Passes = 600*time.Millisecond, 1
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	o.json = filepath.Join(t.TempDir(), "partial.json")
	time.AfterFunc(time.Second, func() { close(stop) }) // probe ≈ 0.1 s, one step 0.6 s
	var out, errb bytes.Buffer
	err := runBenchUDPEcho(o, Streams{Out: &out, Err: &errb})
	if err == nil || !regexp.MustCompile(`^interrupted after [1-4] of 5 steps \(those are in the table and files\)$`).MatchString(err.Error()) {
		t.Fatalf("error %v", err)
	}
	run, rerr := loadtest.ReadFile(o.json)
	if rerr != nil || len(run.Steps) == 0 || len(run.Steps) >= 5 {
		t.Fatalf("partial run: %v, %+v", rerr, run)
	}
}

func TestBenchCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"format":"something else"}`), 0o644)
	silent := echotest.StartSilent(t).String()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "udp-echo", silent}, "no rates: give --steps"},
		{[]string{"bench", "udp-echo", silent, "--steps", "100:0:200"}, `--steps "100:0:200": "0" is not a positive rate`},
		{[]string{"bench", "udp-echo", silent, "--tail", "1000,x"}, `--tail "1000,x"`},
		{[]string{"bench", "udp-echo", silent, "--steps", "100:100:200", "--window", "1s:3s"}, "after the end of the 2s step: echoes after the step are late by definition; give a --window that ends within the step"},
		{[]string{"bench", "udp-echo", silent, "--steps", "100:100:200", "--payload", "8"}, "payload 8 bytes"},
		{[]string{"bench", "udp-echo", silent, "--steps", "100:100:200", "--probe-timeout", "300ms"}, "no echo within 300ms"},
		{[]string{"bench", "udp-echo", silent, "--steps", "100:100:200", "--json", filepath.Join(dir, "missing", "x.json")},
			"cannot write " + filepath.Join(dir, "missing", "x.json") + ": no such file or directory\n"},
		{[]string{"bench", "compare", bad, bad}, `format "something else"`},
		{[]string{"bench", "compare", filepath.Join(dir, "none.json"), bad}, "no such file"},
	} {
		code, stdout, stderr := tcmprof(c.args...)
		if code != 1 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and one line with %q", c.args, code, stdout, stderr, c.want)
		}
	}
	if got := withDefaultPort("::1"); got != "[::1]:7" {
		t.Errorf("withDefaultPort(::1) = %q", got)
	}
	if got := withDefaultPort("localhost"); got != "localhost:7" {
		t.Errorf("withDefaultPort(localhost) = %q", got)
	}
}

// TestReadmeBenchWithoutABoard runs the README's board-free try of bench
// udp-echo as written (on free ports instead of 7007 and 7008): socat's
// echo, then the bench, which must print its table.
func TestReadmeBenchWithoutABoard(t *testing.T) {
	armtest.NeedTools(t, "socat")
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var socatLine, benchLine string
	for _, line := range strings.Split(string(readme), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "socat UDP4-LISTEN:7007"):
			socatLine = strings.TrimSuffix(line, " &")
		case strings.HasPrefix(line, "tcmprof bench udp-echo 127.0.0.1:7007"):
			benchLine = line
		}
	}
	if socatLine == "" || benchLine == "" {
		t.Fatalf("README has no board-free bench (socat %q, bench %q)", socatLine, benchLine)
	}
	listen, loop := echotest.FreeUDPPort(t), echotest.FreeUDPPort(t)
	ports := strings.NewReplacer("7007", fmt.Sprint(listen), "7008", fmt.Sprint(loop))
	socat := strings.Fields(ports.Replace(socatLine))
	cmd := exec.Command(socat[0], socat[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	args := strings.Fields(ports.Replace(benchLine))[1:]
	args = append(args, "--probe-timeout", "3s") // socat may take a moment to bind
	code, stdout, stderr := tcmprof(args...)
	if code != 0 || !strings.Contains(stdout, "lossless rate") || !strings.Contains(stdout, "2000") {
		t.Errorf("%s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
	}
}
