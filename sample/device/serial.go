// SPDX-License-Identifier: Apache-2.0

package device

import (
	"context"
	"errors"
	"fmt"
	"github.com/tcmprof/tcmprof/sample"
	"io"
	"strings"
	"time"

	"go.bug.st/serial"
	"go.bug.st/serial/enumerator"
)

// The USB ids `--port auto` looks for by default: Zephyr's default
// CONFIG_USB_DEVICE_VID/PID, which the Zephyr module keeps unless a board
// sets its own.
const (
	DefaultVID = "2fe3"
	DefaultPID = "0001"
)

// OpenPort opens a serial device (a USB CDC-ACM tty, a UART, or a pty) in
// raw mode at baud, for this process alone (see lockPort): a device another
// process has is refused, naming it. On CDC-ACM the baud rate is ignored by
// the link.
func OpenPort(path string, baud int) (serial.Port, error) {
	lock, err := lockPort(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	p, err := serial.Open(path, &serial.Mode{BaudRate: baud})
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		var pe *serial.PortError
		if errors.As(err, &pe) && pe.Code() == serial.PortBusy { // another process's TIOCEXCL
			err = errPortInUse(path)
		}
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if lock == nil {
		return p, nil
	}
	return &lockedPort{p, lock}, nil
}

// errPortInUse says that another process has the device at path, and
// which (see portHolders), so the user can end it or wait for it.
func errPortInUse(path string) error {
	holders := portHolders(path)
	if len(holders) == 0 {
		return errors.New("the port is in use by another program; one program at a time can talk to the sampler")
	}
	return fmt.Errorf("the port is in use by %s; one program at a time can talk to the sampler", strings.Join(holders, ", "))
}

// lockedPort is a port and the lock that keeps it this process's.
type lockedPort struct {
	serial.Port
	lock io.Closer
}

func (p *lockedPort) Close() error {
	err := p.Port.Close()
	p.lock.Close()
	return err
}

// PortInfo is one candidate serial port.
type PortInfo struct {
	Path  string
	IsUSB bool
	USB   sample.USBInfo
}

// PortMatch selects the sampler's port among USB serial ports; empty
// fields match anything. Hex ids compare case-insensitively.
type PortMatch struct {
	VID, PID, Serial, Product string
}

// ListPorts lists the serial ports with their USB details.
func ListPorts() ([]PortInfo, error) {
	list, err := enumerator.GetDetailedPortsList()
	if err != nil {
		return nil, fmt.Errorf("listing serial ports: %w", err)
	}
	var out []PortInfo
	for _, p := range list {
		out = append(out, PortInfo{Path: p.Name, IsUSB: p.IsUSB,
			USB: sample.USBInfo{VID: strings.ToLower(p.VID), PID: strings.ToLower(p.PID), Serial: p.SerialNumber,
				Product: p.Product, Manufacturer: p.Manufacturer}})
	}
	return out, nil
}

// FindPort picks the one port that matches m. When several match (a Zephyr
// image with the sampler has two CDC-ACM ports with the same USB ids: the
// console and the sampler's), probe, when not nil, is asked of each; the
// one port it accepts (nil error) wins. None or several is an error that
// lists the candidates (and, when none answered, why each did not: one may
// be in use), so the user can pass --port or narrow the match.
func FindPort(ports []PortInfo, m PortMatch, probe func(PortInfo) error) (PortInfo, error) {
	var found []PortInfo
	for _, p := range ports {
		if p.IsUSB && eqFold(m.VID, p.USB.VID) && eqFold(m.PID, p.USB.PID) &&
			(m.Serial == "" || m.Serial == p.USB.Serial) &&
			(m.Product == "" || strings.Contains(strings.ToLower(p.USB.Product), strings.ToLower(m.Product))) {
			found = append(found, p)
		}
	}
	if len(found) > 1 && probe != nil {
		var answering []PortInfo
		var why []string
		for _, p := range found {
			if err := probe(p); err != nil {
				why = append(why, err.Error())
			} else {
				answering = append(answering, p)
			}
		}
		if len(answering) == 1 {
			return answering[0], nil
		}
		if len(answering) > 1 {
			found = answering
		} else {
			return PortInfo{}, fmt.Errorf("%d serial ports with %s, and none answered the sampler protocol: %s (%s; is the sampler enabled in the firmware? pass --port PATH)",
				len(found), describeMatch(m), describePorts(found), strings.Join(why, "; "))
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	want := describeMatch(m)
	if len(found) == 0 {
		if len(ports) == 0 {
			return PortInfo{}, fmt.Errorf("no serial port found with %s, and no serial ports at all; is the board plugged in?", want)
		}
		return PortInfo{}, fmt.Errorf("no serial port with %s; ports present: %s (pass --port PATH, or --vid/--pid/--serial/--product)", want, describePorts(ports))
	}
	return PortInfo{}, fmt.Errorf("%d serial ports with %s: %s (pass --port PATH or --serial to pick one)", len(found), want, describePorts(found))
}

// StatusProbe returns a FindPort probe that opens a port, sends one STATUS
// command and accepts the port if a HEADER comes back within timeout. A
// console port only sees one short binary line it ignores. A port another
// process has is not opened (see OpenPort), and the error says who has it.
func StatusProbe(baud int, timeout time.Duration) func(PortInfo) error {
	return func(p PortInfo) error {
		port, err := OpenPort(p.Path, baud)
		if err != nil {
			return err
		}
		s := NewSession(port, nil, Timeouts{Reply: timeout, Retries: 0, Poll: timeout, LogFlush: timeout})
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*timeout)
		defer cancel()
		if _, err = s.Status(ctx); err != nil {
			return fmt.Errorf("%s: %w", p.Path, err)
		}
		return nil
	}
}

func eqFold(want, got string) bool {
	return want == "" || strings.EqualFold(strings.TrimPrefix(strings.ToLower(want), "0x"), got)
}

func describeMatch(m PortMatch) string {
	var parts []string
	if m.VID != "" || m.PID != "" {
		parts = append(parts, fmt.Sprintf("USB id %s:%s", orAny(m.VID), orAny(m.PID)))
	}
	if m.Serial != "" {
		parts = append(parts, fmt.Sprintf("serial %q", m.Serial))
	}
	if m.Product != "" {
		parts = append(parts, fmt.Sprintf("product %q", m.Product))
	}
	if len(parts) == 0 {
		return "any USB id"
	}
	return strings.Join(parts, ", ")
}

func orAny(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

func describePorts(ports []PortInfo) string {
	var parts []string
	for _, p := range ports {
		if !p.IsUSB {
			parts = append(parts, p.Path+" (not USB)")
			continue
		}
		d := fmt.Sprintf("%s (%s:%s", p.Path, p.USB.VID, p.USB.PID)
		if p.USB.Product != "" {
			d += fmt.Sprintf(" %q", p.USB.Product)
		}
		if p.USB.Serial != "" {
			d += " serial " + p.USB.Serial
		}
		parts = append(parts, d+")")
	}
	return strings.Join(parts, ", ")
}
