// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// interruptChannel is how the commands that run the sampler (capture, top,
// bench) end on a signal: the first SIGINT or SIGTERM closes the returned
// channel (end the run: STOP, receive what is left, write what was
// captured) and calls onFirst, when not nil, to say so; the second cancels
// ctx (give up now, keeping what arrived) with a cause that names the
// signal, which is what the command reports rather than "context
// canceled". SIGTERM is handled like Ctrl-C because a service manager or a
// shell's kill (timeout(1), say) must not lose a capture or leave the
// device sampling.
func interruptChannel(ctx context.Context, cancel context.CancelCauseFunc, onFirst func()) <-chan struct{} {
	stop := make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		defer signal.Stop(sig)
		select {
		case <-sig:
			close(stop)
			if onFirst != nil {
				onFirst()
			}
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

// stoppedError is why a run stopped before its end: a second signal.
type stoppedError struct{ sig os.Signal }

func (e stoppedError) Error() string {
	if e.sig == os.Interrupt {
		return "stopped by a second Ctrl-C"
	}
	return "stopped by a second signal (SIGTERM)"
}
