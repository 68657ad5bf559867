package orderflow

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main runs a team's binary with its kinds: `BINARY api ...` is orderflow's
// API, `BINARY worker ...` its worker, each with every command of orderflow's
// binaries. It returns the exit status.
func Main(kinds ...Kind) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Dispatch(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, kinds...)
}

// Dispatch is Main on args and the given environment and output.
func Dispatch(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, kinds ...Kind) int {
	if len(args) > 0 {
		switch args[0] {
		case "api":
			return API(getenv, stdout, stderr, kinds...).Run(ctx, args[1:])
		case "worker":
			return Worker(getenv, stdout, stderr, kinds...).Run(ctx, args[1:])
		}
	}
	fmt.Fprintln(stderr, "usage: BINARY api [COMMAND] | BINARY worker [COMMAND] (each lists its commands with -h)")
	return 2
}
