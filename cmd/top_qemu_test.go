// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/sample"
)

// End to end on the demo firmware in QEMU: top in batch mode for a few
// intervals agrees with report on the capture of the same run; then the
// emulator goes away under a running top, which says so in one line, keeps
// what it received and exits non-zero.
func TestTopQEMU(t *testing.T) {
	dir := t.TempDir()
	elfPath, mapPath, inst := bootDemo(t)
	input := []string{"--port", inst.PTY, "--elf", elfPath, "--map", mapPath, "--board", "qemu-demo"}

	t.Run("batch agrees with report", func(t *testing.T) {
		out := filepath.Join(dir, "top.tcmcap")
		args := append([]string{"top"}, input...)
		args = append(args, "--rate", "10000", "--fields", "pc,lr,ctx", "--json", "-n", "4", "--interval", "1s",
			"--cumulative", "--inline", "--top", "0", "--quiet", "-o", out)
		code, stdout, stderr := tcmprof(args...)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		blocks := parseTopJSON(t, stdout)
		if len(blocks) != 4 {
			t.Fatalf("%d blocks:\n%s", len(blocks), stdout)
		}
		last := blocks[3]
		if last.Samples < 2000 || last.Lost.Device+last.Lost.Link != 0 || len(last.Functions) < 10 {
			t.Errorf("last block: %d samples, lost %+v, %d functions", last.Samples, last.Lost, len(last.Functions))
		}
		names := map[string]bool{}
		for _, c := range last.Contexts {
			names[c.Name] = true
		}
		if !names["udp_echo"] || !names["net_rx"] {
			t.Errorf("contexts without the demo's thread names: %+v", last.Contexts)
		}

		rep := reportOf(t, out, "--elf", elfPath, "--map", mapPath, "--board", "qemu-demo")
		// top's last block is the run up to its fourth second; the
		// capture has the rest of the stream too.
		if rep.Samples < last.Samples {
			t.Errorf("report has %d samples, top showed %d", rep.Samples, last.Samples)
		}
		busy := float64(rep.Busy.Count) / float64(rep.Samples)
		topBusy := float64(last.Busy.Count) / float64(last.Samples)
		t.Logf("busy: top %.2f %% of %d, report %.2f %% of %d; hottest: top %s %d, report %s %d",
			100*topBusy, last.Samples, 100*busy, rep.Samples, last.Functions[0].Name, last.Functions[0].Samples,
			rep.Functions[0].Name, rep.Functions[0].Samples)
		if !withinBinomial(topBusy, last.Samples, busy) {
			t.Errorf("busy %.2f %% of %d; report %.2f %%", 100*topBusy, last.Samples, 100*busy)
		}
		hot := rep.Functions[0]
		if last.Functions[0].Name != hot.Name || hot.Name != "net_checksum_hot" {
			t.Errorf("hottest function: top %s, report %s", last.Functions[0].Name, hot.Name)
		}
		share := float64(hot.Samples) / float64(rep.Busy.Count)
		if got := float64(last.Functions[0].Samples) / float64(last.Busy.Count); !withinBinomial(got, last.Busy.Count, share) {
			t.Errorf("%s: %.2f %% of busy samples in top, %.2f %% in report", hot.Name, 100*got, 100*share)
		}
	})

	t.Run("unplug", func(t *testing.T) {
		out, raw := filepath.Join(dir, "cut.tcmcap"), filepath.Join(dir, "cut.raw")
		args := append([]string{"top"}, input...)
		args = append(args, "-b", "--interval", "300ms", "--quiet", "--raw", raw, "-o", out)
		p, stderr := startTcmprof(t, args...)
		waitFor(t, "the stream", func() bool {
			fi, err := os.Stat(raw)
			return err == nil && fi.Size() > 20000
		})
		inst.Stop()
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("exit 0 after the emulator went away: %s", stderr)
			}
		case <-time.After(30 * time.Second):
			p.Process.Kill()
			t.Fatalf("top still runs after the emulator went away: %s", stderr)
		}
		// The summary of the file, then one line: why it ended.
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], out+": ") ||
			!strings.HasPrefix(lines[1], "tcmprof: device disconnected") || !strings.Contains(lines[1], out+" holds the ") {
			t.Errorf("stderr:\n%s", stderr)
		}
		c, err := sample.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Records) < 1000 || c.Header.Mode != sample.ModeStream {
			t.Errorf("%d records, header %+v", len(c.Records), c.Header)
		}
		checkPCsWithAddr2line(t, elfPath, c.Records)
	})
}
