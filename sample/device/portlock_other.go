// SPDX-License-Identifier: Apache-2.0

//go:build !unix

package device

import "io"

// lockPort takes no lock where flock does not exist; the serial library's
// own exclusive open is all there is.
func lockPort(string) (io.Closer, error) { return nil, nil }

// portHolders finds no processes where there is no /proc.
func portHolders(string) []string { return nil }
