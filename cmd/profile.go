//go:build !wip

package cmd

import (
	"fmt"
	"os"

	pprof "github.com/google/pprof/profile"
	"github.com/spf13/cobra"
)

// inputOptions are the flags of every command that reads a capture or a
// profile (profile, view, report, diff).
type inputOptions struct{}

func (o *inputOptions) addFlags(c *cobra.Command) {}

// loadProfile reads path as a pprof profile.
func (o *inputOptions) loadProfile(s Streams, path string) (*pprof.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := pprof.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: not a pprof profile: %w", path, err)
	}
	return p, nil
}
