package operator

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderflow/orderflow/customers/receipt"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/platform/payloadcodec"
)

// maxReceipt bounds what verify reads: a receipt is a few kilobytes.
const maxReceipt = 1 << 20

// customersReceiptCommand is `worker customers receipt --verify FILE|- [--key
// KEY|FILE] [-o json]`.
func customersReceiptCommand(getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) cli.Command {
	var file, key string
	var out cli.Format
	return cli.Command{Name: "customers receipt", Args: "--verify FILE|- [--key KEY|FILE] [-o json]",
		Summary: "verify an erasure's signed receipt (or its answer from GET /v1/erasures/{id}) with the deployment's receipt key, " +
			"or with a published one without any connection; exit 1 if it does not verify (DATABASE_URL and PAYLOAD_KEYS unless --key)",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&file, "verify", "", "the receipt's file, - for stdin (required)")
			fs.StringVar(&key, "key", "", "a published receipt key (worker customers key), as its JSON or its bare base64, or a file holding it")
			cli.OutputFlag(fs, &out)
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() > 0 {
				return cli.Usagef("unexpected argument %q", fs.Arg(0))
			}
			if file == "" {
				return cli.Usagef("want --verify FILE, or - for stdin")
			}
			doc, err := readReceipt(file, stdin)
			if err != nil {
				return err
			}
			signed, answerID, err := signedOf(doc)
			if err != nil {
				return err
			}
			pub, whose, err := receiptKey(ctx, getenv, key)
			if err != nil {
				return err
			}
			return verifyReceipt(signed, answerID, pub, whose, out, stdout, stderr)
		}}
}

// customersKeyCommand is `worker customers key`.
func customersKeyCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	return cli.Command{Name: "customers key",
		Summary: "print the deployment's published receipt key (JSON {id, key}): what regulators and customers verify receipts with (DATABASE_URL, PAYLOAD_KEYS)",
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() > 0 {
				return cli.Usagef("unexpected argument %q", fs.Arg(0))
			}
			store, pool, err := openCustomers(ctx, getenv)
			if err != nil {
				return err
			}
			defer pool.Close()
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(receipt.Publish(store.Signer().Public().(ed25519.PublicKey))); err != nil {
				return fmt.Errorf("write the key: %w", err)
			}
			return nil
		}}
}

// openCustomers opens the deployment's customer keys: a small pool on
// DATABASE_URL, and PAYLOAD_KEYS, which the keys are sealed under.
func openCustomers(ctx context.Context, getenv func(string) string) (*custkeys.Store, *pgxpool.Pool, error) {
	e := config.New(getenv)
	dsn, keys := e.Required("DATABASE_URL"), e.Required("PAYLOAD_KEYS")
	if err := e.Err(); err != nil {
		return nil, nil, fmt.Errorf("configuration: %w", err)
	}
	pool, err := database.Open(ctx, dsn, 2, nil)
	if err != nil {
		return nil, nil, err
	}
	store, err := customerKeys(ctx, pool, keys)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return store, pool, nil
}

// customerKeys opens the customer keys on pool under the payload keys keys.
func customerKeys(ctx context.Context, pool *pgxpool.Pool, keys string) (*custkeys.Store, error) {
	ring, err := payloadcodec.ParseKeyring(keys)
	if err != nil {
		return nil, fmt.Errorf("configuration: PAYLOAD_KEYS: %w", err)
	}
	store, err := custkeys.Open(ctx, pool, payloadcodec.New(ring))
	if err != nil {
		return nil, fmt.Errorf("customer keys: %w", err)
	}
	return store, nil
}

// readReceipt reads the receipt's file, or stdin for "-".
func readReceipt(file string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if file != "-" {
		f, err := os.Open(file) //nolint:gosec // G304: the operator names the receipt to check
		if err != nil {
			return nil, fmt.Errorf("read the receipt: %w", err)
		}
		defer f.Close()
		r = f
	}
	doc, err := io.ReadAll(io.LimitReader(r, maxReceipt+1))
	if err != nil {
		return nil, fmt.Errorf("read the receipt: %w", err)
	}
	if len(doc) > maxReceipt {
		return nil, fmt.Errorf("read the receipt: longer than %d bytes, which no receipt is", maxReceipt)
	}
	return doc, nil
}

// receiptKey is the key to verify with: the published one --key gives, or the
// deployment's own; whose says which.
func receiptKey(ctx context.Context, getenv func(string) string, key string) (pub ed25519.PublicKey, whose string, err error) {
	if key != "" {
		pub, err := publishedKey(key)
		if err != nil {
			return nil, "", cli.Usagef("--key: %v", err)
		}
		return pub, "the given key", nil
	}
	store, pool, err := openCustomers(ctx, getenv)
	if err != nil {
		return nil, "", err
	}
	defer pool.Close()
	return store.Signer().Public().(ed25519.PublicKey), "the deployment's key", nil
}

// publishedKey reads a key as receipt.Publish makes it ({"id","key"}), or its
// bare base64, given as it is or in a file.
func publishedKey(arg string) (ed25519.PublicKey, error) {
	v := strings.TrimSpace(arg)
	if !strings.HasPrefix(v, "{") {
		// base64 holds '/': a file is taken only if one is there.
		if st, err := os.Stat(v); err == nil && st.Mode().IsRegular() {
			b, err := os.ReadFile(v) //nolint:gosec // G304: the operator names the key file
			if err != nil {
				return nil, err
			}
			v = strings.TrimSpace(string(b))
		}
	}
	var p receipt.PublicKey
	if strings.HasPrefix(v, "{") {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("not a published key: %w", err)
		}
	} else {
		p.Key = v
	}
	return p.Parse()
}

// errNoReceipt is a document that holds no signed receipt.
var errNoReceipt = errors.New("neither a signed receipt ({receipt, signature}) nor an erasure's answer holding one")

// signedOf is the signed receipt doc holds: a receipt.Signed, or an erasure's
// answer ({id, status, receipt}) as GET /v1/erasures/{id} returns it, whose id
// is answerID.
func signedOf(doc []byte) (signed receipt.Signed, answerID string, err error) {
	var top struct {
		ID        string          `json:"id"`
		Status    string          `json:"status"`
		Receipt   json.RawMessage `json:"receipt"`
		Signature string          `json:"signature"`
	}
	if err := json.Unmarshal(doc, &top); err != nil {
		return receipt.Signed{}, "", fmt.Errorf("read the receipt: not JSON: %w", err)
	}
	switch {
	case top.Signature != "":
		return receipt.Signed{Receipt: top.Receipt, Signature: top.Signature}, "", nil
	case len(top.Receipt) > 0 && !bytes.Equal(top.Receipt, []byte("null")):
		if err := json.Unmarshal(top.Receipt, &signed); err != nil || signed.Signature == "" {
			return receipt.Signed{}, "", fmt.Errorf("read the receipt: %w", errNoReceipt)
		}
		return signed, top.ID, nil
	case top.ID != "" && top.Status != "":
		return receipt.Signed{}, "", fmt.Errorf("erasure %s is %s: it has no receipt yet", top.ID, top.Status)
	}
	return receipt.Signed{}, "", fmt.Errorf("read the receipt: %w", errNoReceipt)
}

// verifyReceipt checks signed with pub and prints its receipt; answerID names
// the erasure whose answer held it, if one did.
func verifyReceipt(signed receipt.Signed, answerID string, pub ed25519.PublicKey, whose string, out cli.Format, stdout, stderr io.Writer) error {
	r, err := receipt.Verify(signed, pub)
	if err != nil {
		return fmt.Errorf("receipt does not verify: %w (checked with %s, %s)", err, whose, receipt.KeyID(pub))
	}
	// The answer around a receipt is not signed: it must not name another erasure.
	if answerID != "" && answerID != r.ID {
		return fmt.Errorf("receipt does not verify: the answer is erasure %s's, its signed receipt erasure %s's", answerID, r.ID)
	}
	summary := fmt.Sprintf("receipt of erasure %s verifies: signed by %s (%s)", r.ID, r.SigningKey, whose)
	if out == cli.JSON {
		if err := cli.WriteJSON(stdout, []receipt.Receipt{r}); err != nil {
			return err
		}
		fmt.Fprintln(stderr, summary)
		return nil
	}
	if err := receiptTable(stdout, r); err != nil {
		return err
	}
	fmt.Fprintln(stdout, summary)
	return nil
}

// receiptTable prints a verified receipt: the erasure, then its stores and keys
// one a line.
func receiptTable(w io.Writer, r receipt.Receipt) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "erasure\t%s\ntenant\t%s\ncustomer hash\t%s\nerased at\t%s\nsigning key\t%s\n",
		r.ID, r.Tenant, r.CustomerHash, stamp(r.ErasedAt), r.SigningKey)
	fmt.Fprintf(tw, "\nstores\t%d\n", len(r.Stores))
	for _, s := range r.Stores {
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", s.Name, s.Affected, dash(s.Kept))
	}
	fmt.Fprintf(tw, "keys destroyed\t%d\n", len(r.Keys))
	for _, k := range r.Keys {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", k.ID, k.Fingerprint, stamp(k.DestroyedAt))
	}
	return tw.Flush()
}
