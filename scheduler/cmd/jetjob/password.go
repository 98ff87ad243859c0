package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"
)

// maxPasswordInput bounds what --password-stdin reads (the server takes at
// most a few hundred bytes).
const maxPasswordInput = 4 << 10

// terminal returns stdin's file descriptor when stdin is a terminal.
func (a *app) terminal() (int, bool) {
	f, ok := a.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0, false
	}
	return int(f.Fd()), true
}

// readPassword reads a password: with fromStdin, the one line stdin holds
// (its line ending dropped); else from the terminal without echo, twice
// when confirm; else it refuses, since a password must never come from a
// command-line flag (every local user can read those).
func (a *app) readPassword(fromStdin, confirm bool, prompt string) (string, error) {
	if fromStdin {
		pws, err := a.stdinPasswords(1)
		if err != nil {
			return "", err
		}
		return pws[0], nil
	}
	fd, ok := a.terminal()
	if !ok {
		return "", usagef("stdin is not a terminal, so the password cannot be asked for: pipe it in with --password-stdin")
	}
	pw, err := askHidden(fd, a.stderr, prompt+": ")
	if err != nil {
		return "", err
	}
	if pw == "" {
		return "", usagef("empty password")
	}
	if confirm {
		again, err := askHidden(fd, a.stderr, "Again: ")
		if err != nil {
			return "", err
		}
		if again != pw {
			return "", usagef("the two passwords differ")
		}
	}
	return pw, nil
}

// stdinPasswords reads the n passwords stdin holds, one a line, for
// --password-stdin.
func (a *app) stdinPasswords(n int) ([]string, error) {
	b, err := io.ReadAll(io.LimitReader(a.stdin, maxPasswordInput+1))
	if err != nil {
		return nil, fmt.Errorf("reading the password from stdin: %w", err)
	}
	if len(b) > maxPasswordInput {
		return nil, usagef("--password-stdin: stdin holds more than %d bytes", maxPasswordInput)
	}
	lines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n"), "\n")
	want := "the password alone"
	if n > 1 {
		want = fmt.Sprintf("%d passwords, one a line", n)
	}
	switch {
	case len(lines) == 1 && lines[0] == "":
		return nil, usagef("--password-stdin: stdin is empty (pipe the password in, e.g. from a secrets manager)")
	case n == 1 && len(lines) > 1:
		return nil, usagef("--password-stdin: stdin holds more than one line; give %s", want)
	case len(lines) != n:
		held := fmt.Sprintf("%d lines", len(lines))
		if len(lines) == 1 {
			held = "one line"
		}
		return nil, usagef("--password-stdin: stdin holds %s; give %s", held, want)
	case slices.Contains(lines, ""):
		return nil, usagef("--password-stdin: an empty line; give %s", want)
	case slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "\r") }):
		return nil, usagef("--password-stdin: a stray carriage return; give %s", want)
	}
	return lines, nil
}

func askHidden(fd int, prompt io.Writer, ask string) (string, error) {
	fmt.Fprint(prompt, ask)
	b, err := term.ReadPassword(fd)
	fmt.Fprintln(prompt)
	if err != nil {
		return "", fmt.Errorf("reading the password from the terminal: %w", err)
	}
	return string(b), nil
}

// askLine reads one line from the terminal, with echo.
func (a *app) askLine(ask string) (string, error) {
	if _, ok := a.terminal(); !ok {
		return "", errors.New("stdin is not a terminal")
	}
	fmt.Fprint(a.stderr, ask)
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", fmt.Errorf("reading from the terminal: %w", err)
	}
	return strings.TrimSpace(line), nil
}
