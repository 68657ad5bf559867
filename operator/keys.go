package operator

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/tenants/apikeys"
)

// keysCreateCommand is `api keys create --tenant NAME`.
func keysCreateCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var tenant string
	return cli.Command{Name: "keys create", Args: "--tenant NAME", Summary: "print a new API key for the tenant, shown once (DATABASE_URL)",
		Flags: func(fs *flag.FlagSet) { keysTenantFlag(fs, &tenant) },
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			return keys(ctx, getenv, "create", tenant, fs.Args(), cli.Table, stdout)
		}}
}

// keysListCommand is `api keys list --tenant NAME [-o json]`.
func keysListCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var tenant string
	var out cli.Format
	return cli.Command{Name: "keys list", Args: "--tenant NAME [-o json]", Summary: "list the tenant's keys by prefix (DATABASE_URL)",
		Flags: func(fs *flag.FlagSet) { keysTenantFlag(fs, &tenant); cli.OutputFlag(fs, &out) },
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			return keys(ctx, getenv, "list", tenant, fs.Args(), out, stdout)
		}}
}

// keysRevokeCommand is `api keys revoke KEY_PREFIX`.
func keysRevokeCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	return cli.Command{Name: "keys revoke", Args: "KEY_PREFIX", Summary: "revoke a key (DATABASE_URL, API_KEY_CACHE_TTL)",
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			return keys(ctx, getenv, "revoke", "", fs.Args(), cli.Table, stdout)
		}}
}

// keysTenantFlag declares --tenant of the keys' commands and of limits clear.
func keysTenantFlag(fs *flag.FlagSet, tenant *string) {
	fs.StringVar(tenant, "tenant", "", "the tenant the keys belong to (required)")
}

// keys is `api keys create|list|revoke`: it reads DATABASE_URL (and
// API_KEY_CACHE_TTL to say when a revoked key stops working), nothing else.
func keys(ctx context.Context, getenv func(string) string, op, tenant string, args []string, out cli.Format, stdout io.Writer) error {
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
		if err != nil {
			return err
		}
		return printKeys(stdout, infos, out)
	}
	if err := store.Revoke(ctx, args[0]); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "revoked %s; API processes refuse it within %s (API_KEY_CACHE_TTL)\n", args[0], ttl)
	return err
}

// keyJSON is a key as `keys list -o json` prints it: its prefix, never its hash.
type keyJSON struct {
	Prefix    string     `json:"prefix"`
	Tenant    string     `json:"tenant"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	Active    bool       `json:"active"`
}

func printKeys(w io.Writer, infos []apikeys.Info, out cli.Format) error {
	if out == cli.JSON {
		rows := make([]keyJSON, 0, len(infos))
		for _, k := range infos {
			row := keyJSON{Prefix: k.Prefix, Tenant: k.Tenant, CreatedAt: k.CreatedAt.UTC(), Active: k.RevokedAt == nil}
			if k.RevokedAt != nil {
				at := k.RevokedAt.UTC()
				row.RevokedAt = &at
			}
			rows = append(rows, row)
		}
		return cli.WriteJSON(w, rows)
	}
	for _, k := range infos {
		state := "active"
		if k.RevokedAt != nil {
			state = "revoked " + k.RevokedAt.UTC().Format(time.RFC3339)
		}
		if _, err := fmt.Fprintf(w, "%s\tcreated %s\t%s\n", k.Prefix, k.CreatedAt.UTC().Format(time.RFC3339), state); err != nil {
			return err
		}
	}
	return nil
}
