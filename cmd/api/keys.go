package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/orderflow/orderflow/internal/apikeys"
	"github.com/orderflow/orderflow/internal/platform/database"
)

const keysUsage = "usage: api keys create --tenant NAME | api keys list --tenant NAME | api keys revoke KEY_PREFIX"

// keys is `api keys create|list|revoke`.
func keys(ctx context.Context, c cfg, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(keysUsage)
	}
	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	tenant := fs.String("tenant", "", "tenant the keys belong to")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	pool, err := database.Open(ctx, c.DatabaseURL, 2, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	store := apikeys.New(pool, c.KeyCacheTTL)
	switch {
	case args[0] == "create" && *tenant != "":
		key, err := store.Create(ctx, *tenant)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, key)
		return err
	case args[0] == "list" && *tenant != "":
		infos, err := store.List(ctx, *tenant)
		for _, k := range infos {
			state := "active"
			if k.RevokedAt != nil {
				state = "revoked " + k.RevokedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(stdout, "%s\tcreated %s\t%s\n", k.Prefix, k.CreatedAt.UTC().Format(time.RFC3339), state)
		}
		return err
	case args[0] == "revoke" && fs.NArg() == 1:
		if err := store.Revoke(ctx, fs.Arg(0)); err != nil {
			return err
		}
		_, err := fmt.Fprintf(stdout, "revoked %s; API processes refuse it within %s (API_KEY_CACHE_TTL)\n", fs.Arg(0), c.KeyCacheTTL)
		return err
	}
	return errors.New(keysUsage)
}
