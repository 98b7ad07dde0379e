// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// interruptChannel is how the commands that run the sampler (capture, top)
// end on a signal: the first SIGINT or SIGTERM closes the returned channel
// (end the run: STOP, receive what is left, write what was captured); the
// second cancels ctx (give up now). SIGTERM is handled like Ctrl-C because
// a service manager or a shell's kill must not lose a capture or leave the
// device sampling.
func interruptChannel(ctx context.Context, cancel context.CancelFunc) <-chan struct{} {
	stop := make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		defer signal.Stop(sig)
		select {
		case <-sig:
			close(stop)
		case <-ctx.Done():
			return
		}
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	return stop
}
