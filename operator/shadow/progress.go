package shadow

import (
	"fmt"
	"io"
	"time"
)

// progressEvery is the least time between two progress lines.
const progressEvery = 2 * time.Second

// progress writes how far a check is, at most every progressEvery.
type progress struct {
	w           io.Writer
	start, last time.Time
}

func newProgress(w io.Writer, start time.Time) *progress {
	return &progress{w: w, start: start, last: start}
}

func (p *progress) tick(sum Summary) {
	now := time.Now()
	if p.w == nil || now.Sub(p.last) < progressEvery {
		return
	}
	p.last = now
	rate := float64(sum.Checked) / now.Sub(p.start).Seconds()
	fmt.Fprintf(p.w, "shadow: checked %d, failed %d, %.1f histories/s\n", sum.Checked, sum.Failed, rate)
}
