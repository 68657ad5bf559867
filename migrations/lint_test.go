package migrations

import (
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Old pods keep serving while a rolling deploy migrates, so a migration must never
// hold a lock that stops reads or writes of a table in use for longer than a change
// of metadata: no index built or dropped in place, no constraint checked under the
// table's lock, no rewrite. lint names each statement of a migration's Up section
// that breaks one of these rules. Tables the same migration creates are new and
// empty, and exempt.
func lint(sql string) []string {
	up, _, _ := strings.Cut(sql, "-- +goose Down")
	noTx := strings.Contains(up, "-- +goose NO TRANSACTION")
	created := map[string]bool{}
	var problems []string
	for _, stmt := range statements(up) {
		if m := createTable.FindStringSubmatch(stmt); m != nil {
			created[m[1]] = true
			continue
		}
		table := ""
		if m := onTable.FindStringSubmatch(stmt); m != nil {
			table = m[1]
		}
		for _, r := range rules {
			if r.match.MatchString(stmt) && (r.allow == nil || !r.allow.MatchString(stmt)) && !created[table] {
				problems = append(problems, r.why+": "+stmt)
			}
		}
		if strings.Contains(stmt, " CONCURRENTLY ") && !noTx {
			problems = append(problems, "CONCURRENTLY needs -- +goose NO TRANSACTION: "+stmt)
		}
	}
	return problems
}

var (
	createTable = regexp.MustCompile(`^CREATE TABLE (?:IF NOT EXISTS )?(\w+)`)
	onTable     = regexp.MustCompile(`(?: ON | TABLE (?:IF EXISTS )?(?:ONLY )?)(\w+)`)
	rules       = []struct {
		why          string
		match, allow *regexp.Regexp
	}{
		{"an index built under a lock that stops writes (use CONCURRENTLY)",
			regexp.MustCompile(`^CREATE (UNIQUE )?INDEX `), regexp.MustCompile(`^CREATE (UNIQUE )?INDEX CONCURRENTLY `)},
		{"an index dropped under an exclusive lock (use CONCURRENTLY)",
			regexp.MustCompile(`^DROP INDEX `), regexp.MustCompile(`^DROP INDEX CONCURRENTLY `)},
		{"a constraint checked under an exclusive lock (add it NOT VALID, then VALIDATE)",
			regexp.MustCompile(`ADD (CONSTRAINT \w+ )?(CHECK|FOREIGN KEY)\b|ADD COLUMN .* REFERENCES `), regexp.MustCompile(`NOT VALID`)},
		{"a unique index built under an exclusive lock (build it CONCURRENTLY, then add it USING INDEX)",
			regexp.MustCompile(`ADD (CONSTRAINT \w+ )?(PRIMARY KEY|UNIQUE)\b`), regexp.MustCompile(`USING INDEX`)},
		{"a scan or rewrite under an exclusive lock",
			regexp.MustCompile(`ALTER COLUMN \w+ (SET DATA )?TYPE |SET NOT NULL|ADD COLUMN .* NOT NULL|^VACUUM FULL|^CLUSTER |^LOCK |^REINDEX |SET (UN)?LOGGED|DEFAULT \(?(clock_timestamp|random|gen_random_uuid|uuid_generate)`),
			regexp.MustCompile(`^REINDEX .*CONCURRENTLY|ADD COLUMN .* NOT NULL DEFAULT '?[\w.]+'?$`)},
	}
	comment = regexp.MustCompile(`--[^\n]*`)
	space   = regexp.MustCompile(`\s+`)
	txWord  = regexp.MustCompile(`^(BEGIN|COMMIT|START TRANSACTION)$`)
)

// statements splits SQL into statements, comments dropped and whitespace folded.
// (orderflow's migrations have no function bodies, whose semicolons this would cut.)
func statements(sql string) []string {
	var out []string
	for _, s := range strings.Split(comment.ReplaceAllString(sql, ""), ";") {
		s = strings.TrimSpace(space.ReplaceAllString(s, " "))
		if s != "" && !txWord.MatchString(strings.ToUpper(s)) {
			out = append(out, s)
		}
	}
	return out
}

func TestMigrationsNeverLockAHotTable(t *testing.T) {
	files, err := fs.Glob(FS, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v %v", files, err)
	}
	for _, f := range files {
		b, err := fs.ReadFile(FS, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range lint(string(b)) {
			t.Errorf("%s: %s", f, p)
		}
	}
}

// The check refuses what the migrations did before they were rewritten.
func TestLintRefusesLockingMigrations(t *testing.T) {
	b, err := os.ReadFile("testdata/00006_webhook_events.locking.sql")
	if err != nil {
		t.Fatal(err)
	}
	got := lint(string(b))
	if len(got) != 2 { // the drop and the rebuild of orders_payment_open
		t.Fatalf("problems in the locking 00006 = %q, want its DROP INDEX and CREATE INDEX on orders", got)
	}
	for _, c := range []struct {
		sql  string
		want int
	}{
		{"CREATE INDEX orders_x ON orders (status);", 1},
		{"-- +goose NO TRANSACTION\nCREATE INDEX CONCURRENTLY orders_x ON orders (status);", 0},
		{"CREATE INDEX CONCURRENTLY orders_x ON orders (status);", 1},
		{"CREATE TABLE t (a int);\nCREATE INDEX t_a ON t (a);", 0},
		{"ALTER TABLE payments ADD CONSTRAINT k CHECK (kind <> '');", 1},
		{"ALTER TABLE payments ADD CONSTRAINT k CHECK (kind <> '') NOT VALID;\nALTER TABLE payments VALIDATE CONSTRAINT k;", 0},
		{"ALTER TABLE orders ADD CONSTRAINT f FOREIGN KEY (x) REFERENCES t (id);", 1},
		{"ALTER TABLE processed_events ADD PRIMARY KEY (a, b);", 1},
		{"ALTER TABLE processed_events ADD CONSTRAINT p PRIMARY KEY USING INDEX i;", 0},
		{"ALTER TABLE orders ALTER COLUMN amount TYPE numeric;", 1},
		{"ALTER TABLE orders ALTER COLUMN failure SET NOT NULL;", 1},
		{"ALTER TABLE orders ADD COLUMN note text;", 0},
		{"ALTER TABLE orders ADD COLUMN at timestamptz DEFAULT clock_timestamp();", 1},
		{"ALTER TABLE orders ADD COLUMN v int NOT NULL DEFAULT 0;", 0},
		{"ALTER TABLE orders ADD COLUMN v int NOT NULL;", 1},
		{"VACUUM FULL orders;", 1},
	} {
		if got := lint(c.sql); len(got) != c.want {
			t.Errorf("lint(%q) = %q, want %d problems", c.sql, got, c.want)
		}
	}
}
