// SPDX-License-Identifier: Apache-2.0

// Package qemutest builds the QEMU demo firmware (firmware-sampler/qemu)
// and boots it for the tests of other packages: one skip rule (Need: not
// under -short, nor without the toolchain and the emulator, naming the
// Debian package to install), builds cached across test runs (Demo) and
// an emulator stopped when the test ends (Boot). The qemu package's own
// tests cannot import it and use internal/armtest directly.
package qemutest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/firmware-sampler/qemu"
	"github.com/tcmprof/tcmprof/internal/armtest"
)

// Need skips a test that boots the demo in QEMU under -short, or when the
// emulator or a tool that builds the demo is missing.
func Need(t testing.TB) {
	t.Helper()
	armtest.NeedQEMU(t, qemu.BuildTools...)
}

// Build is a built demo image.
type Build struct {
	Dir, ELF, Map string
}

// Demo is the demo built with opts (OutDir and ITCMFragment unset: a
// fragment is the test's own file, built with BuildInto). It is built once
// and kept in $TMPDIR, keyed by the options and every file of
// firmware-sampler (armtest.Build): a test may read the build directory or
// copy it, never write to it; the one thing added there is the trace
// plugin, which qemu.StartWith builds next to the ELF with make.
func Demo(t testing.TB, opts qemu.BuildOptions) Build {
	t.Helper()
	if opts.OutDir != "" || opts.ITCMFragment != "" {
		t.Fatalf("qemutest.Demo: options %+v name a directory or a fragment: use BuildInto", opts)
	}
	name := fmt.Sprintf("tcmprof-demo-opt%s-nic%s-workload%s", strings.TrimPrefix(opts.Opt, "-"), opts.NIC, opts.Workload)
	b, _ := demos.LoadOrStore(name, &armtest.Build{
		Prefix:  name,
		Src:     filepath.Dir(qemu.SourceDir()),
		InPlace: true, // the map names the objects by absolute path
		Tools:   qemu.BuildTools,
		Make: func(_, out string) error {
			o := opts
			o.OutDir = out
			_, _, err := qemu.Build(o)
			return err
		},
	})
	dir := b.(*armtest.Build).Dir(t)
	return Build{Dir: dir, ELF: filepath.Join(dir, qemu.ELFName), Map: filepath.Join(dir, qemu.MapName)}
}

var demos sync.Map // cache directory prefix -> *armtest.Build

// BuildInto builds the demo with opts into opts.OutDir (make relinks only
// what changed there), failing the test if the build fails.
func BuildInto(t testing.TB, opts qemu.BuildOptions) Build {
	t.Helper()
	armtest.NeedTools(t, qemu.BuildTools...)
	elfPath, mapPath, err := qemu.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	return Build{Dir: opts.OutDir, ELF: elfPath, Map: mapPath}
}

// Boot starts the emulator on elfPath with opts; it is stopped when the
// test ends, or after timeout, whichever comes first.
func Boot(t testing.TB, elfPath string, opts qemu.StartOptions, timeout time.Duration) *qemu.Instance {
	t.Helper()
	Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	inst, err := qemu.StartWith(ctx, elfPath, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inst.Stop)
	return inst
}
