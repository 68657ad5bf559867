package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/orderflow/orderflow/internal/apikeys"
	"github.com/orderflow/orderflow/internal/platform/database"
)

// keys is `api keys create --tenant T`.
func keys(ctx context.Context, c cfg, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: api keys create --tenant NAME")
	}
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	tenant := fs.String("tenant", "", "tenant the key belongs to")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *tenant == "" {
		return errors.New("usage: api keys create --tenant NAME")
	}
	pool, err := database.Open(ctx, c.DatabaseURL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	key, err := apikeys.New(pool).Create(ctx, *tenant)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, key)
	return err
}
