// Package cli is the command line of orderflow's binaries: subcommands with their
// own flags and help, read before any configuration, so that --help and version
// need no environment, each command reads only the settings it uses, and a usage
// error exits 2 (a failure exits 1).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/orderflow/orderflow/platform/version"
)

// ErrUsage marks an error in how a command was called: exit status 2.
var ErrUsage = errors.New("usage")

// Usagef is a usage error with a message.
func Usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// Command is one subcommand.
type Command struct {
	// Name is its words ("migrate", "keys create"); "" is the command run without
	// arguments.
	Name string
	// Args is the synopsis of its arguments ("--tenant NAME").
	Args    string
	Summary string
	// Flags declares its flags; nil for none.
	Flags func(fs *flag.FlagSet)
	// Run runs it once its flags are parsed; fs.Args() are the rest.
	Run func(ctx context.Context, fs *flag.FlagSet) error
}

// App is a binary's commands.
type App struct {
	Name     string
	Summary  string
	Commands []Command
	Stdout   io.Writer
	Stderr   io.Writer
}

// Run finds the command args name, parses its flags and runs it; it returns the
// process's exit status.
func (a App) Run(ctx context.Context, args []string) int {
	if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		a.usage(a.Stdout)
		return 0
	}
	if len(args) > 0 && args[0] == "version" {
		fmt.Fprintln(a.Stdout, a.Name, version.String())
		return 0
	}
	if len(args) > 0 && args[0] == "probe" {
		return Probe(ctx, args[1:], a.Stderr)
	}
	cmd, rest, ok := a.find(args)
	if !ok {
		fmt.Fprintf(a.Stderr, "%s: unknown command %q\n\n", a.Name, strings.Join(args, " "))
		a.usage(a.Stderr)
		return 2
	}
	fs := flag.NewFlagSet(strings.TrimSpace(a.Name+" "+cmd.Name), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if cmd.Flags != nil {
		cmd.Flags(fs)
	}
	switch err := fs.Parse(rest); {
	case errors.Is(err, flag.ErrHelp):
		a.commandUsage(a.Stdout, cmd, fs)
		return 0
	case err != nil:
		fmt.Fprintf(a.Stderr, "%s: %v\n\n", fs.Name(), err)
		a.commandUsage(a.Stderr, cmd, fs)
		return 2
	}
	err := cmd.Run(ctx, fs)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(a.Stderr, "%s: %v\n\n", fs.Name(), err)
		a.commandUsage(a.Stderr, cmd, fs)
		return 2
	}
	fmt.Fprintf(a.Stderr, "%s: %v\n", fs.Name(), err)
	return 1
}

// find is the command whose name is the longest prefix of args' words.
func (a App) find(args []string) (Command, []string, bool) {
	best, n := -1, -1
	for i, c := range a.Commands {
		words := strings.Fields(c.Name)
		if len(words) > len(args) || len(words) <= n {
			continue
		}
		match := true
		for j, w := range words {
			match = match && args[j] == w
		}
		if match && (len(words) > 0 || len(args) == 0 || strings.HasPrefix(args[0], "-")) {
			best, n = i, len(words)
		}
	}
	if best < 0 {
		return Command{}, nil, false
	}
	return a.Commands[best], args[n:], true
}

func (a App) usage(w io.Writer) {
	fmt.Fprintf(w, "%s: %s\n\nusage:\n", a.Name, a.Summary)
	for _, c := range a.Commands {
		fmt.Fprintf(w, "  %-44s %s\n", strings.Join(strings.Fields(a.Name+" "+c.Name+" "+c.Args), " "), c.Summary)
	}
	fmt.Fprintf(w, "  %-44s %s\n", a.Name+" version", "print the build's version")
	fmt.Fprintf(w, "  %-44s %s\n", a.Name+" probe URL", "exit 0 if URL answers 200 within 2 s (a container's healthcheck)")
	fmt.Fprintf(w, "\n%s COMMAND --help describes a command; settings are environment variables (see the README).\n", a.Name)
}

func (a App) commandUsage(w io.Writer, c Command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", strings.Join(strings.Fields(a.Name+" "+c.Name+" "+c.Args), " "), c.Summary)
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprintln(w, "\nflags:")
			first = false
		}
		fmt.Fprintf(w, "  --%s\t%s\n", f.Name, f.Usage)
	})
}

// Probe is `probe URL`, a healthcheck for images without a shell or curl: exit
// status 0 when URL answers 200 within 2 seconds, 1 when not, 2 without one URL.
func Probe(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) != 1 || !strings.HasPrefix(args[0], "http://") {
		fmt.Fprintln(stderr, "usage: probe http://HOST:PORT/PATH")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
	if err != nil {
		fmt.Fprintln(stderr, "probe:", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "probe:", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(stderr, "probe:", resp.Status)
		return 1
	}
	return 0
}
