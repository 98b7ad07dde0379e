// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
)

// deviceOptions are the flags of every command that talks to the sampler
// (capture, top): which port, and how long to wait for it.
type deviceOptions struct {
	port    string
	baud    int
	match   device.PortMatch
	raw     string
	timeout time.Duration
	retries int
}

// probeTimeout bounds the STATUS probe --port auto sends to each of several
// ports with the sampler's USB ids; the sampler answers in milliseconds.
const probeTimeout = 300 * time.Millisecond

func (o *deviceOptions) addFlags(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&o.port, "port", "auto", `serial device of the sampler, or "auto" to find it by USB id`)
	f.IntVar(&o.baud, "baud", 115200, "baud rate (ignored by USB CDC-ACM)")
	f.StringVar(&o.match.VID, "vid", device.DefaultVID, "USB vendor id --port auto looks for (hex)")
	f.StringVar(&o.match.PID, "pid", device.DefaultPID, "USB product id --port auto looks for (hex)")
	f.StringVar(&o.match.Serial, "serial", "", "USB serial number --port auto looks for")
	f.StringVar(&o.match.Product, "product", "", "text in the USB product string --port auto looks for")
	f.StringVar(&o.raw, "raw", "", "also write every byte received to this file, as it arrives")
	f.DurationVar(&o.timeout, "timeout", device.DefaultTimeouts().Reply, "how long the device may send no frame before a command is asked again")
	f.IntVar(&o.retries, "retries", device.DefaultTimeouts().Retries, "how often to ask again")
}

func (o *deviceOptions) validate() error {
	if o.timeout <= 0 || o.retries < 0 {
		return errors.New("--timeout must be positive and --retries not negative")
	}
	if o.baud <= 0 {
		return fmt.Errorf("--baud %d: want a positive rate in bits per second, e.g. 115200", o.baud)
	}
	var err error
	if o.match.VID, err = usbID("--vid", o.match.VID); err != nil {
		return err
	}
	o.match.PID, err = usbID("--pid", o.match.PID)
	return err
}

// usbID checks a USB vendor or product id: up to four hex digits, 0x
// optional, written as the system lists ports (four lower-case digits);
// "" matches any.
func usbID(flag, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	digits := strings.TrimPrefix(strings.ToLower(id), "0x")
	v, err := strconv.ParseUint(digits, 16, 16)
	if err != nil || digits == "" || strings.HasPrefix(digits, "+") {
		return "", fmt.Errorf("%s %s: want a USB id of up to four hex digits, e.g. %s", flag, id, device.DefaultVID)
	}
	return fmt.Sprintf("%04x", v), nil
}

// startFlags are what START asks for, as capture and top take them.
type startFlags struct {
	rate   uint32
	jitter int
	fields string
	words  uint8 // stack words with --fields stack
}

func (f *startFlags) add(c *cobra.Command) {
	c.Flags().Uint32Var(&f.rate, "rate", 0, "mean sampling rate in Hz (0 = the device default)")
	c.Flags().IntVar(&f.jitter, "jitter", device.DefaultJitterPct, fmt.Sprintf("jitter of the sampling interval, percent, 0 to %d (uniform in mean ± jitter; the sampler's own default)", device.MaxJitterPct))
	c.Flags().StringVar(&f.fields, "fields", "pc", "record fields: pc, pc,lr, pc,lr,ctx (ctx = exc,thread), and stack (a copy of the interrupted stack, for call stacks; adds lr)")
	c.Flags().Uint8Var(&f.words, "stack-words", 0, fmt.Sprintf("stack words per sample with --fields stack, %d to %d (0 = the device default, %d); fewer samples fit the device's buffer with more",
		sample.MinStackWords, sample.MaxStackWords, device.DefaultStackWords))
}

// start is the START request of the flags.
func (f *startFlags) start() (device.Start, error) {
	fields, err := sample.ParseFields(f.fields)
	if err != nil {
		return device.Start{}, fmt.Errorf("--fields: %w", err)
	}
	switch {
	case f.rate > device.MaxRateHz:
		return device.Start{}, fmt.Errorf("--rate %d: want 1 to %d Hz, or 0 for the device's default", f.rate, device.MaxRateHz)
	case f.jitter < 0 || f.jitter > device.MaxJitterPct:
		return device.Start{}, fmt.Errorf("--jitter %d: want 0 to %d (percent)", f.jitter, device.MaxJitterPct)
	case f.words != 0 && fields&sample.FieldStack == 0:
		return device.Start{}, errors.New("--stack-words needs --fields with stack")
	case f.words != 0 && (f.words < sample.MinStackWords || f.words > sample.MaxStackWords):
		return device.Start{}, fmt.Errorf("--stack-words %d: want %d to %d", f.words, sample.MinStackWords, sample.MaxStackWords)
	}
	return device.Start{RateHz: f.rate, JitterPct: uint8(f.jitter), Fields: fields, StackWords: f.words}, nil
}

// connection is an open connection to the sampler (device names the
// package that speaks its protocol).
type connection struct {
	session *device.Session
	host    sample.HostInfo
	raw     *os.File // the --raw byte log, or nil
}

// open finds the port (--port auto) and opens a session on it, with the
// --raw byte log when asked for.
func (o *deviceOptions) open() (*connection, error) {
	host := sample.HostInfo{Time: time.Now().UTC(), Port: o.port, Baud: o.baud, ToolVersion: Version}
	if o.port == "auto" {
		ports, err := device.ListPorts()
		if err != nil {
			return nil, err
		}
		p, err := device.FindPort(ports, o.match, device.StatusProbe(o.baud, probeTimeout))
		if err != nil {
			return nil, err
		}
		host.Port, host.USB = p.Path, p.USB
	}
	port, err := device.OpenPort(host.Port, o.baud)
	if err != nil {
		return nil, err
	}
	d := &connection{host: host}
	var rawW io.Writer
	if o.raw != "" {
		if d.raw, err = os.Create(o.raw); err != nil {
			port.Close()
			return nil, err
		}
		rawW = d.raw
	}
	to := device.DefaultTimeouts()
	to.Reply, to.Retries = o.timeout, o.retries
	d.session = device.NewSession(port, rawW, to)
	return d, nil
}

// Close closes the session and the byte log.
func (d *connection) Close() {
	d.session.Close()
	if d.raw != nil {
		d.raw.Close()
	}
}
