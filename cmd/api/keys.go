package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/orderflow/orderflow/internal/apikeys"
	"github.com/orderflow/orderflow/internal/platform/cli"
	"github.com/orderflow/orderflow/internal/platform/config"
	"github.com/orderflow/orderflow/internal/platform/database"
)

// keys is `api keys create|list|revoke`: it reads DATABASE_URL (and
// API_KEY_CACHE_TTL to say when a revoked key stops working), nothing else.
func keys(ctx context.Context, getenv func(string) string, op, tenant string, args []string, stdout io.Writer) error {
	switch {
	case op != "revoke" && (tenant == "" || len(args) > 0):
		return cli.Usagef("want --tenant NAME and no other argument")
	case op == "revoke" && len(args) != 1:
		return cli.Usagef("want one KEY_PREFIX")
	}
	e := config.New(getenv)
	url, ttl := e.Required("DATABASE_URL"), e.Duration("API_KEY_CACHE_TTL", apikeys.DefaultCacheTTL)
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	pool, err := database.Open(ctx, url, 2, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	store := apikeys.New(pool, ttl)
	switch op {
	case "create":
		key, err := store.Create(ctx, tenant)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, key)
		return err
	case "list":
		infos, err := store.List(ctx, tenant)
		for _, k := range infos {
			state := "active"
			if k.RevokedAt != nil {
				state = "revoked " + k.RevokedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(stdout, "%s\tcreated %s\t%s\n", k.Prefix, k.CreatedAt.UTC().Format(time.RFC3339), state)
		}
		return err
	}
	if err := store.Revoke(ctx, args[0]); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "revoked %s; API processes refuse it within %s (API_KEY_CACHE_TTL)\n", args[0], ttl)
	return err
}
