package main

import (
	"slices"
	"time"
)

// percentileMs is the p-quantile (0 < p ≤ 1) of lat in milliseconds, at
// microsecond resolution. It picks the sample at index ⌊p·len⌋ of the sorted
// latencies, as cmd/bench does, so the two reports compare like with like.
func percentileMs(lat []time.Duration, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	i := min(int(p*float64(len(s))), len(s)-1)
	return float64(s[i].Microseconds()) / 1000
}
