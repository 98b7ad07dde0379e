// SPDX-License-Identifier: Apache-2.0

package sample

import "github.com/tcmprof/tcmprof/internal/wording"

// What a capture keeps of the device: its HEADER and its threads' stack
// tops, as the protocol (firmware-sampler/docs/protocol.md) defines them.
// They are the capture's own types because a capture file stores them as
// they came; package device frames them on the wire.

// Limits of the protocol that bind a capture too: Validate checks them,
// and the record codec writes at most MaxRecordSize (MaxStackRecordSize
// with STACK) bytes a record. The firmware has them in tcmprof_sampler.h;
// device's TestProtocolLimits checks they agree.
const (
	// MaxBuildID is the longest build-id a HEADER may carry.
	MaxBuildID = 32
	// MaxRecordSize is a record's worst-case encoded size: varints of 5
	// bytes for PC, LR and THREAD, 2 for EXC (at most 511). The firmware's
	// TCMP_MAX_RECORD_BYTES.
	MaxRecordSize = 5 + 5 + 2 + 5

	// Stack words per record (K) a STACK run may ask for (protocol 1.1).
	MinStackWords = 8
	MaxStackWords = 64
	// StackRefWindow is how many records back a stack may refer to.
	StackRefWindow = 16
	// MaxStackRecordSize is a STACK record's worst case: the other fields,
	// SP (5), the word count and the reference (1 each), one run pair (2)
	// and MaxStackWords literal words of 5 bytes. The firmware's
	// TCMP_MAX_STACK_RECORD_BYTES.
	MaxStackRecordSize = MaxRecordSize + 5 + 1 + 1 + 2 + 5*MaxStackWords
)

// State is the sampler's state in a HEADER.
type State uint8

// Sampler states.
const (
	StateIdle    State = 0
	StateRunning State = 1
	StateHolding State = 2
)

var stateNames = map[State]string{
	StateIdle:    "idle",
	StateRunning: "running",
	StateHolding: "holding",
}

func (s State) String() string { return wording.Name(stateNames, s, "state %d") }

// Mode is how a run delivers its records.
type Mode uint8

// Run modes.
const (
	ModeSnapshot Mode = 0
	ModeStream   Mode = 1
)

var modeNames = map[Mode]string{
	ModeSnapshot: "snapshot",
	ModeStream:   "stream",
}

func (m Mode) String() string { return wording.Name(modeNames, m, "mode %d") }

// Header is the HEADER frame: the sampler's settings and counters.
type Header struct {
	ProtoMajor, ProtoMinor uint8
	SamplerVersion         [3]uint8
	State                  State
	Mode                   Mode
	Fields                 Fields
	JitterPct              uint8
	CPUHz                  uint32
	TimerHz                uint32
	IntervalTicks          uint32 // mean sampling interval in timer ticks
	Capacity               uint32 // records the device buffer holds
	Taken                  uint32 // samples taken since START (Stored + Dropped)
	Dropped                uint32 // samples not stored because the buffer was full
	Stored                 uint32 // records stored since START: the next record's index
	HeldFrom               uint32 // lowest record index the device still holds
	BuildID                []byte // GNU build-id of the running image; empty when it has none
	StackWords             uint8  // K of a run with FieldStack, else 0 (protocol 1.1; 0 from a 1.0 device)
	Coding                 Coding // how DATA records are coded (protocol 1.2; CodingV10 from older devices)
}

// MaxStackTopWords is the most words a STACK_TOP frame carries.
const MaxStackTopWords = 32

// StackTop is one STACK_TOP frame (protocol 1.3): the top of a thread's
// stack and the words just below it, which the device reads once, in
// thread context, when it sends the thread table. They hold the frames
// that live as long as the thread (its entry function's saved registers
// and return address), which a sample's K words from SP never reach below
// a large entry frame, so the unwinder continues every sample of the
// thread through them.
// Its JSON form is the capture file's (docs/capture-format.md).
type StackTop struct {
	Thread uint32   `json:"thread"`
	Top    uint32   `json:"top"`   // the address just above the stack
	Words  []uint32 `json:"words"` // the memory at Top − 4·len(Words) … Top − 4
}
