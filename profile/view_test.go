// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	pprof "github.com/google/pprof/profile"
)

// syntheticProfile is a two-function profile with an inline frame, built
// directly with the pprof data model (the view does not care who built it).
func syntheticProfile() *pprof.Profile {
	m := &pprof.Mapping{ID: 1, File: "fw.elf", HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true}
	outer := &pprof.Function{ID: 1, Name: "control_loop", SystemName: "control_loop", Filename: "ctl.c"}
	inner := &pprof.Function{ID: 2, Name: "q15_mul", SystemName: "q15_mul", Filename: "dsp.h"}
	loc := &pprof.Location{ID: 1, Mapping: m, Address: 0x60001234,
		Line: []pprof.Line{{Function: inner, Line: 14}, {Function: outer, Line: 57}}}
	return &pprof.Profile{
		SampleType: []*pprof.ValueType{{Type: "samples", Unit: "count"}},
		Mapping:    []*pprof.Mapping{m}, Location: []*pprof.Location{loc}, Function: []*pprof.Function{outer, inner},
		Sample: []*pprof.Sample{{Location: []*pprof.Location{loc}, Value: []int64{42}}},
	}
}

func TestServeAnswersTopAndFlamegraph(t *testing.T) {
	home, tmp := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PPROF_TMPDIR", tmp)

	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	var log strings.Builder
	go func() {
		done <- Serve(ctx, syntheticProfile(), ViewOptions{Addr: "127.0.0.1:0", Log: &log, Ready: func(u string) { urls <- u }})
	}()
	var base string
	select {
	case base = <-urls:
	case err := <-done:
		t.Fatalf("Serve returned before listening: %v", err)
	}
	for _, page := range []string{"top", "flamegraph"} {
		body := get(t, base+page)
		for _, fn := range []string{"control_loop", "q15_mul"} {
			if !strings.Contains(body, fn) {
				t.Errorf("/ui/%s does not mention %s", page, fn)
			}
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context was cancelled")
	}
	// Ready gave the URL: pprof's own announcement of it is not repeated.
	if strings.Contains(log.String(), strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/ui/")) {
		t.Errorf("the log repeats the listening address: %q", log.String())
	}
	for _, dir := range []string{tmp, home} {
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("viewing wrote files under %s: %v", dir, entries)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return string(body)
}

// The disassembly page names the ELF symbol of the function pprof's UI
// asks for: its regexp of the profile's name, clone suffix written back.
func TestDisasmSymbol(t *testing.T) {
	for name, want := range map[string]string{
		"leaf_add":                      "leaf_add",
		"run_burst [clone .isra.0]":     "run_burst.isra.0",
		"f [clone .constprop.0.isra.0]": "f.constprop.0.isra.0",
	} {
		if got := disasmSymbol("^" + regexp.QuoteMeta(name) + "$"); got != want {
			t.Errorf("%q: %q, want %q", name, got, want)
		}
	}
}
