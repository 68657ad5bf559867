// Package database opens the PostgreSQL pool and applies the embedded migrations.
package database

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/orderflow/orderflow/migrations"
)

// Open connects a pool and pings it, so a wrong URL fails at start, not at first use.
// tracer, if not nil, traces every query.
func Open(ctx context.Context, url string, maxConns int32, tracer pgx.QueryTracer) (*pgxpool.Pool, error) {
	return open(ctx, url, maxConns, func(c *pgx.ConnConfig) { c.Tracer = tracer })
}

// open is Open with set given each connection's configuration.
func open(ctx context.Context, url string, maxConns int32, set func(*pgx.ConnConfig)) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	set(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	return pool, nil
}

// Unanswered reports whether err, from Open, is PostgreSQL's silence or its not
// taking connections yet (starting up, shutting down: SQLSTATE class 57P), rather
// than a refusal of this client (credentials, a database that does not exist).
func Unanswered(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "57P")
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connErr) || errors.As(err, &netErr)
}

// Migrate applies every pending migration. A Postgres advisory lock makes concurrent
// callers (api and worker starting together) take turns.
func Migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	for _, r := range results {
		logger.InfoContext(ctx, "migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration.String())
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	logger.InfoContext(ctx, "schema up to date", "version", v)
	return nil
}

// migrationLockTimeout bounds how long a migration's statement queues for a lock:
// queued behind a long transaction, even a brief exclusive lock would stop every
// request that comes after it. Past it the migration fails, and is run again.
const migrationLockTimeout = "5s"

// MigrateURL opens a small pool on url, applies the migrations and closes it: the
// binaries' `migrate` command.
func MigrateURL(ctx context.Context, url string, logger *slog.Logger) error {
	pool, err := open(ctx, url, 2, func(c *pgx.ConnConfig) { c.RuntimeParams["lock_timeout"] = migrationLockTimeout })
	if err != nil {
		return err
	}
	defer pool.Close()
	return Migrate(ctx, pool, logger)
}
