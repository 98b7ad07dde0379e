// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	pprof "github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/elf/mapfile"
	"github.com/tcmprof/tcmprof/place"
	"github.com/tcmprof/tcmprof/place/imageinput"
	"github.com/tcmprof/tcmprof/profile"
	"github.com/tcmprof/tcmprof/sample"
)

// inputOptions are the flags of every command that reads a capture against
// its ELF (profile, report, view, diff).
type inputOptions struct {
	elfPath, buildDir, mapPath, dtsPath, board string
	force                                      bool
	idleThreads, idleFuncs                     []string
	noDefaultIdle                              bool
	// noBoard is set by a command that takes no board (verify: the plan
	// gives the ITCM); --build-dir's devicetree and .config are then not
	// read.
	noBoard bool
}

func (o *inputOptions) addFlags(c *cobra.Command) {
	o.addImageFlags(c, "the firmware ELF the capture was taken from")
	f := c.Flags()
	f.BoolVar(&o.force, "force", false, "read a capture whose build-id differs from the ELF's")
	f.StringSliceVar(&o.idleThreads, "idle-thread", nil, "thread name (glob) whose samples are idle; repeatable")
	f.StringSliceVar(&o.idleFuncs, "idle-func", nil, "function name (glob) whose samples are idle; repeatable")
	f.BoolVar(&o.noDefaultIdle, "no-default-idle", false, "drop the built-in idle rules (Zephyr's idle thread and functions, WFI)")
}

// addImageFlags adds the flags that name the image and its board:
// --elf (described by elfHelp), --build-dir, --map, --dts, --board. sim
// takes these alone: it reads a trace, not a capture.
func (o *inputOptions) addImageFlags(c *cobra.Command, elfHelp string) {
	f := c.Flags()
	f.StringVar(&o.elfPath, "elf", "", elfHelp)
	f.StringVar(&o.buildDir, "build-dir", "", "a west build directory: reads zephyr/zephyr.elf, zephyr.map, zephyr.dts and .config from it")
	f.StringVar(&o.mapPath, "map", "", "GNU ld map file, for library labels (default: zephyr/zephyr.map in --build-dir)")
	f.StringVar(&o.dtsPath, "dts", "", "Zephyr devicetree (zephyr.dts) giving the memory regions (default: from --build-dir)")
	f.StringVar(&o.board, "board", "", "board for memory regions and I-cache: "+fmt.Sprint(board.Names())+" (default: CONFIG_BOARD from --build-dir's .config, else teensy41)")
}

// sources are the build outputs the inputs name, after --build-dir has
// filled in what was not given alone.
type sources struct{ elf, mapFile, dts, config string }

func (o *inputOptions) sources() (sources, error) {
	s := sources{elf: o.elfPath, mapFile: o.mapPath, dts: o.dtsPath}
	if o.buildDir != "" {
		z := filepath.Join(o.buildDir, "zephyr")
		if _, err := os.Stat(z); err != nil {
			return s, fmt.Errorf("--build-dir %s: no zephyr/ directory, so not a west build directory: give the one west build wrote (its -d, build by default) or --elf", o.buildDir)
		}
		fill := func(dst *string, name string) {
			if *dst == "" {
				if _, err := os.Stat(filepath.Join(z, name)); err == nil {
					*dst = filepath.Join(z, name)
				}
			}
		}
		fill(&s.elf, "zephyr.elf")
		fill(&s.mapFile, "zephyr.map")
		if !o.noBoard {
			fill(&s.dts, "zephyr.dts")
			fill(&s.config, ".config")
		}
	}
	if s.elf == "" {
		if o.buildDir != "" {
			return s, fmt.Errorf("--build-dir %s has no zephyr/zephyr.elf: did west build finish? (or give --elf)", o.buildDir)
		}
		return s, errors.New("no firmware ELF: give --elf or --build-dir")
	}
	return s, nil
}

// options loads what the sources name into profile.Options.
func (o *inputOptions) options(src sources) (profile.Options, error) {
	var opts profile.Options
	opts.Force = o.force
	if !o.noDefaultIdle {
		opts.Idle = profile.DefaultIdleRules()
	}
	opts.Idle.Threads = append(opts.Idle.Threads, o.idleThreads...)
	opts.Idle.Functions = append(opts.Idle.Functions, o.idleFuncs...)
	boardName := o.board
	if boardName == "" && src.config != "" {
		if name, err := configBoard(src.config); err != nil {
			return opts, err
		} else if name != "" {
			if _, err := board.ByName(name); err == nil {
				boardName = name
			}
		}
	}
	if boardName == "" {
		boardName = "teensy41"
	}
	b, err := board.ByName(boardName)
	if err != nil {
		return opts, err
	}
	if src.dts != "" {
		f, err := os.Open(src.dts)
		if err != nil {
			return opts, err
		}
		fromDTS, err := board.ReadZephyrDTS(f)
		f.Close()
		if err != nil {
			return opts, fmt.Errorf("%s: %w", src.dts, err)
		}
		b.Regions = fromDTS.Regions // the devicetree knows no caches: the board's I-cache stays
	}
	opts.Board = b
	if src.mapFile != "" {
		m, err := readMap(src.mapFile)
		if err != nil {
			return opts, err
		}
		opts.Map = m
	}
	return opts, nil
}

var configBoardLine = regexp.MustCompile(`^CONFIG_BOARD="([^"]*)"`)

// configBoard reads CONFIG_BOARD from a Kconfig .config.
func configBoard(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := configBoardLine.FindStringSubmatch(sc.Text()); m != nil {
			return m[1], nil
		}
	}
	return "", sc.Err()
}

// captureArg is a CAPTURE argument: a file, and with several, the share
// of the time its workload takes ("echo.tcmcap:3 bulk.tcmcap:1").
type captureArg struct {
	path   string
	weight float64
}

// parseCaptureArgs reads CAPTURE[:WEIGHT] arguments. An argument that
// names a file is that file, colon or not.
func parseCaptureArgs(args []string) ([]captureArg, error) {
	var out []captureArg
	for _, a := range args {
		arg := captureArg{path: a, weight: 1}
		if i := strings.LastIndexByte(a, ':'); i > 0 {
			if _, err := os.Stat(a); err != nil {
				w, perr := strconv.ParseFloat(a[i+1:], 64)
				if perr != nil || !(w > 0) || math.IsInf(w, 0) {
					return nil, fmt.Errorf("%s: the weight after the last colon, %q, is not a positive number (CAPTURE:WEIGHT, e.g. echo.tcmcap:3)", a, a[i+1:])
				}
				arg = captureArg{path: a[:i], weight: w}
			}
		}
		out = append(out, arg)
	}
	return out, nil
}

// captureFiles names the capture files for checkOutputs.
func captureFiles(args []captureArg) []namedFile {
	var fs []namedFile
	for _, a := range args {
		fs = append(fs, namedFile{"the capture", a.path})
	}
	return fs
}

// readMix reads the captures and, when there are several, mixes them by
// their weights (sample.Mix), saying so on errw.
func readMix(errw io.Writer, args []captureArg) (*sample.Capture, string, error) {
	var parts []sample.Part
	for _, a := range args {
		c, err := sample.ReadFile(a.path)
		if err != nil {
			return nil, "", err
		}
		if g := c.Gaps(); g != nil && len(args) > 1 {
			fmt.Fprintf(errw, "tcmprof: warning: %s: %s\n", a.path, g)
		}
		parts = append(parts, sample.Part{Name: a.path, Capture: c, Weight: a.weight})
	}
	c, err := sample.Mix(parts)
	if err != nil {
		return nil, "", err
	}
	if len(parts) == 1 {
		return c, args[0].path, nil
	}
	var desc []string
	for _, p := range parts {
		desc = append(desc, fmt.Sprintf("%s:%g (%d records)", p.Name, p.Weight, len(p.Capture.Records)))
	}
	fmt.Fprintf(errw, "tcmprof: a mix of %d captures by the share of time each workload takes, %s: its intervals count repeated records as samples and are too narrow\n",
		len(parts), strings.Join(desc, ", "))
	return c, "the mix", nil
}

// openInputs is the step every command that reads a build takes: find
// the build's files (--build-dir, or the flags); let check refuse them by
// name before anything is read (an output that would overwrite one, a
// file the command needs and lacks); read what they give (the map, the
// devicetree's regions, the board, the idle rules); let the command adjust
// those options; open the ELF. check and adjust may be nil.
func (o *inputOptions) openInputs(check func(sources) error, adjust func(*profile.Options) error) (sources, profile.Options, *image.Image, error) {
	var opts profile.Options
	src, err := o.sources()
	if err != nil {
		return src, opts, nil, err
	}
	if check != nil {
		if err := check(src); err != nil {
			return src, opts, nil, err
		}
	}
	if opts, err = o.options(src); err != nil {
		return src, opts, nil, err
	}
	if adjust != nil {
		if err := adjust(&opts); err != nil {
			return src, opts, nil, err
		}
	}
	img, err := openImage(src, opts.Map)
	return src, opts, img, err
}

// namedFiles are the build's files the flags name, for checkOutputs
// before anything is read; none when they name no build: diff's two
// profiles need no ELF.
func (o *inputOptions) namedFiles() []namedFile {
	src, err := o.sources()
	if err != nil {
		return nil
	}
	return src.files()
}

// symbolize reads the captures (one, or several to mix) against the build
// the flags name (openInputs' check and adjust as there). The captures are
// read once check has passed the build's files and before the build is, so
// that a capture that is no capture is told before the ELF is decoded.
func (o *inputOptions) symbolize(errw io.Writer, args []captureArg, check func(sources) error, adjust func(*profile.Options) error) (*profile.Symbolized, sources, error) {
	var (
		c    *sample.Capture
		path string
	)
	src, opts, img, err := o.openInputs(func(src sources) (err error) {
		if check != nil {
			if err := check(src); err != nil {
				return err
			}
		}
		c, path, err = readMix(errw, args)
		return err
	}, adjust)
	if err != nil {
		return nil, src, err
	}
	s, err := profile.Symbolize(c, img, opts)
	// After symbolizing: warnings about a compile unit's DWARF come once
	// an address has decoded it.
	printImageWarnings(errw, src.elf, img, 0)
	if err != nil {
		return nil, src, fmt.Errorf("%s: %w", path, err)
	}
	if g := c.Gaps(); g != nil {
		fmt.Fprintf(errw, "tcmprof: warning: %s: %s\n", path, g)
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(errw, "tcmprof: warning: %s\n", w)
	}
	return s, src, nil
}

// loadProfile reads path as a pprof profile, or as a capture that it
// symbolizes with the ELF the flags name; sym is nil for a profile.
func (o *inputOptions) loadProfile(s Streams, path string) (p *pprof.Profile, sym *profile.Symbolized, err error) {
	capture, err := sample.IsCaptureFile(path)
	if err != nil {
		return nil, nil, err
	}
	if !capture {
		p, err = profile.ReadFile(path)
		return p, nil, err
	}
	if sym, _, err = o.symbolize(s.Err, []captureArg{{path: path, weight: 1}}, nil, nil); err != nil {
		return nil, nil, err
	}
	p, err = sym.Profile()
	return p, sym, err
}

// placeInput reads the capture against its build as report does (check as
// openInputs') and fills the planner's input from the same build (see
// imageinput.Read).
func (o *inputOptions) placeInput(s Streams, captures []captureArg, check func(sources) error) (*place.Input, *profile.Symbolized, error) {
	sym, src, err := o.symbolize(s.Err, captures, check, nil)
	if err != nil {
		return nil, nil, err
	}
	var mix workloads
	if len(captures) > 1 {
		if mix, err = readWorkloads(captures, sym); err != nil {
			return nil, nil, err
		}
	}
	in, warnings, err := imageinput.Read(imageinput.Sources{Image: sym.Image, Map: sym.Options.Map,
		MapPath: src.mapFile, Board: sym.Board, Analysis: sym.Analyze(), BusyPCs: busyPCs(sym),
		WorkloadBusyPCs: mix.busyPCs, WorkloadScale: mix.scale})
	if err != nil {
		return nil, nil, err
	}
	printWarnings(s.Err, warnings)
	return in, sym, nil
}

// maxWarnings bounds the warnings printed one per line; an image with
// hundreds of unreadable objects says so in one more line.
const maxWarnings = 5

func printWarnings(w io.Writer, warnings []string) {
	for i, msg := range warnings {
		if i == maxWarnings {
			fmt.Fprintf(w, "tcmprof: warning: ... and %d more like these\n", len(warnings)-maxWarnings)
			break
		}
		fmt.Fprintf(w, "tcmprof: warning: %s\n", msg)
	}
}

// openImage opens the ELF the sources name and checks that m, the map
// file's contents when there is one, comes from the same link: a map of
// another build would label and plan every address wrongly without a word.
func openImage(src sources, m *mapfile.Map) (*image.Image, error) {
	img, err := image.Open(src.elf)
	if err != nil {
		return nil, err
	}
	if m != nil {
		if err := m.CheckImage(img); err != nil {
			return nil, fmt.Errorf("%s is not the map of %s (%w): give the map of the same link", src.mapFile, src.elf, err)
		}
	}
	return img, nil
}

// readMap parses a GNU ld map file.
func readMap(path string) (*mapfile.Map, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := mapfile.Parse(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(m.Sections) == 0 {
		return nil, errors.New(path + ": the map places no input sections")
	}
	return m, nil
}
