// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// interruptChannel is how the commands that run the sampler (capture, top,
// bench) end on a signal: the first SIGINT or SIGTERM closes the returned
// channel (end the run: STOP, receive what is left, write what was
// captured), after calling onFirst with the signal, when not nil, to say
// so; the second cancels
// ctx (give up now, keeping what arrived) with a cause that names the
// signal, which is what the command reports rather than "context
// canceled". SIGTERM is handled like Ctrl-C because a service manager or a
// shell's kill (timeout(1), say) must not lose a capture or leave the
// device sampling.
func interruptChannel(ctx context.Context, cancel context.CancelCauseFunc, onFirst func(os.Signal)) <-chan struct{} {
	stop := make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		defer signal.Stop(sig)
		select {
		case s := <-sig:
			if onFirst != nil {
				onFirst(s)
			}
			close(stop)
		case <-ctx.Done():
			return
		}
		select {
		case s := <-sig:
			cancel(stoppedError{s})
		case <-ctx.Done():
		}
	}()
	return stop
}

// againToStopNow is what the notice after a first signal says a second
// one does, in the words of the signal that came: after a SIGTERM (a
// service manager, timeout(1)) there may be no keyboard to press Ctrl-C
// on.
func againToStopNow(first os.Signal) string {
	if first == os.Interrupt {
		return "Ctrl-C again to stop now"
	}
	return fmt.Sprintf("a second signal (%v again, or Ctrl-C) stops now", signalName(first))
}

// signalName is a signal as a user would name it: SIGTERM, Ctrl-C.
func signalName(s os.Signal) string {
	if s == os.Interrupt {
		return "Ctrl-C"
	}
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return s.String()
}

// interruptedError is why a run ended early at the first signal (bench:
// the steps so far are kept), in the signal's words rather than "context
// canceled".
type interruptedError struct{ sig os.Signal }

func (e interruptedError) Error() string {
	if e.sig == nil {
		return "interrupted"
	}
	return "interrupted by " + signalName(e.sig)
}

// stoppedError is why a run stopped before its end: a second signal.
type stoppedError struct{ sig os.Signal }

func (e stoppedError) Error() string {
	if e.sig == os.Interrupt {
		return "stopped by a second Ctrl-C"
	}
	return "stopped by a second signal (SIGTERM)"
}
