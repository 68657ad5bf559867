package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// stateFormat names the state file's layout; a file of another is refused.
const stateFormat = "orderflow-paysim/1"

// state is what a provider keeps: its objects, the saved answers of keys, the
// events and the deliveries still pending. Faults, the webhook endpoint's
// configuration (it holds signing secrets) and the counters tests read are not
// kept. IDs are random, so there is no counter to keep.
type state struct {
	Keys       map[string]savedKey `json:"keys"`
	Intents    []savedIntent       `json:"intents"`
	Charges    []savedCharge       `json:"charges"`
	Refunds    []savedRefund       `json:"refunds"`
	Disputes   []Dispute           `json:"disputes"`
	Events     []json.RawMessage   `json:"events"`
	Deliveries []delivery          `json:"deliveries"`
	Stats      WebhookStats        `json:"webhook_stats"`
}

// savedKey is the answer saved for an idempotency key.
type savedKey struct {
	Params  string          `json:"params"`
	Status  int             `json:"status"`
	Body    json.RawMessage `json:"body"`
	Created time.Time       `json:"created"`
}

type savedIntent struct {
	Intent
	CreatedMS int64  `json:"created_ms"`
	ReturnURL string `json:"return_url,omitempty"`
}

type savedCharge struct {
	Charge
	CreatedMS int64  `json:"created_ms"`
	Card      string `json:"card,omitempty"`
}

type savedRefund struct {
	Refund
	FailAt time.Time `json:"fail_at,omitzero"`
}

// stateFile is the file on disk: the state and its digest, so a file cut short or
// changed by hand is refused rather than read as less than it held.
type stateFile struct {
	Format string          `json:"format"`
	SHA256 string          `json:"sha256"`
	State  json.RawMessage `json:"state"`
}

// store writes the state to its file: a new file, synced, renamed over the old
// one, then the directory synced, so a kill at any moment leaves the old state
// or the new one whole.
type store struct {
	path    string
	mu      sync.Mutex
	written uint64 // the newest snapshot on disk
}

// write saves snapshot number v, unless a newer one (which holds its changes) is
// already on disk.
func (st *store) write(v uint64, data []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if v <= st.written {
		return nil
	}
	sum := sha256.Sum256(data)
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"format":%q,"sha256":%q,"state":`, stateFormat, hex.EncodeToString(sum[:]))
	b.Write(data)
	b.WriteString("}\n")
	tmp := st.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) //nolint:gosec // G304: the path is PAYSIM_STATE, set by the operator
	if err != nil {
		return fmt.Errorf("write the sandbox's state: %w", err)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("write the sandbox's state: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync the sandbox's state: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close the sandbox's state: %w", err)
	}
	if err := os.Rename(tmp, st.path); err != nil {
		return fmt.Errorf("replace the sandbox's state: %w", err)
	}
	if err := syncDir(filepath.Dir(st.path)); err != nil {
		return err
	}
	st.written = v
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir) //nolint:gosec // G304: the directory of PAYSIM_STATE, set by the operator
	if err != nil {
		return fmt.Errorf("open the state's directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync the state's directory: %w", err)
	}
	return nil
}

// read loads the state file: nil when there is none yet, an error when it is
// not a whole state file.
func (st *store) read() (*state, error) {
	raw, err := os.ReadFile(st.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("not a state file (cut short or corrupt): %w", err)
	}
	if f.Format != stateFormat {
		return nil, fmt.Errorf("format %q, want %q", f.Format, stateFormat)
	}
	sum := sha256.Sum256(f.State)
	if hex.EncodeToString(sum[:]) != f.SHA256 {
		return nil, errors.New("the state does not match its digest (corrupt)")
	}
	var s state
	if err := json.Unmarshal(f.State, &s); err != nil {
		return nil, fmt.Errorf("decode the state: %w", err)
	}
	return &s, nil
}

// Open returns a sandbox that keeps its state in the file at path: what it held
// when it stopped, however it stopped, is there again. Every change is on disk
// before it is answered. A file that is not a whole state file is an error,
// never an empty sandbox.
func Open(logger *slog.Logger, o Options, path string) (*Server, error) {
	s := New(logger, o)
	st := &store{path: path}
	saved, err := st.read()
	if err != nil {
		return nil, fmt.Errorf("sandbox state %s: %w", path, err)
	}
	if saved != nil {
		s.restore(saved)
	}
	s.store = st
	// The file exists and is writable from the start, or the sandbox does not start.
	if err := s.commit(); err != nil {
		return nil, fmt.Errorf("sandbox state %s: %w", path, err)
	}
	s.resume()
	return s, nil
}

// snapshot encodes the state; the caller holds s.mu.
func (s *Server) snapshot() ([]byte, error) {
	st := state{Keys: map[string]savedKey{}, Disputes: []Dispute{}, Stats: s.stats}
	for k, rec := range s.keys {
		// A request still running was never answered; an expired key is gone.
		if rec.done && time.Since(rec.created) <= s.opts.KeyTTL {
			st.Keys[k] = savedKey{Params: rec.params, Status: rec.status, Body: rec.body, Created: rec.created}
		}
	}
	for _, in := range s.intents {
		st.Intents = append(st.Intents, savedIntent{Intent: *in, CreatedMS: in.createdMS, ReturnURL: in.returnURL})
	}
	for _, c := range s.charges {
		st.Charges = append(st.Charges, savedCharge{Charge: *c, CreatedMS: c.createdMS, Card: c.card})
	}
	for _, re := range s.refunds {
		st.Refunds = append(st.Refunds, savedRefund{Refund: *re, FailAt: re.failAt})
	}
	for _, d := range s.disputes {
		st.Disputes = append(st.Disputes, *d)
	}
	for _, ev := range s.events {
		st.Events = append(st.Events, ev)
	}
	for _, d := range s.deliveries {
		st.Deliveries = append(st.Deliveries, *d)
	}
	data, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode the sandbox's state: %w", err)
	}
	return data, nil
}

// restore puts a loaded state in place, before the sandbox serves.
func (s *Server) restore(st *state) {
	for k, sk := range st.Keys {
		s.keys[k] = &stored{params: sk.Params, done: true, status: sk.Status, body: sk.Body, created: sk.Created}
	}
	for _, si := range st.Intents {
		in := si.Intent
		in.createdMS, in.returnURL = si.CreatedMS, si.ReturnURL
		if in.Status == processing {
			// A confirm under way when the process stopped was never answered
			// and charged nothing: it never happened.
			in.Status = requiresConfirmation
		}
		s.intents = append(s.intents, &in)
	}
	for _, sc := range st.Charges {
		c := sc.Charge
		c.createdMS, c.card = sc.CreatedMS, sc.Card
		s.charges = append(s.charges, &c)
	}
	for _, sr := range st.Refunds {
		re := sr.Refund
		re.failAt = sr.FailAt
		s.refunds = append(s.refunds, &re)
	}
	for _, d := range st.Disputes {
		s.disputes = append(s.disputes, &d)
	}
	for _, ev := range st.Events {
		s.events = append(s.events, []byte(ev))
	}
	for _, d := range st.Deliveries {
		s.deliveries[d.ID] = &d
	}
	s.stats = st.Stats
}

// resume starts what was pending when the state was saved: deliveries, and
// refunds that are to fail.
func (s *Server) resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.deliveries {
		go s.deliver(d)
	}
	for _, re := range s.refunds {
		if !re.failAt.IsZero() {
			s.scheduleFailure(re.ID, re.failAt)
		}
	}
}

// commit makes the changes so far durable (with a state file) before the caller
// answers, then starts the deliveries of the events they raised: no event goes
// out about a change that a restart could lose.
func (s *Server) commit() error {
	s.mu.Lock()
	out := s.outbox
	s.outbox = nil
	var data []byte
	var v uint64
	var err error
	if s.store != nil {
		data, err = s.snapshot()
		s.version++
		v = s.version
	}
	s.mu.Unlock()
	if err == nil && s.store != nil {
		err = s.store.write(v, data)
	}
	if err != nil {
		// The deliveries wait for a commit that succeeds.
		s.mu.Lock()
		s.outbox = append(out, s.outbox...)
		s.mu.Unlock()
		return err
	}
	for _, d := range out {
		go s.deliver(d)
	}
	return nil
}
