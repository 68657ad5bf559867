// Command api serves orderflow's HTTP API.
//
//	api                                serve until SIGTERM, then drain
//	api migrate                        apply the database migrations and exit
//	api keys create --tenant T         print a new API key for tenant T (shown once)
//	api keys list --tenant T [-o json] list the tenant's keys (prefixes only)
//	api keys revoke KEY_PREFIX         revoke a key
//	api limits set --tenant T --rate R --burst B   the tenant's own request budget
//	api limits clear --tenant T        back to the default budget
//	api limits list [-o json]          the tenants with a budget of their own
//	api version                        print the build's version
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/orderflow/orderflow"
	"github.com/orderflow/orderflow/platform/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app(os.Getenv, os.Stdout, os.Stderr).Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// app is the binary's commands, orderflow's own kinds alone (package orderflow
// runs it with a team's kinds too).
func app(getenv func(string) string, stdout, stderr io.Writer) cli.App {
	return orderflow.API(getenv, stdout, stderr)
}
