// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// helperEnv makes the test binary run tcmprof (Main) with the arguments in
// it instead of the tests, so a test can signal or kill a real tcmprof
// process (startTcmprof).
const helperEnv = "TCMPROF_TEST_MAIN_ARGS"

// TestMain runs tcmprof when startTcmprof asks for it; otherwise it runs
// the tests.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(helperEnv); ok {
		os.Exit(Main(StdStreams(), strings.Split(args, "\x1f")))
	}
	os.Exit(m.Run())
}

// tcmprof runs tcmprof in this process with empty standard input.
func tcmprof(args ...string) (code int, stdout, stderr string) {
	return tcmprofStdin("", args...)
}

// tcmprofStdin runs tcmprof in this process with stdin as standard input.
func tcmprofStdin(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb}, args)
	return code, out.String(), errb.String()
}

// startTcmprof starts tcmprof as a child process; its stderr collects in
// the buffer.
func startTcmprof(t testing.TB, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe)
	c.Env = append(os.Environ(), helperEnv+"="+strings.Join(args, "\x1f"))
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c, &stderr
}

// parseFlags runs the command newCmd builds on args with a runF that only
// keeps the options: what the flags parse and validate to, without running
// anything.
func parseFlags[O any](newCmd func(Streams, func(*O, Streams) error) *cobra.Command, args ...string) (*O, error) {
	var got *O
	var out bytes.Buffer
	c := newCmd(Streams{In: strings.NewReader(""), Out: &out, Err: &out}, func(o *O, _ Streams) error {
		got = o
		return nil
	})
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&out)
	c.SilenceErrors, c.SilenceUsage = true, true
	if err := c.Execute(); err != nil {
		return nil, err
	}
	return got, nil
}
