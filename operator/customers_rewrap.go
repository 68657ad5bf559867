package operator

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/orderflow/orderflow/platform/cli"
)

// customersRewrapCommand is `worker customers rewrap`: after a new key is put
// first in PAYLOAD_KEYS, and before an old one leaves it, every customer's data
// key and the deployment's secrets are sealed again under the new one; what
// only the old key opens would be lost with it.
func customersRewrapCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	return cli.Command{Name: "customers rewrap",
		Summary: "seal every customer's live data key and the deployment's secrets again under PAYLOAD_KEYS' first key: run after a rotation, before an old key leaves the ring (DATABASE_URL, PAYLOAD_KEYS)",
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() > 0 {
				return cli.Usagef("unexpected argument %q", fs.Arg(0))
			}
			store, pool, err := openCustomers(ctx, getenv)
			if err != nil {
				return err
			}
			defer pool.Close()
			n, err := store.Rewrap(ctx)
			if err != nil {
				return fmt.Errorf("rewrap (%d sealed again before the error; run it again): %w", n, err)
			}
			fmt.Fprintf(stdout, "sealed again under the first key of PAYLOAD_KEYS: %d (2 deployment secrets, %d customers' keys)\n", n, n-2)
			return nil
		}}
}
