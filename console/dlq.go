package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/redact"
)

const (
	// maxLetters bounds the dead letters listed on one page.
	maxLetters = 500
	// maxField bounds each field of the redrive form.
	maxField = 1024
	// maxCut is how much of a letter's field the list shows; its own page
	// shows the whole.
	maxCut = 64
	// maxValue bounds what is shown of an opened letter's value.
	maxValue = 64 << 10
)

// KafkaLetters are the dead letters of a topic, read, opened and redriven with
// ingress/consumer's functions.
type KafkaLetters struct {
	Cluster  kafkaclient.Cluster
	Options  consumer.RedriveOptions // DLQTopic, RequestsTopic, Kinds
	Writer   consumer.Writer         // without a topic of its own
	Redrives *consumer.Redrives
	Keys     consumer.Sealer
	// Customers open the letters sealed under a customer's key (nil: such a
	// letter is not shown, nor redriven).
	Customers consumer.Revealer
	Logger    *slog.Logger
}

// List describes at most limit letters and whom each speaks for, never their
// values.
func (k KafkaLetters) List(ctx context.Context, limit int) ([]consumer.LetterInfo, bool, error) {
	var out []consumer.LetterInfo
	enough := errors.New("enough letters") // stops the listing at its limit
	err := consumer.Letters(ctx, k.Cluster, k.Options.DLQTopic, func(m kafka.Message, _ int64) error {
		if len(out) == limit {
			return enough
		}
		li, err := consumer.Identify(m, k.Keys, k.Options.Kinds)
		out = append(out, li)
		return err
	})
	if errors.Is(err, enough) {
		return out, true, nil
	}
	return out, false, err
}

// Show reads the letter at partition:offset and opens its value.
func (k KafkaLetters) Show(ctx context.Context, partition int, offset int64) (consumer.LetterInfo, kafka.Message, bool, error) {
	m, err := consumer.Letter(ctx, k.Cluster, k.Options.DLQTopic, partition, offset)
	if err != nil {
		return consumer.LetterInfo{}, kafka.Message{}, false, err
	}
	orig, whole, err := consumer.Open(m, k.Keys)
	if err == nil { // an erased customer's letter reads personal.Erased
		orig, _, err = consumer.Reveal(ctx, m, orig, k.Customers)
	}
	if err != nil {
		return consumer.LetterInfo{}, kafka.Message{}, false, fmt.Errorf("open dead letter %d:%d: %w", partition, offset, err)
	}
	info, err := consumer.Identify(m, k.Keys, k.Options.Kinds)
	return info, orig, whole, err
}

// Redrive re-publishes the letters, each once (consumer.Redrive).
func (k KafkaLetters) Redrive(ctx context.Context, sel []consumer.Selector, dryRun bool) (consumer.RedriveSummary, error) {
	o := k.Options
	o.Select, o.DryRun, o.Customers = sel, dryRun, k.Customers
	return consumer.Redrive(ctx, k.Cluster, o, k.Writer, k.Redrives, k.Keys, k.Logger)
}

// lettersData is the dead letters page.
type lettersData struct {
	Letters []consumer.LetterInfo
	More    bool
	Summary *redriveResult
}

type redriveResult struct {
	Selected string // whom the letters redriven speak for; "" for every letter
	DryRun   bool
	Summary  consumer.RedriveSummary
}

func (c *Console) lettersPage(w http.ResponseWriter, r *http.Request, s session) {
	c.showLetters(w, r, s, nil)
}

func (c *Console) showLetters(w http.ResponseWriter, r *http.Request, s session, res *redriveResult) {
	letters, more, err := c.stores.Letters.List(r.Context(), maxLetters)
	if err != nil {
		c.failed(w, r, s, "reading the dead letters", err)
		return
	}
	for i := range letters {
		letters[i].Error = redact.Secrets(letters[i].Error)
		letters[i].Identity.EventID = redact.Secrets(letters[i].Identity.EventID)
		letters[i].Identity.Source = redact.Secrets(letters[i].Identity.Source)
	}
	c.show(w, r, s, "letters", "Dead letters", lettersData{Letters: letters, More: more, Summary: res})
}

// letterData is one opened letter, its secrets redacted.
type letterData struct {
	Info    consumer.LetterInfo
	Key     string
	Headers []kafka.Header
	Value   string
	Whole   bool
}

func (c *Console) letterPage(w http.ResponseWriter, r *http.Request, s session) {
	partition, offset, ok := letterRef(r.PathValue("ref"))
	if !ok {
		c.fail(w, r, s, http.StatusBadRequest, "a letter is PARTITION:OFFSET")
		return
	}
	info, orig, whole, err := c.stores.Letters.Show(r.Context(), partition, offset)
	if errors.Is(err, consumer.ErrNoLetter) {
		c.fail(w, r, s, http.StatusNotFound, "no dead letter at "+r.PathValue("ref"))
		return
	}
	if err != nil {
		c.failed(w, r, s, "opening the dead letter", err)
		return
	}
	// Who read a sealed letter is on record in the worker's log.
	c.logger.InfoContext(r.Context(), "dead letter shown", "operator", s.Operator, "partition", partition, "offset", offset)
	info.Error = redact.Secrets(info.Error)
	info.Identity.EventID, info.Identity.Source = redact.Secrets(info.Identity.EventID), redact.Secrets(info.Identity.Source)
	d := letterData{Info: info, Key: redact.Secrets(string(orig.Key)), Value: redactValue(orig.Value), Whole: whole}
	for _, h := range orig.Headers {
		v := redact.Secrets(string(h.Value))
		if secretField(h.Key) {
			v = "[redacted]"
		}
		d.Headers = append(d.Headers, kafka.Header{Key: h.Key, Value: []byte(v)})
	}
	c.show(w, r, s, "letter", "Dead letter "+r.PathValue("ref"), d)
}

// letterRef parses PARTITION:OFFSET.
func letterRef(s string) (int, int64, bool) {
	p, o, ok := strings.Cut(s, ":")
	partition, perr := strconv.Atoi(p)
	offset, oerr := strconv.ParseInt(o, 10, 64)
	return partition, offset, ok && perr == nil && oerr == nil && partition >= 0 && offset >= 0 && len(s) <= 40
}

// secretField is a JSON field whose value is never shown, whatever it holds: a
// card token need not look like one.
func secretField(name string) bool {
	switch strings.ToLower(name) {
	case "payment_method", "card", "card_token", "token":
		return true
	}
	return false
}

// redactValue is a letter's value for the page: JSON indented with its secret
// fields replaced, then every secret-looking string redacted (redact.Secrets).
func redactValue(v []byte) string {
	if len(v) > maxValue {
		v = v[:maxValue]
	}
	var doc any
	if json.Unmarshal(v, &doc) == nil {
		if b, err := json.MarshalIndent(scrub(doc), "", "  "); err == nil {
			return redact.Secrets(string(b))
		}
	}
	return redact.Secrets(string(bytes.ToValidUTF8(v, []byte("?"))))
}

// scrub replaces the values of secret fields, at any depth.
func scrub(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if secretField(k) {
				t[k] = "[redacted]"
				continue
			}
			t[k] = scrub(x)
		}
	case []any:
		for i, x := range t {
			t[i] = scrub(x)
		}
	}
	return v
}

func (c *Console) redrive(w http.ResponseWriter, r *http.Request, s session) {
	sel, err := selectorOf(r)
	if err != nil {
		c.fail(w, r, s, http.StatusBadRequest, err.Error())
		return
	}
	dryRun := r.PostFormValue("dry_run") != ""
	var picked []consumer.Selector
	selected := ""
	if sel != (consumer.Selector{}) {
		picked, selected = []consumer.Selector{sel}, describe(sel)
	}
	sum, err := c.stores.Letters.Redrive(r.Context(), picked, dryRun)
	c.logger.InfoContext(r.Context(), "dead letters redriven", "operator", s.Operator, "selected", selected,
		"dry_run", dryRun, "summary", sum.String(), "err", errString(err))
	if err != nil {
		c.failed(w, r, s, "redriving the dead letters ("+sum.String()+")", err)
		return
	}
	c.showLetters(w, r, s, &redriveResult{Selected: selected, DryRun: dryRun, Summary: sum})
}

// selectorOf reads the redrive form: a letter ID, or a tenant, a kind and an
// eventId (with a CloudEvent's source); nothing at all for every letter.
func selectorOf(r *http.Request) (consumer.Selector, error) {
	field := func(name string) string { return strings.TrimSpace(r.PostFormValue(name)) }
	sel := consumer.Selector{ID: field("id"), Tenant: field("tenant"), Kind: field("kind"), EventID: field("event_id"), Source: field("source")}
	for _, v := range []string{sel.ID, sel.Tenant, sel.Kind, sel.EventID, sel.Source} {
		if len(v) > maxField {
			return consumer.Selector{}, fmt.Errorf("a field of the form has at most %d characters", maxField)
		}
	}
	if sel == (consumer.Selector{}) {
		return sel, nil
	}
	if err := sel.Check(); err != nil {
		return consumer.Selector{}, fmt.Errorf("%w (or leave every field empty for every letter)", err)
	}
	return sel, nil
}

// describe names what a selector picks, for the page and the log.
func describe(sel consumer.Selector) string {
	if sel.ID != "" {
		return "letter " + cut(sel.ID)
	}
	s := fmt.Sprintf("tenant %s, kind %s, eventId %s", cut(sel.Tenant), cut(sel.Kind), cut(sel.EventID))
	if sel.Source != "" {
		s += ", source " + cut(sel.Source)
	}
	return s
}

// cut shortens what a letter says to maxCut characters for a list: a hostile
// producer can say ten kilobytes in an id. The letter's own page shows it whole.
func cut(s string) string {
	if r := []rune(s); len(r) > maxCut {
		return string(r[:maxCut]) + "…"
	}
	return s
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
