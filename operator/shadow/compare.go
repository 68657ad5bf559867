package shadow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// absent is a money field one side does not have.
const absent = "(absent)"

// diff is a money field whose value differs between the history and the replay.
type diff struct {
	path               string // JSON path in the arguments, $[0].ConfirmKey
	recorded, produced string // as shown: a secret field as a digest
}

// leaf is a money field's value, as text, and how it is shown.
type leaf struct {
	value string
	f     field
}

// compare walks two JSON documents (an activity's arguments as the history has
// them, and as this build produces them) and returns the money fields of the
// history that this build sends otherwise, or not at all.
func compare(recorded, produced []byte) ([]diff, error) {
	was, err := moneyLeaves(recorded)
	if err != nil {
		return nil, fmt.Errorf("history's arguments: %w", err)
	}
	now, err := moneyLeaves(produced)
	if err != nil {
		return nil, fmt.Errorf("replay's arguments: %w", err)
	}
	// A field the history lacks was added since: what was sent is what counts.
	var out []diff
	for _, p := range slices.Sorted(maps.Keys(was)) {
		a := was[p]
		b, ok := now[p]
		if !ok {
			b.value = absent
		}
		if a.value != b.value {
			out = append(out, diff{path: p, recorded: a.f.show(a.value), produced: a.f.show(b.value)})
		}
	}
	return out, nil
}

// moneyLeaves are the leaves of doc under a money field's name, by path.
func moneyLeaves(doc []byte) (map[string]leaf, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber() // amounts as written, never rounded through a float
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	out := map[string]leaf{}
	walk(v, "$", "", out)
	return out, nil
}

// walk collects the leaves of v; name is the nearest field name above it.
func walk(v any, path, name string, out map[string]leaf) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			walk(c, path+"."+k, k, out)
		}
	case []any:
		for i, c := range x {
			walk(c, path+"["+strconv.Itoa(i)+"]", name, out)
		}
	default:
		if f, ok := moneyField(name); ok {
			out[path] = leaf{value: text(x), f: f}
		}
	}
}

// text is a leaf as a report shows it: a string as itself, anything else as JSON.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v) // a leaf decoded from JSON always encodes
	return string(b)
}
