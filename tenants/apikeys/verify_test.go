package apikeys

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// A key in use whose entry expired during a flood of made-up keys is checked in
// a lane of its own: it neither waits for the flood's lookup nor is refused as
// busy. And one client address cannot take a whole round of unknown lookups.
func TestKnownKeysNeverWaitBehindUnknownOnes(t *testing.T) {
	real := prefix + "0123456789ab" + "_secret"
	sum := sha256.Sum256([]byte(real))
	floodLookup := make(chan struct{}) // the flood's lookup hangs until closed
	var mu sync.Mutex
	lookups := 0
	// One round of unknown ids in the test's time: the interval is long.
	v := newVerifier(50*time.Millisecond, time.Second, func(ctx context.Context, ids []string) (map[string]row, error) {
		mu.Lock()
		lookups++
		mu.Unlock()
		out := map[string]row{}
		for _, id := range ids {
			if id == "0123456789ab" {
				out[id] = row{tenant: "acme", hash: sum[:]}
				continue
			}
			select {
			case <-floodLookup:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return out, nil
	})
	ctx := context.Background()
	if got, err := v.Tenant(WithClient(ctx, "10.0.0.1"), real); err != nil || got != "acme" {
		t.Fatalf("first use: %q, %v", got, err)
	}
	time.Sleep(60 * time.Millisecond) // the entry expires

	// A flood from one address: at most maxPerClient of its ids join the round.
	var wg sync.WaitGroup
	busy := make(chan struct{}, 1000)
	for i := range 200 {
		wg.Go(func() {
			_, err := v.Tenant(WithClient(ctx, "203.0.113.9"), fmt.Sprintf("%s%012x_bogus", prefix, i+1))
			if errors.Is(err, ErrBusy) {
				busy <- struct{}{}
			}
		})
	}
	for len(busy) < 200-maxPerClient {
		time.Sleep(time.Millisecond)
	}
	// Another address still gets its unknown id into the round.
	other := make(chan error, 1)
	go func() { _, err := v.Tenant(WithClient(ctx, "198.51.100.7"), prefix+"fffffffffff0_x"); other <- err }()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-other:
		t.Fatalf("another address's unknown key: %v, want it waiting in the round", err)
	default:
	}

	began := time.Now()
	got, err := v.Tenant(WithClient(ctx, "203.0.113.9"), real)
	if err != nil || got != "acme" {
		t.Fatalf("the known key during the flood: %q, %v", got, err)
	}
	if took := time.Since(began); took > 500*time.Millisecond {
		t.Fatalf("the known key waited %s behind the flood's lookup", took)
	}
	close(floodLookup)
	wg.Wait()
	if err := <-other; !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("another address's unknown key: %v, want refused once looked up", err)
	}
}
