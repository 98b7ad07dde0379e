// SPDX-License-Identifier: Apache-2.0

package device_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
	"github.com/tcmprof/tcmprof/sample/device/devicetest"
)

// A Zephyr image with the sampler shows two CDC-ACM ports with the same USB
// ids: the shell console and the sampler. --port auto must pick the one that
// speaks the protocol, and say so clearly when neither does.
func TestFindPortProbesTwinPorts(t *testing.T) {
	samplerPath, _, _ := devicetest.ServePty(t, newDevice(64, devicetest.Faults{}))
	consolePath := fakeConsole(t)
	ids := sample.USBInfo{VID: device.DefaultVID, PID: device.DefaultPID}
	console := device.PortInfo{Path: consolePath, IsUSB: true, USB: ids}
	sampler := device.PortInfo{Path: samplerPath, IsUSB: true, USB: ids}
	match := device.PortMatch{VID: device.DefaultVID, PID: device.DefaultPID}
	probe := device.StatusProbe(115200, 200*time.Millisecond)

	got, err := device.FindPort([]device.PortInfo{console, sampler}, match, probe)
	if err != nil || got.Path != samplerPath {
		t.Fatalf("FindPort = %q, %v; want the sampler's port %q", got.Path, err, samplerPath)
	}

	_, err = device.FindPort([]device.PortInfo{console, {Path: fakeConsole(t), IsUSB: true, USB: ids}}, match, probe)
	if err == nil || !strings.Contains(err.Error(), "none answered the sampler protocol") {
		t.Fatalf("two consoles: err = %v, want a 'none answered' error", err)
	}

	// The sampler's port in use (here by this process, on a port of its
	// own): the probe leaves it alone, and the error says why it did not
	// answer.
	held, err := device.OpenPort(samplerPath, 115200)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, err = device.FindPort([]device.PortInfo{console, sampler}, match, probe)
	if want := "opening " + samplerPath + ": the port is in use"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("sampler's port in use: err = %v, want %q", err, want)
	}
}

// fakeConsole is a pty whose far end behaves like a shell: it echoes what it
// reads and prints a prompt, never a frame.
func fakeConsole(t *testing.T) string {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { master.Close(); slave.Close() })
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := master.Read(buf)
			if err != nil {
				return
			}
			if _, err := io.WriteString(master, string(buf[:n])+"\r\nuart:~$ "); err != nil {
				return
			}
		}
	}()
	return slave.Name()
}
