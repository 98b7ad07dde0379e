// SPDX-License-Identifier: Apache-2.0

// Package qemu builds the Teensy-shaped demo firmware of this directory and
// runs it in qemu-system-arm (-M mps2-an500, a Cortex-M7) with its UART on a
// pty, for tests and the demo. See docs/qemu.md.
//
// A test that needs the emulator:
//
//	qemutest.Need(t) // skips under -short, or when a tool is missing
//	demo := qemutest.Demo(t, qemu.BuildOptions{}) // built once, cached
//	inst := qemutest.Boot(t, demo.ELF, qemu.StartOptions{Icount: 3})
//	port, err := inst.OpenSerial() // the firmware's UART, raw mode
//
// (internal/qemutest; this package's own tests use internal/armtest.)
package qemu

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.bug.st/serial"
)

// BuildTools are the tools Build runs; Start also needs qemu-system-arm.
var BuildTools = []string{"make", "arm-none-eabi-gcc", "arm-none-eabi-ar"}

// SourceDir is the directory of the firmware sources and Makefile: the
// directory this file was compiled from.
func SourceDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	return filepath.Dir(file)
}

// Names of the build outputs inside BuildOptions.OutDir.
const (
	ELFName    = "tcmprof-demo.elf"
	MapName    = "tcmprof-demo.map"
	PluginName = "tcmtrace.so" // the trace plugin (plugin/README.md)
)

// BuildOptions select one build of the demo image.
type BuildOptions struct {
	OutDir string // where objects, archives, the ELF and the map go (required)
	Opt    string // compiler optimisation flag, "-Os" (default), "-O2" or "-O0"
	// ITCMFragment is a GNU ld fragment placed inside the .itcm output
	// section (input section patterns such as
	// `*libnet.a:checksum.o(.text.net_checksum_hot)`); empty for none.
	ITCMFragment string
	// TextFragment is a GNU ld fragment placed in .text_group, before the
	// ITCM load image and .text (a plan's flash group, tcmprof plan
	// --format ld-text); empty for none.
	TextFragment string
	// NIC "lan9118" adds the board's Ethernet controller as a second
	// interface of the echo (StartOptions.EchoForward reaches it); "" none.
	NIC string
	// Workload adds a planner workload to every echo (the Makefile's
	// WORKLOAD: "alias", "loops" or "mixed"), or "bulk": a second workload
	// of the same image that StartOptions.BenchSwitch 1 runs instead of
	// the echo; "" none.
	Workload string
	// Log receives make's output; nil keeps it only for the error message.
	Log io.Writer
}

// Build runs make for the demo image and returns the paths of the ELF and
// its link map. A failed build's error ends with make's last output.
func Build(opts BuildOptions) (elfPath, mapPath string, err error) {
	if opts.OutDir == "" {
		return "", "", errors.New("qemu build: no output directory")
	}
	out, err := filepath.Abs(opts.OutDir)
	if err != nil {
		return "", "", fmt.Errorf("qemu build: %w", err)
	}
	args := []string{"-C", SourceDir(), "OUT=" + out}
	switch opts.Opt {
	case "":
	case "-Os", "-O2", "-O0":
		args = append(args, "OPT="+opts.Opt)
	default:
		return "", "", fmt.Errorf("qemu build: optimisation %q is not -Os, -O2 or -O0", opts.Opt)
	}
	switch opts.NIC {
	case "":
	case "lan9118":
		args = append(args, "NIC="+opts.NIC)
	default:
		return "", "", fmt.Errorf("qemu build: NIC %q is not lan9118", opts.NIC)
	}
	switch opts.Workload {
	case "":
	case "alias", "loops", "mixed", "bulk":
		args = append(args, "WORKLOAD="+opts.Workload)
	default:
		return "", "", fmt.Errorf("qemu build: workload %q is not alias, loops, mixed or bulk", opts.Workload)
	}
	for _, f := range []struct{ what, variable, path string }{
		{"ITCM fragment", "ITCM_LD", opts.ITCMFragment},
		{".text fragment", "TEXT_LD", opts.TextFragment},
	} {
		if f.path == "" {
			continue
		}
		frag, err := filepath.Abs(f.path)
		if err != nil {
			return "", "", fmt.Errorf("qemu build: %w", err)
		}
		if _, err := os.Stat(frag); err != nil {
			return "", "", fmt.Errorf("qemu build: %s: %w", f.what, err)
		}
		args = append(args, f.variable+"="+frag)
	}
	if err := runMake(args, opts.Log); err != nil {
		return "", "", err
	}
	return filepath.Join(out, ELFName), filepath.Join(out, MapName), nil
}

// BuildPlugin builds the trace plugin (plugin/tcmtrace.c) with the host C
// compiler into outDir and returns the path of the shared object.
func BuildPlugin(outDir string) (string, error) {
	out, err := filepath.Abs(outDir)
	if err != nil {
		return "", fmt.Errorf("qemu plugin build: %w", err)
	}
	if err := runMake([]string{"-C", SourceDir(), "OUT=" + out, "plugin"}, nil); err != nil {
		return "", err
	}
	return filepath.Join(out, PluginName), nil
}

// runMake runs make with args; a failure's error ends with make's last
// output. log, when set, also receives the output.
func runMake(args []string, log io.Writer) error {
	var output bytes.Buffer
	cmd := exec.Command("make", args...)
	var w io.Writer = &output
	if log != nil {
		w = io.MultiWriter(&output, log)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("qemu build: make %v: %w\n%s", args, err, tail(output.Bytes(), 40))
	}
	return nil
}

// tail returns the last n lines of b.
func tail(b []byte, n int) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, nil)
}

// StartOptions tune the emulator. The zero value is what Start uses.
type StartOptions struct {
	// Icount, when > 0, runs QEMU with -icount shift=Icount,align=off: the
	// virtual clock advances 2^Icount ns per instruction, so timer
	// intervals are counted in instructions rather than host time. With
	// Trace, also sleep=off: idle time then skips to the next timer
	// instead of following the host, and the trace is reproducible.
	Icount int
	// OneInsnPerTB runs with -singlestep (QEMU 7.2's spelling of
	// -accel tcg,one-insn-per-tb=on): an interrupt can then be taken after
	// any instruction instead of only at translation-block boundaries.
	OneInsnPerTB bool
	// ExecLog, when set, makes QEMU write "-d in_asm,exec,nochain" to this
	// file: each translated block's instructions once, and a "Trace" line
	// for every execution of a block. Slow unless ExecLogRange narrows it.
	ExecLog string
	// ExecLogRange limits ExecLog to code in [lo, hi) (QEMU's -dfilter),
	// e.g. the ITCM to see only the sampler's interrupt.
	ExecLogRange [2]uint64
	// EchoForward, when set ("127.0.0.2:PORT"), connects the LAN9118 to
	// QEMU's user-mode network and forwards UDP to that host address to the
	// echo's port 7 (firmware built with NIC lan9118). slirp sends the
	// replies to 127.0.0.1 and the same port, whatever the request came
	// from: send from there (loadtest.Options.Local). restrict=on would drop
	// them; the firmware answers only its peer at 10.0.2.2 (the host).
	EchoForward string
	// Trace, when set, loads the trace plugin (plugin/README.md).
	Trace *TraceOptions
	// BenchSwitch, when not 0, is the word the testbench finds at the
	// image's bench_switch symbol at reset (QEMU's -device loader): with
	// Workload "bulk", 1 runs bulk transfer instead of the echo.
	BenchSwitch uint32
	// GDB, when set, opens QEMU's gdbstub on this chardev (QEMU's -gdb,
	// e.g. "tcp:127.0.0.1:1234") for gdb-multiarch's "target remote".
	GDB string
	// Output receives what QEMU prints after the pty line; nil drops it.
	Output io.Writer
}

// TraceOptions are the trace plugin's arguments (plugin/README.md).
type TraceOptions struct {
	// Path is the file or FIFO the plugin writes (required). QEMU waits
	// in its start-up until a FIFO's reader opens it: see StartTrace.
	Path string
	// Plugin is the plugin's shared object; empty builds it next to the
	// ELF (BuildPlugin into the ELF's directory).
	Plugin string
	// Marker is the address whose executions count as entries (0: none);
	// recording runs from entry From (0: reset) to entry To (0: the end).
	Marker   uint32
	From, To uint64
	// Exit ends QEMU once entry To is recorded.
	Exit bool
	// BuildID is copied into the trace header for the reader to check.
	BuildID []byte
}

// pluginArg is the -plugin argument for o.
func (o *TraceOptions) pluginArg(elfPath string) (string, error) {
	if o.Path == "" {
		return "", errors.New("qemu trace: no output path")
	}
	plugin := o.Plugin
	if plugin == "" {
		var err error
		if plugin, err = BuildPlugin(filepath.Dir(elfPath)); err != nil {
			return "", err
		}
	}
	for _, p := range []string{plugin, o.Path} {
		if strings.ContainsRune(p, ',') {
			return "", fmt.Errorf("qemu trace: path %q has a comma, which -plugin cannot pass", p)
		}
	}
	arg := "file=" + plugin + ",out=" + o.Path
	if o.Marker != 0 {
		arg += fmt.Sprintf(",marker=%#x,from=%d,to=%d", o.Marker, o.From, o.To)
	}
	if o.Exit {
		arg += ",exit=on"
	}
	if len(o.BuildID) > 0 {
		arg += ",buildid=" + hex.EncodeToString(o.BuildID)
	}
	return arg, nil
}

// Instance is a running emulator.
type Instance struct {
	// PTY is the path of the pty that carries the firmware's UART 0.
	PTY string

	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// How long Start waits for QEMU to report its pty.
const startTimeout = 10 * time.Second

var ptyLine = regexp.MustCompile(`char device redirected to (/dev/pts/[0-9]+)`)

// Start boots elfPath in qemu-system-arm -M mps2-an500 with the UART on a
// new pty. The emulator ends with ctx or Stop.
func Start(ctx context.Context, elfPath string) (*Instance, error) {
	return StartWith(ctx, elfPath, StartOptions{})
}

// StartWith is Start with options.
func StartWith(ctx context.Context, elfPath string, opts StartOptions) (*Instance, error) {
	if _, err := os.Stat(elfPath); err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	args := []string{"-M", "mps2-an500", "-nographic", "-monitor", "none", "-serial", "pty", "-kernel", elfPath}
	if opts.BenchSwitch != 0 {
		addr, err := symbolAddress(elfPath, "bench_switch")
		if err != nil {
			return nil, fmt.Errorf("qemu: bench switch: %w", err)
		}
		args = append(args, "-device", fmt.Sprintf("loader,addr=%#x,data=%d,data-len=4", addr, opts.BenchSwitch))
	}
	if opts.Icount > 0 {
		icount := "shift=" + strconv.Itoa(opts.Icount) + ",align=off"
		if opts.Trace != nil {
			// While the guest idles (WFI), QEMU's virtual clock follows
			// the host's unless sleep=off makes it jump to the next timer:
			// only then is a trace the same on every run. (Not for runs a
			// host talks to: idle virtual time would race past the host.)
			icount += ",sleep=off"
		}
		args = append(args, "-icount", icount)
	}
	if opts.OneInsnPerTB {
		args = append(args, "-singlestep")
	}
	if opts.GDB != "" {
		args = append(args, "-gdb", opts.GDB)
	}
	if opts.EchoForward != "" {
		args = append(args, "-nic", "user,hostfwd=udp:"+opts.EchoForward+"-:7")
	}
	if opts.ExecLog != "" {
		args = append(args, "-d", "in_asm,exec,nochain", "-D", opts.ExecLog)
		if r := opts.ExecLogRange; r[1] > r[0] {
			args = append(args, "-dfilter", fmt.Sprintf("%#x..%#x", r[0], r[1]-1))
		}
	}
	if opts.Trace != nil {
		arg, err := opts.Trace.pluginArg(elfPath)
		if err != nil {
			return nil, err
		}
		args = append(args, "-plugin", arg)
	}
	cmd := exec.CommandContext(ctx, "qemu-system-arm", args...)
	// QEMU's own process group, so that a terminal's ^C reaches only the
	// caller, which then stops QEMU itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	// QEMU 7.2 prints the pty line on stdout and its errors on stderr: read both.
	output, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	inst := &Instance{cmd: cmd, done: make(chan struct{})}

	found := make(chan string, 1)
	var early bytes.Buffer // what QEMU said before the pty line, for errors
	go func() {
		sc := bufio.NewScanner(output)
		reported := false
		for sc.Scan() {
			line := sc.Text()
			if !reported {
				if m := ptyLine.FindStringSubmatch(line); m != nil {
					found <- m[1]
					reported = true
					continue
				}
				if early.Len() < 4096 {
					early.WriteString(line + "\n")
				}
				continue
			}
			if opts.Output != nil {
				fmt.Fprintln(opts.Output, line)
			}
		}
		close(found)
	}()
	go func() {
		inst.waitErr = cmd.Wait()
		close(inst.done)
	}()

	select {
	case pty, ok := <-found:
		if !ok {
			<-inst.done
			return nil, fmt.Errorf("qemu exited before reporting its pty (%v): %s", inst.waitErr, early.String())
		}
		inst.PTY = pty
		return inst, nil
	case <-time.After(startTimeout):
		inst.Stop()
		return nil, fmt.Errorf("qemu did not report a pty within %v", startTimeout)
	}
}

// OpenSerial opens the firmware's UART in raw mode (no echo, no line
// editing), as tcmprof opens a USB serial port.
func (i *Instance) OpenSerial() (serial.Port, error) {
	p, err := serial.Open(i.PTY, &serial.Mode{BaudRate: 115200})
	if err != nil {
		return nil, fmt.Errorf("qemu: open %s: %w", i.PTY, err)
	}
	return p, nil
}

// Done is closed when the emulator has exited.
func (i *Instance) Done() <-chan struct{} { return i.done }

// Freeze stops the emulator at once (SIGSTOP): the firmware and its UART
// halt mid-byte, as a board whose host link hangs. Kill or Stop ends it.
func (i *Instance) Freeze() error { return i.cmd.Process.Signal(syscall.SIGSTOP) }

// Kill ends the emulator at once (SIGKILL), as a board pulled out or a
// crashed emulator, and waits for it.
func (i *Instance) Kill() {
	i.stopOnce.Do(func() {
		_ = i.cmd.Process.Kill()
		<-i.done
	})
}

// Stop ends the emulator (SIGTERM, then SIGKILL after two seconds) and
// waits for it. It is safe to call more than once.
func (i *Instance) Stop() {
	i.stopOnce.Do(func() {
		if i.cmd.Process == nil {
			return
		}
		_ = i.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-i.done:
		case <-time.After(2 * time.Second):
			_ = i.cmd.Process.Kill()
			<-i.done
		}
	})
}

// symbolAddress is the value of the symbol name in the ELF at path.
func symbolAddress(path, name string) (uint64, error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value, nil
		}
	}
	return 0, fmt.Errorf("%s has no symbol %s", path, name)
}

// TraceToFile boots elfPath with the trace plugin writing opts.Trace.Path
// and waits until QEMU has ended itself after the window (Exit is implied;
// opts.Trace.To must end the window) or ctx is done.
func TraceToFile(ctx context.Context, elfPath string, opts StartOptions) error {
	if opts.Trace == nil || opts.Trace.To == 0 {
		return errors.New("qemu trace: no window end (TraceOptions.To)")
	}
	trace := *opts.Trace
	trace.Exit = true
	opts.Trace = &trace
	inst, err := StartWith(ctx, elfPath, opts)
	if err != nil {
		return err
	}
	defer inst.Stop()
	select {
	case <-inst.Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("qemu trace: QEMU did not end after the window: %w", ctx.Err())
	}
}

// StartTrace boots elfPath with the trace plugin writing into a new FIFO
// (opts.Trace.Path is set to it) and returns the instance and the FIFO's
// read end. The emulator runs only as fast as the caller reads; closing
// the reader removes the FIFO. With opts.Trace.Exit the emulator ends
// after the window; otherwise the caller stops it.
func StartTrace(ctx context.Context, elfPath string, opts StartOptions) (*Instance, io.ReadCloser, error) {
	if opts.Trace == nil {
		return nil, nil, errors.New("qemu trace: no TraceOptions")
	}
	dir, err := os.MkdirTemp("", "tcmprof-trace-")
	if err != nil {
		return nil, nil, fmt.Errorf("qemu trace: %w", err)
	}
	fifo := filepath.Join(dir, "trace")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("qemu trace: %w", err)
	}
	// Opening a FIFO for reading waits for its writer, the plugin, which
	// QEMU loads before it reports its pty: so open it on the side.
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(fifo)
		ch <- opened{f, err}
	}()
	trace := *opts.Trace
	trace.Path = fifo
	opts.Trace = &trace
	release := func() {
		// Ends the reader's open with a writer of our own.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		if o := <-ch; o.f != nil {
			o.f.Close()
		}
		os.RemoveAll(dir)
	}
	inst, err := StartWith(ctx, elfPath, opts)
	if err != nil {
		release()
		return nil, nil, err
	}
	var o opened
	select {
	case o = <-ch:
	case <-inst.Done():
		release()
		return nil, nil, fmt.Errorf("qemu exited before the trace plugin opened its output (%v)", inst.waitErr)
	}
	if o.err != nil {
		inst.Stop()
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("qemu trace: %w", o.err)
	}
	return inst, &fifoReader{File: o.f, dir: dir}, nil
}

// fifoReader removes the FIFO's directory when closed.
type fifoReader struct {
	*os.File
	dir string
}

func (f *fifoReader) Close() error {
	err := f.File.Close()
	os.RemoveAll(f.dir)
	return err
}
