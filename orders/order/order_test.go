package order

import (
	"errors"
	"math"
	"testing"
)

func TestTotal(t *testing.T) {
	tests := []struct {
		name     string
		items    []Item
		want     int64
		wantErr  bool
		overflow bool
	}{
		{"one line", []Item{{"a", 2, 1299}}, 2598, false, false},
		{"two lines", []Item{{"a", 1, 100}, {"b", 3, 5}}, 115, false, false},
		{"zero quantity", []Item{{"a", 0, 100}}, 0, true, false},
		{"negative amount", []Item{{"a", 1, -1}}, 0, true, false},
		{"line overflow", []Item{{"a", 2, math.MaxInt64/2 + 1}}, 0, true, true},
		{"sum overflow", []Item{{"a", 1, math.MaxInt64}, {"b", 1, 1}}, 0, true, true},
		{"max fits", []Item{{"a", 1, math.MaxInt64}}, math.MaxInt64, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Total(tt.items)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.overflow != errors.Is(err, ErrOverflow) {
				t.Fatalf("err = %v, overflow %v", err, tt.overflow)
			}
			if got != tt.want {
				t.Fatalf("Total = %d, want %d", got, tt.want)
			}
		})
	}
}
