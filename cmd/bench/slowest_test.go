package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// keepSlow keeps exactly the slowest slowKept, whatever the order they come in.
func TestKeepSlowKeepsTheSlowest(t *testing.T) {
	var kept []slowPost
	for _, i := range rand.Perm(100) {
		kept = keepSlow(kept, slowPost{took: time.Duration(i) * time.Millisecond})
	}
	var got []int
	for _, k := range kept {
		got = append(got, int(k.took/time.Millisecond))
	}
	slices.Sort(got)
	if len(got) != slowKept || got[0] != 100-slowKept || got[len(got)-1] != 99 {
		t.Fatalf("kept %v; want %d to 99", got, 100-slowKept)
	}
}
