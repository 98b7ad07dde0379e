// SPDX-License-Identifier: Apache-2.0

package loadtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/loadtest/echotest"
)

// shortOptions are steps short enough for tests: 0.6 s steps, goodput
// between 0.2 s and 0.6 s.
func shortOptions(rates []float64, passes int) Options {
	o := DefaultOptions()
	o.Rates = rates
	o.StepTime = 600 * time.Millisecond
	o.WindowStart, o.WindowEnd = 200*time.Millisecond, 600*time.Millisecond
	o.Passes = passes
	o.Drain = 200 * time.Millisecond
	o.ProbeTimeout = time.Second
	return o
}

// measure runs o against target. A run in which this host could not send
// some rate (other builds and tests share its two cores) says nothing about
// the target, so it is repeated, up to three runs in all.
func measure(t testing.TB, target string, o Options) *Run {
	t.Helper()
	var run *Run
	for attempt := 1; attempt <= 3; attempt++ {
		var err error
		if run, err = Measure(context.Background(), target, o, nil); err != nil {
			t.Fatal(err)
		}
		var table bytes.Buffer
		if err := WriteTable(&table, run); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s, run %d:\n%s", target, attempt, table.String())
		if run.Summary.HostLimitedFrom == 0 {
			break
		}
	}
	return run
}

// measureModel is measure against a model echo (echotest.StartModel),
// a new one for each run, so that the model's log is the run's alone.
func measureModel(t testing.TB, rxCost, echoCost time.Duration, o Options) (*Run, []echotest.Echo) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		model := echotest.StartModel(t, rxCost, echoCost, 32)
		run, err := Measure(context.Background(), model.Addr.String(), o, nil)
		if err != nil {
			t.Fatal(err)
		}
		var table bytes.Buffer
		if err := WriteTable(&table, run); err != nil {
			t.Fatal(err)
		}
		t.Logf("run %d:\n%s", attempt, table.String())
		if run.Summary.HostLimitedFrom == 0 || attempt == 3 {
			return run, model.Echoes()
		}
	}
}

// checkAgainstModel compares every step of run with the log of the model
// that answered it (a model that answered nothing else): each count must be
// what crossed the wire. The receiver's kernel stamps an echo somewhere
// inside the model's send, so an echo sent across an edge of a window may
// count on either side; nothing else may differ. This holds however late
// the host ran the sender, the model or the receiver, so it is exact on a
// loaded machine too.
func checkAgainstModel(run *Run, log []echotest.Echo) (problems []string) {
	o := run.Settings.Options()
	type count struct{ sure, unsure int }
	type view struct{ echoes, inWindow, late count }
	views := map[stepKey]*view{}
	starts := map[stepKey]time.Time{}
	var lastEnd time.Time
	for _, st := range run.Steps {
		k := stepKey{uint16(st.Pass), uint16(slices.Index(o.Rates, st.Offered))}
		views[k] = &view{}
		starts[k] = run.Started.Add(time.Duration(math.Round(st.Start * 1e9)))
		lastEnd = starts[k].Add(o.StepTime)
	}
	// on books an echo sent between b and a into c when it lies in [from, to).
	on := func(c *count, b, a, from, to time.Time) {
		switch {
		case !b.Before(from) && a.Before(to):
			c.sure++
		case !a.Before(from) && b.Before(to):
			c.unsure++
		}
	}
	never := time.Unix(1<<40, 0)
	for _, e := range log {
		s, ok := decodeEcho(e.Data, binary.LittleEndian.Uint32(e.Data), o.Payload)
		if !ok {
			problems = append(problems, fmt.Sprintf("the model echoed %d bytes that are no datagram of the run", len(e.Data)))
			continue
		}
		if s.step == probeStep {
			continue
		}
		k := stepKey{s.pass, s.step}
		v, start := views[k], starts[k]
		if v == nil {
			problems = append(problems, fmt.Sprintf("the model echoed a datagram of pass %d, step %d, which the run does not have", s.pass, s.step))
			continue
		}
		// The receiver has at least the drain time to take in what came
		// before the last step ended; later echoes may miss the run's end.
		on(&v.echoes, e.Before, e.After, time.Time{}, lastEnd)
		if !e.Before.Before(lastEnd) {
			v.echoes.unsure++
		}
		on(&v.inWindow, e.Before, e.After, start.Add(o.WindowStart), start.Add(o.WindowEnd))
		on(&v.late, e.Before, e.After, start.Add(o.StepTime), never)
	}
	for _, st := range run.Steps {
		v := views[stepKey{uint16(st.Pass), uint16(slices.Index(o.Rates, st.Offered))}]
		for _, c := range []struct {
			name string
			got  int
			want count
		}{{"echoes", st.Echoes, v.echoes}, {"in the window", st.InWindow, v.inWindow}, {"late", st.Late, v.late}} {
			if c.got < c.want.sure || c.got > c.want.sure+c.want.unsure {
				problems = append(problems, fmt.Sprintf("pass %d, %v/s: %d %s, the model sent %d (and %d at an edge)", st.Pass, st.Offered, c.got, c.name, c.want.sure, c.want.unsure))
			}
		}
		if st.Duplicates != 0 || st.Reordered != 0 || st.Echoes > st.Sent {
			problems = append(problems, fmt.Sprintf("pass %d, %v/s: %d duplicates, %d reordered, %d echoes of %d sent from a model that answers each datagram once, in order", st.Pass, st.Offered, st.Duplicates, st.Reordered, st.Echoes, st.Sent))
		}
	}
	if run.Unmatched != 0 {
		problems = append(problems, fmt.Sprintf("%d unmatched datagrams", run.Unmatched))
	}
	return problems
}

// TestServiceRatePeer: an echo that serves 1000 datagrams per second from a
// 32-datagram queue. Every count of every step must be what the model sent
// (checkAgainstModel), and above its capacity the model must have dropped
// datagrams and still held a full queue when the step ended (late echoes).
// How close the measured lossless rate and plateau come to 1000/s is a
// question of timing: BenchmarkModelPeers.
func TestServiceRatePeer(t *testing.T) {
	const capacity = 1000.0
	rates, _ := ParseSteps("500:250:1500")
	run, log := measureModel(t, 0, time.Second/time.Duration(capacity), shortOptions(rates, 2))
	problems := checkAgainstModel(run, log)
	for _, st := range run.Steps {
		// At most capacity × the step time, plus a queue, can be answered.
		if st.Offered > capacity && (st.Late == 0 || st.Echoes >= st.Sent) {
			problems = append(problems, fmt.Sprintf("pass %d, %v/s, above capacity: %d late, %d of %d echoed", st.Pass, st.Offered, st.Late, st.Echoes, st.Sent))
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestLivelockPeer: an echo that spends 0.4 ms on every datagram it
// receives, kept or not, and 1 ms on every echo. Its goodput peaks near
// 714/s and then falls as the offered rate grows (to about 200/s at 2000/s
// offered). Every count must be what the model sent, the model's echoes
// per step must fall past the peak, and the summary must say livelock: the
// highest rate's goodput is bounded by its echoes (a third of the peak's),
// wherever the host's delays move them.
func TestLivelockPeer(t *testing.T) {
	run, log := measureModel(t, 400*time.Microsecond, time.Millisecond, shortOptions([]float64{250, 500, 750, 1000, 1500, 2000}, 1))
	problems := checkAgainstModel(run, log)
	if s := run.Summary; !s.Livelock {
		problems = append(problems, fmt.Sprintf("no livelock: %.1f/s at the highest rate, peak %.1f/s", s.AtHighest, s.Peak))
	}
	for i := 1; i < len(run.Steps); i++ {
		prev, st := run.Steps[i-1], run.Steps[i]
		if st.Offered > 1000 && !st.HostLimited && st.Echoes >= prev.Echoes {
			problems = append(problems, fmt.Sprintf("echoes do not fall past the peak: %v/s → %d, %v/s → %d", prev.Offered, prev.Echoes, st.Offered, st.Echoes))
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// BenchmarkModelPeers measures the two models with the reports' method
// (2 s steps, 3 passes) and reports how close the method comes to what
// they are built to do: the service-rate echo's lossless rate and plateau
// (1000/s), the livelock echo's goodput at 2000/s offered (200/s).
//
//	go test -run - -bench ModelPeers -benchtime 1x ./loadtest
func BenchmarkModelPeers(b *testing.B) {
	b.Run("service-rate", func(b *testing.B) {
		rates, _ := ParseSteps("500:250:1500")
		o := DefaultOptions()
		o.Rates = rates
		for i := 0; i < b.N; i++ {
			run, _ := measureModel(b, 0, time.Millisecond, o)
			s := run.Summary
			b.ReportMetric(s.Lossless, "lossless/s")
			b.ReportMetric(s.AtHighest, "plateau/s")
			b.ReportMetric(s.Peak, "peak/s")
		}
	})
	b.Run("livelock", func(b *testing.B) {
		o := DefaultOptions()
		o.Rates = []float64{250, 500, 750, 1000, 1500, 2000}
		for i := 0; i < b.N; i++ {
			run, _ := measureModel(b, 400*time.Microsecond, time.Millisecond, o)
			s := run.Summary
			b.ReportMetric(s.Peak, "peak/s")
			b.ReportMetric(s.AtHighest, "at-2000/s")
		}
	})
}

// TestDuplicatesAndReordering: an echo that answers twice counts every
// datagram once and the copies as duplicates; one that swaps neighbours
// has about half of its echoes reordered; both lose nothing.
func TestDuplicatesAndReordering(t *testing.T) {
	o := shortOptions([]float64{200}, 1)
	dup := measure(t, echotest.StartEcho(t, true, false).String(), o)
	if st := dup.Steps[0]; st.Duplicates != st.Echoes || st.Echoes != st.Sent || st.Reordered != 0 {
		t.Errorf("duplicating echo: %+v", st)
	}
	swap := measure(t, echotest.StartEcho(t, false, true).String(), o)
	// The last datagram of the step may be held until the next one, which never comes.
	if st := swap.Steps[0]; st.Duplicates != 0 || st.Echoes < st.Sent-1 || st.Reordered < st.Sent/2-1 || st.Reordered > st.Sent/2+1 {
		t.Errorf("swapping echo: %+v", st)
	}
}

// TestBadTargets: each gives one clear error within the probe timeout,
// never a hang or a table of zeros.
func TestBadTargets(t *testing.T) {
	o := shortOptions([]float64{100}, 1)
	o.ProbeTimeout = 500 * time.Millisecond
	// A port nobody listens on: the kernel answers with ICMP port unreachable.
	closedConn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closedConn.LocalAddr().String()
	closedConn.Close()
	silent := echotest.StartSilent(t).String()
	for _, c := range []struct{ target, want string }{
		{closedAddr, "port unreachable (ICMP): nothing listens on that port"},
		{silent, "no echo within 500ms (is a UDP echo server listening there?)"},
		{"nonexistent.invalid:7", "target nonexistent.invalid:7:"},
		{"127.0.0.1", "missing port"},
		{"127.0.0.1:99999", "invalid port"},
	} {
		start := time.Now()
		_, err := Measure(context.Background(), c.target, o, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", c.target, err, c.want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v", c.target, d)
		}
	}
	for _, rates := range [][]float64{{0}, {-5}, {math.Inf(1)}, {100, 50}, {0.1}} {
		o := shortOptions(rates, 1)
		if _, err := Measure(context.Background(), silent, o, nil); err == nil {
			t.Errorf("rates %v: no error", rates)
		}
	}
}

// TestSummary: the summary's figures follow from the steps' counts by the
// reports' definitions (answered at ≥ 99 % less one datagram, livelock
// below 90 % of the peak, the host the limit below 99 % sent).
func TestSummary(t *testing.T) {
	o := Options{Rates: []float64{100, 200, 300}, StepTime: time.Second, WindowEnd: time.Second, Passes: 2, Payload: HeaderSize, ProbeTimeout: time.Second}
	step := func(pass int, offered float64, sent, inWindow int) Step {
		return Step{Pass: pass, Offered: offered, Sent: sent, Echoes: inWindow, InWindow: inWindow}
	}
	run := &Run{Settings: settingsOf(o), Steps: []Step{
		step(1, 100, 100, 99), step(1, 200, 200, 197), step(1, 300, 300, 150),
		step(2, 100, 100, 100), step(2, 200, 200, 196), step(2, 300, 296, 150),
	}}
	run.derive()
	s := run.Summary
	want := Summary{Lossless: 100, Peak: 196.5, PeakSD: math.Sqrt(0.5), PeakAt: 200, AtHighest: 150, Livelock: true, HostLimitedFrom: 300}
	s.Curve = nil
	if !reflect.DeepEqual(s, want) {
		t.Errorf("summary %+v, want %+v", s, want)
	}
	if p := run.Summary.Curve[1]; p.Answered || p.Goodput != 196.5 || p.LossPct != 1.75 {
		t.Errorf("200/s: %+v; 196 in the window is below 99 %% less one", p)
	}
}
