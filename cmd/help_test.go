// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The help is what a user reads before the docs: every flag it names must
// be one the command takes, and every example must parse as written.

// allCommands is every command of the tree, the root included.
func allCommands(c *cobra.Command) []*cobra.Command {
	cmds := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		cmds = append(cmds, allCommands(sub)...)
	}
	return cmds
}

func helpTree() *cobra.Command {
	return NewRootCmd(Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
}

// longFlag is a flag named in running text: "--name", not inside a word.
var longFlag = regexp.MustCompile(`(?:^|[\s("'])--([a-z][a-z0-9-]*)`)

// A --name in a command's description is one of its own flags, or one of
// the command named just before it ("tcmprof plan --format json").
func TestHelpNamesOnlyItsFlags(t *testing.T) {
	root := helpTree()
	for _, c := range allCommands(root) {
		for _, m := range longFlag.FindAllStringSubmatchIndex(c.Long, -1) {
			name := c.Long[m[2]:m[3]]
			if c.Flags().Lookup(name) != nil || c.InheritedFlags().Lookup(name) != nil {
				continue
			}
			// A flag of another command the text names just before it:
			// "tcmprof plan --format json", "bench udp-echo --json".
			before := strings.Fields(c.Long[:m[2]])
			if otherCommandHas(root, before[max(0, len(before)-3):len(before)-1], name) {
				continue
			}
			t.Errorf("%q --help names --%s, which it does not take", c.CommandPath(), name)
		}
	}
}

// otherCommandHas says whether the command the last of words name (one
// to all of them, as "bench udp-echo") takes the flag.
func otherCommandHas(root *cobra.Command, words []string, flag string) bool {
	for i := range words {
		words[i] = strings.Trim(words[i], `"'(,`)
	}
	for i := range words {
		if other, rest, err := root.Find(words[i:]); err == nil && other != root && len(rest) == 0 && other.Flags().Lookup(flag) != nil {
			return true
		}
	}
	return false
}

// pflag shows a usage's first `quoted` word as the value's name: a usage
// with backquotes turns "--sim-json string" into a sentence fragment.
func TestFlagUsageHasNoBackquotes(t *testing.T) {
	for _, c := range allCommands(helpTree()) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%q --%s: usage %q has a backquote, shown as the value's name", c.CommandPath(), f.Name, f.Usage)
			}
		})
	}
}

// Every "tcmprof ..." line of every Examples section (with the lines a
// trailing backslash continues it on) names a command and flags that
// exist, with values they accept.
func TestHelpExamplesParse(t *testing.T) {
	for _, c := range allCommands(helpTree()) {
		for _, line := range strings.Split(strings.ReplaceAll(c.Example, "\\\n", " "), "\n") {
			words := strings.Fields(line)
			if len(words) == 0 || words[0] != "tcmprof" {
				continue
			}
			var args []string
			for _, w := range words[1:] {
				if w == "|" || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "<") || w == "#" {
					break
				}
				args = append(args, strings.Trim(w, `'"`))
			}
			// A fresh tree for each line: parsing sets the flags.
			root := helpTree()
			sub, rest, err := root.Find(args)
			if err != nil || sub == root && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
				t.Errorf("%q example %q: no such command (%v)", c.CommandPath(), line, err)
				continue
			}
			if err := sub.ParseFlags(rest); err != nil {
				t.Errorf("%q example %q: %v", c.CommandPath(), line, err)
			}
		}
	}
}

// Every command's --help fits an 80-column terminal: descriptions,
// examples and the flag list alike.
func TestHelpFitsEightyColumns(t *testing.T) {
	for _, c := range allCommands(helpTree()) {
		args := append(strings.Fields(c.CommandPath())[1:], "--help")
		code, stdout, stderr := tcmprof(args...)
		if code != 0 || stdout == "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		checkFits(t, c.CommandPath()+" --help", stdout)
	}
}
