package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/term"
)

// readPassword reads the password for hash-password: on a terminal it
// prompts twice without echo, so the password is neither shown nor left in
// the shell history; otherwise it reads one line from stdin (a pipe or a
// file), without the line ending.
func readPassword(stdin io.Reader, prompt io.Writer) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return promptPassword(int(f.Fd()), prompt)
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// promptPassword asks for the password and its confirmation on the
// terminal fd.
func promptPassword(fd int, prompt io.Writer) (string, error) {
	restore, err := restoreOnInterrupt(fd, prompt)
	if err != nil {
		return "", err
	}
	defer restore()
	ask := func(label string) (string, error) {
		fmt.Fprint(prompt, label)
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(prompt) // the Enter key was not echoed
		if err != nil {
			return "", fmt.Errorf("read password from the terminal: %w", err)
		}
		return string(b), nil
	}
	pw, err := ask("Password: ")
	if err != nil || pw == "" {
		return pw, err
	}
	again, err := ask("Confirm password: ")
	if err != nil {
		return "", err
	}
	if again != pw {
		return "", errors.New("the passwords do not match; nothing was hashed")
	}
	return pw, nil
}

// restoreOnInterrupt puts the terminal's echo back if Ctrl-C ends the
// program while echo is off (term.ReadPassword restores it only when it
// returns). The returned func stops watching.
func restoreOnInterrupt(fd int, prompt io.Writer) (func(), error) {
	state, err := term.GetState(fd)
	if err != nil {
		return nil, fmt.Errorf("terminal state: %w", err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
			_ = term.Restore(fd, state)
			fmt.Fprintln(prompt)
			os.Exit(130)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
	}, nil
}
