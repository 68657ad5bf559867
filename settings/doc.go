package settings

import (
	"fmt"
	"strings"

	"github.com/orderflow/orderflow/platform/config"
)

// Process is one binary's reader of its settings.
type Process struct {
	Name string
	Load func(*config.Env) error
}

// Processes are the binaries that serve: the API, the worker and the sandbox.
func Processes() []Process {
	return []Process{
		{"api", func(e *config.Env) error { _, err := LoadAPI(e); return err }},
		{"worker", func(e *config.Env) error { _, err := LoadWorker(e); return err }},
		{"paysim", func(e *config.Env) error { _, err := LoadPaysim(e); return err }},
	}
}

// Read runs each process's reader on getenv and returns what each one read.
func Read(getenv func(string) string) map[string][]config.Var {
	out := map[string][]config.Var{}
	for _, p := range Processes() {
		e := config.New(getenv)
		_ = p.Load(e) // the variables read, not whether they were valid
		out[p.Name] = e.Vars()
	}
	return out
}

// Table is docs/configuration.md's table: every variable a process reads, in the
// order the API, then the worker, then the sandbox first read it, with its
// default, the values it takes, who reads it, and what it means.
func Table() (string, error) {
	type row struct {
		v     config.Var
		users []string
		defs  []string
	}
	var rows []*row
	byName := map[string]*row{}
	read := Read(func(string) string { return "" })
	what := meanings()
	var missing []string
	for _, p := range Processes() {
		for _, v := range read[p.Name] {
			r := byName[v.Name]
			if r == nil {
				r = &row{v: v}
				byName[v.Name] = r
				rows = append(rows, r)
				if what[v.Name] == "" {
					missing = append(missing, v.Name)
				}
			}
			r.users = append(r.users, p.Name)
			r.defs = append(r.defs, v.Default)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("no meaning in settings.meanings for %s", strings.Join(missing, ", "))
	}
	for name := range what {
		if byName[name] == nil {
			return "", fmt.Errorf("settings.meanings describes %s, which no process reads", name)
		}
	}
	var b strings.Builder
	b.WriteString("| variable | default | value | read by | meaning |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", r.v.Name, defaults(r.users, r.defs), r.v.Kind,
			strings.Join(r.users, ", "), what[r.v.Name])
	}
	return b.String(), nil
}

// defaults is one default, or each process's where they differ.
func defaults(users, defs []string) string {
	same := true
	for _, d := range defs {
		same = same && d == defs[0]
	}
	if same {
		if defs[0] == "" {
			return ""
		}
		return "`" + defs[0] + "`"
	}
	var parts []string
	for i, u := range users {
		parts = append(parts, fmt.Sprintf("%s `%s`", u, defs[i]))
	}
	return strings.Join(parts, ", ")
}
