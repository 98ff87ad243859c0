//go:build unix

package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/worker/builtin"
)

// Every example in the CLI's help that creates a shell job passes params
// the shell handler accepts, checked with the handler's own decoder: an
// example that fails its first run teaches the wrong thing.
func TestShellExamplesHaveValidParams(t *testing.T) {
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, line := range exampleLines(c.Example + "\n" + c.Long) {
			line = strings.TrimPrefix(line, "$ ")
			// Only command lines: prose may start with "jetjob" too.
			if f := strings.Fields(line); len(f) < 2 || f[0] != "jetjob" || !isCommand(a, f[1]) {
				continue
			}
			words, err := shellWords(line)
			if err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
				continue
			}
			// A fresh tree per example: parsing flags changes a command.
			cmd, rest, err := a.rootCmd().Find(words[1:])
			if err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
				continue
			}
			handler, _ := cmd.Flags().GetString("handler")
			if cmd.CommandPath() != "jetjob jobs create" || handler != "shell" {
				continue
			}
			params, _ := cmd.Flags().GetString("params")
			if err := builtin.CheckShellParams(params); err != nil {
				t.Errorf("%s: example %q: the shell handler refuses its params: %v", c.CommandPath(), line, err)
			}
			checked++
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCmd())
	if checked == 0 {
		t.Fatal("no example creates a shell job: nothing was checked")
	}
}

// isCommand reports whether name is a subcommand of jetjob.
func isCommand(a *app, name string) bool {
	c, _, err := a.rootCmd().Find([]string{name})
	return err == nil && c.Name() != "jetjob"
}

// exampleLines joins lines continued with a trailing backslash.
func exampleLines(text string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if strings.HasSuffix(l, `\`) {
			cur.WriteString(strings.TrimSuffix(l, `\`))
			continue
		}
		cur.WriteString(l)
		out = append(out, strings.TrimSpace(cur.String()))
		cur.Reset()
	}
	return out
}

// shellWords splits a command line as sh would for the quoting examples
// use: single quotes, double quotes, blanks.
func shellWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'' || c == '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				return nil, io.ErrUnexpectedEOF
			}
			w.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
