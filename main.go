// SPDX-License-Identifier: Apache-2.0

// Command tcmprof profiles Cortex-M firmware from on-target PC samples and
// plans which functions go into ITCM. See README.md.
package main

import (
	"os"

	"github.com/tcmprof/tcmprof/cmd"
)

func main() {
	os.Exit(cmd.Main(cmd.StdStreams(), os.Args[1:]))
}
