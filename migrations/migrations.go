// Package migrations holds the SQL schema of orderflow as embedded goose migrations.
package migrations

import "embed"

// FS holds the migration files; the binaries' migrate step applies them in order.
//
//go:embed *.sql
var FS embed.FS
