// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/driver"
	pprof "github.com/google/pprof/profile"
)

// ViewOptions configures Serve.
type ViewOptions struct {
	// Addr is the host:port to listen on; port 0 picks a free port.
	Addr string
	// Browser opens the UI in a browser once it is listening.
	Browser bool
	// Log receives pprof's messages, but for the "Serving web UI on" line
	// (Ready says where) and the refusals to open object files.
	Log io.Writer
	// Ready, when set, is called with the UI's URL once the listener is open.
	Ready func(url string)
}

// Serve runs pprof's interactive web UI on p until ctx is done. pprof's own
// ways to fetch or symbolize are shut off: the profile is handed over in
// memory with an empty source (so pprof does not copy it to $HOME/pprof), and
// object files are never opened (the host's binutils cannot read an ARM ELF,
// and the profile is already symbolized).
func Serve(ctx context.Context, p *pprof.Profile, opts ViewOptions) error {
	if p == nil {
		return errors.New("view: no profile")
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("view: %w", err)
	}
	defer ln.Close()
	addr := ln.Addr().(*net.TCPAddr)
	hostport := addr.String()
	urlHost := hostport
	if addr.IP.IsUnspecified() { // listening on every interface: localhost reaches it too
		urlHost = net.JoinHostPort("localhost", strconv.Itoa(addr.Port))
	}
	url := "http://" + urlHost + "/ui/"
	if opts.Ready != nil {
		opts.Ready(url)
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	args := []string{"-http=" + hostport, "-symbolize=none"}
	if !opts.Browser {
		args = append(args, "-no_browser")
	}
	flags := &fixedFlags{FlagSet: flag.NewFlagSet("pprof", flag.ContinueOnError), args: append(args, "tcmprof")}
	flags.SetOutput(logw)
	loopback := addr.IP.IsLoopback()
	return driver.PProf(&driver.Options{
		Flagset: flags,
		Fetch:   memoryFetcher{p},
		Sym:     noSymbolizer{},
		Obj:     noObjTool{},
		UI:      &logUI{w: logw, browser: opts.Browser},
		HTTPServer: func(a *driver.HTTPServerArgs) error {
			a.Handlers["/disasm"] = disasmUnavailable(elfPath(p))
			return serveHandlers(ctx, ln, a.Handlers, loopback)
		},
	})
}

// serveHandlers serves pprof's handlers under /ui/ (where pprof's pages
// expect to live) on ln until ctx is done. A UI bound to a loopback address
// answers only local clients, as pprof's own server does.
func serveHandlers(ctx context.Context, ln net.Listener, handlers map[string]http.Handler, loopback bool) error {
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loopback {
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				http.Error(w, "permission denied", http.StatusForbidden)
				return
			}
		}
		h := handlers[r.URL.Path]
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
	mux := http.NewServeMux()
	mux.Handle("/ui/", http.StripPrefix("/ui", ui))
	mux.Handle("/", http.RedirectHandler("/ui/", http.StatusTemporaryRedirect))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// elfPath is the image a profile was made from, as its mapping records it.
func elfPath(p *pprof.Profile) string {
	if len(p.Mapping) > 0 && p.Mapping[0].File != "" {
		return p.Mapping[0].File
	}
	return "FIRMWARE.elf"
}

// disasmUnavailable answers pprof's disassembly page. pprof disassembles
// with the Go toolchain's decoder, which reads Cortex-M Thumb code as ARM
// (garbage, or a panic), and tcmprof never runs the host's binutils on the
// image: the page says so and gives the command that does it right,
// instead of pprof's "no matches found".
func disasmUnavailable(elf string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cmd := "arm-none-eabi-objdump -d -l " + elf
		if f := disasmSymbol(r.URL.Query().Get("f")); f != "" {
			cmd = "arm-none-eabi-objdump -d -l --disassemble=" + f + " " + elf
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html>
<html><head><title>disassembly not available</title></head><body>
<h1>Disassembly is not available in tcmprof view</h1>
<p>pprof's disassembler (from the Go toolchain) decodes Cortex-M Thumb code as ARM code,
so its listing would be wrong. Disassemble the image with the ARM toolchain instead:</p>
<pre>%s</pre>
<p><a href="./">back to the graph</a></p>
</body></html>
`, html.EscapeString(cmd))
	})
}

// disasmSymbol is the ELF symbol of the function the UI asks to
// disassemble: its f parameter is a regexp of the profile's name
// (`^run_burst \[clone \.isra\.0\]$`), and the symbol is the name
// before symname.WithClone wrote it ("run_burst.isra.0").
func disasmSymbol(f string) string {
	f = strings.ReplaceAll(strings.Trim(f, "^$"), `\`, "")
	if base, clone, ok := strings.Cut(f, " [clone "); ok {
		return base + strings.TrimSuffix(clone, "]")
	}
	return f
}

// fixedFlags is a driver.FlagSet that parses a fixed argument list rather
// than os.Args.
type fixedFlags struct {
	*flag.FlagSet
	args  []string
	extra []string
}

func (f *fixedFlags) StringList(name, def, usage string) *[]*string {
	return &[]*string{f.String(name, def, usage)}
}
func (f *fixedFlags) ExtraUsage() string      { return strings.Join(f.extra, "\n") }
func (f *fixedFlags) AddExtraUsage(eu string) { f.extra = append(f.extra, eu) }
func (f *fixedFlags) Parse(usage func()) []string {
	f.Usage = usage
	if err := f.FlagSet.Parse(f.args); err != nil {
		return nil
	}
	return f.Args()
}

// memoryFetcher hands pprof a profile already in memory. The empty source
// string matters: a non-empty one makes pprof save a copy under $PPROF_TMPDIR.
type memoryFetcher struct{ p *pprof.Profile }

func (m memoryFetcher) Fetch(string, time.Duration, time.Duration) (*pprof.Profile, string, error) {
	return m.p, "", nil
}

var errNoObjects = errors.New("tcmprof profiles are already symbolized; object files are not opened")

// noObjTool stops pprof from running the host's binutils on an ARM ELF.
type noObjTool struct{}

func (noObjTool) Open(string, uint64, uint64, uint64, string) (driver.ObjFile, error) {
	return nil, errNoObjects
}
func (noObjTool) Disasm(string, uint64, uint64, bool) ([]driver.Inst, error) {
	return nil, errNoObjects
}

// noSymbolizer keeps pprof's symbolizer (which would look for binaries and
// symbol servers) out of the way; the profile carries every name.
type noSymbolizer struct{}

func (noSymbolizer) Symbolize(string, driver.MappingSources, *pprof.Profile) error { return nil }

// logUI is a non-interactive driver.UI writing pprof's messages to w.
type logUI struct {
	w       io.Writer
	browser bool
}

func (u *logUI) ReadLine(string) (string, error)     { return "", io.EOF }
func (u *logUI) Print(args ...any)                   { u.println(args...) }
func (u *logUI) PrintErr(args ...any)                { u.println(args...) }
func (u *logUI) IsTerminal() bool                    { return false }
func (u *logUI) WantBrowser() bool                   { return u.browser }
func (u *logUI) SetAutoComplete(func(string) string) {}
func (u *logUI) println(args ...any) {
	s := fmt.Sprint(args...)
	if strings.HasPrefix(s, "Serving web UI on ") || s == errNoObjects.Error() {
		return // Ready gives the URL once; not opening objects is by design
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	io.WriteString(u.w, s)
}

// compile-time checks that the adapters satisfy the driver's interfaces.
var (
	_ driver.FlagSet = (*fixedFlags)(nil)
	_ driver.UI      = (*logUI)(nil)
)
