// SPDX-License-Identifier: Apache-2.0

package device

import (
	"github.com/tcmprof/tcmprof/sample"
	"strings"
	"testing"
)

func TestFindPort(t *testing.T) {
	sampler := PortInfo{Path: "/dev/ttyACM1", IsUSB: true, USB: sample.USBInfo{VID: "2fe3", PID: "0001", Serial: "E1", Product: "tcmprof sampler"}}
	other := PortInfo{Path: "/dev/ttyACM0", IsUSB: true, USB: sample.USBInfo{VID: "16c0", PID: "0483", Serial: "123", Product: "USB Serial"}}
	twin := PortInfo{Path: "/dev/ttyACM2", IsUSB: true, USB: sample.USBInfo{VID: "2fe3", PID: "0001", Serial: "E2", Product: "Zephyr CDC ACM"}}
	uart := PortInfo{Path: "/dev/ttyS0"}
	def := PortMatch{VID: DefaultVID, PID: DefaultPID}
	tests := []struct {
		name  string
		ports []PortInfo
		m     PortMatch
		want  string // path, or an error substring
	}{
		{"one match", []PortInfo{uart, other, sampler}, def, "/dev/ttyACM1"},
		{"uppercase and 0x ids", []PortInfo{other, sampler}, PortMatch{VID: "0x2FE3", PID: "0001"}, "/dev/ttyACM1"},
		{"by serial", []PortInfo{sampler, twin}, PortMatch{VID: "2fe3", Serial: "E2"}, "/dev/ttyACM2"},
		{"by product", []PortInfo{sampler, twin}, PortMatch{Product: "TCMPROF"}, "/dev/ttyACM1"},
		{"several", []PortInfo{sampler, twin}, def, "2 serial ports with USB id 2fe3:0001: /dev/ttyACM1 (2fe3:0001 \"tcmprof sampler\" serial E1), /dev/ttyACM2"},
		{"none", []PortInfo{uart, other}, def, "no serial port with USB id 2fe3:0001; ports present: /dev/ttyS0 (not USB), /dev/ttyACM0 (16c0:0483"},
		{"no ports", nil, def, "no serial ports at all"},
	}
	for _, tt := range tests {
		p, err := FindPort(tt.ports, tt.m, nil)
		got := p.Path
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
