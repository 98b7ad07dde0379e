// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/profile/profiletest"
)

// TestReportOnQEMUDemo profiles the demo firmware end to end: capture in
// QEMU, then report and profile. The demo calibrates net_checksum_hot to
// 15 % of the busy time (the largest share of any function) and idles (k_cpu_idle in the "idle" thread)
// about a quarter of the time.
func TestReportOnQEMUDemo(t *testing.T) {
	dir, elfPath, mapPath, capture := bootAndCapture(t, "demo.tcmcap", "--rate", "10000", "--jitter", "25",
		"--fields", "pc,lr,exc,thread", "--samples", "4000")

	code, stdout, stderr := tcmprof("report", "--elf", elfPath, "--map", mapPath, "--board", "qemu-demo", "--json", capture)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	var doc struct {
		Samples   int
		Busy      struct{ Count, Total int }
		Idle      struct{ Count, Total int }
		Functions []struct {
			Name    string
			Samples int
			Share   struct{ Lo, Hi float64 }
		}
		LR struct{ Records, Accepted int }
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("report --json: %v\n%s", err, stdout)
	}
	t.Logf("busy %d of %d; top %+v; LR %d of %d accepted", doc.Busy.Count, doc.Samples, doc.Functions[0], doc.LR.Accepted, doc.LR.Records)
	// The device may hold fewer than asked for (its buffer is the limit).
	if doc.Samples < 2000 || doc.Idle.Count == 0 || doc.Busy.Count < doc.Samples/2 {
		t.Errorf("busy %d, idle %d of %d: want some idle and mostly busy", doc.Busy.Count, doc.Idle.Count, doc.Samples)
	}
	hot := doc.Functions[0]
	share := float64(hot.Samples) / float64(doc.Busy.Count)
	if hot.Name != "net_checksum_hot" || share < 0.10 || share > 0.20 {
		t.Errorf("top function %s with %.1f %% of busy samples; want net_checksum_hot near 15 %%", hot.Name, 100*share)
	}
	if doc.LR.Records != doc.Samples || doc.LR.Accepted == 0 {
		t.Errorf("LR: %d of %d accepted", doc.LR.Accepted, doc.LR.Records)
	}

	// Issue 26 §9: the text of report, rank and plan fits 80 columns with
	// the demo's real names (net_if_ipv4_select_src_addr, statics of one
	// name in several files, a plain .text Zephyr can not move), every row
	// listed, alone and in a mix.
	build := []string{"--elf", elfPath, "--map", mapPath, "--board", "qemu-demo"}
	for _, args := range [][]string{
		{"report", "--top", "0", capture},
		{"rank", "--top", "0", capture},
		{"plan", capture},
		{"plan", capture, "--format", "zephyr", "-o", filepath.Join(dir, "itcm.cmake")},
		{"report", capture + ":3", capture + ":1"},
		{"rank", capture + ":3", capture + ":1"},
		{"plan", capture + ":3", capture + ":1", "--budget", "8K"},
	} {
		code, stdout, stderr := tcmprof(append(args, build...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		checkFits(t, strings.Join(args, " "), stdout)
	}

	out := filepath.Join(dir, "demo.pb.gz")
	if code, _, stderr := tcmprof("profile", "--elf", elfPath, "--map", mapPath, "--board", "qemu-demo", capture, "-o", out); code != 0 {
		t.Fatalf("profile: exit %d\n%s", code, stderr)
	}
	top := profiletest.Pprof(t, "-top", "-sample_index=samples", "-tagfocus=state=busy", out)
	if !regexp.MustCompile(`(?m)^\s+\d+\s+\S+%\s+\S+%\s+\d+\s+\S+%\s+net_checksum_hot$`).MatchString(top) {
		t.Errorf("pprof -top of the demo profile lacks net_checksum_hot:\n%s", top)
	}
	tags := profiletest.Pprof(t, "-tags", "-sample_index=samples", out)
	for _, want := range []string{"libnet.a", "idle", "busy", "context"} { // this capture records the context
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(tags) {
			t.Errorf("pprof -tags lacks %q:\n%s", want, tags)
		}
	}
}
