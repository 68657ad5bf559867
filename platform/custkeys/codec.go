package custkeys

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/orderflow/orderflow/platform/personal"
)

// sealedJSON is a sealed value as a JSON string inside a payload.
var sealedJSON = regexp.MustCompile(`"pd1\.ck_[0-9a-f]{32}\.[A-Za-z0-9_-]+"`)

// Revealing is the codec the Temporal Web UI decodes through: inner's, then
// each personal value in a decoded payload shown as its reader sees it, opened
// or "[erased]". Encoding is inner's: nothing is revealed on the way in.
type Revealing struct {
	inner converter.PayloadCodec
	keys  *Store
}

var _ converter.PayloadCodec = Revealing{}

// NewRevealing wraps inner.
func NewRevealing(inner converter.PayloadCodec, keys *Store) Revealing {
	return Revealing{inner: inner, keys: keys}
}

// Encode is inner's.
func (r Revealing) Encode(p []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return r.inner.Encode(p)
}

// Decode decodes with inner, then shows each sealed value.
func (r Revealing) Decode(p []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out, err := r.inner.Decode(p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, pl := range out {
		if string(pl.GetMetadata()[converter.MetadataEncoding]) != converter.MetadataEncodingJSON || !sealedJSON.Match(pl.GetData()) {
			continue
		}
		var failed error
		data := sealedJSON.ReplaceAllFunc(pl.GetData(), func(m []byte) []byte {
			v, err := r.keys.ShownAny(ctx, string(m[1:len(m)-1]))
			if err != nil {
				failed = err
				return m
			}
			return []byte(strconv.Quote(v))
		})
		if failed != nil {
			return nil, failed
		}
		out[i] = &commonpb.Payload{Metadata: pl.GetMetadata(), Data: data}
	}
	return out, nil
}

// ShownIn is body, a JSON document of tenant's, with each sealed value in it
// shown as Shown shows it. A body without one is returned as it is, unread
// beyond a scan.
func (s *Store) ShownIn(ctx context.Context, tenant string, body []byte) ([]byte, error) {
	if !sealedJSON.Match(body) {
		return body, nil
	}
	var failed error
	out := sealedJSON.ReplaceAllFunc(body, func(m []byte) []byte {
		v, err := s.Shown(ctx, tenant, string(m[1:len(m)-1]))
		if err != nil {
			failed = err
			return m
		}
		return []byte(strconv.Quote(v))
	})
	return out, failed
}

// ShownAny is Shown for a sealed value of any tenant (its key names it).
func (s *Store) ShownAny(ctx context.Context, value string) (string, error) {
	id, ok := personal.KeyID(value)
	if !ok {
		return value, nil
	}
	var tenant string
	err := s.db.QueryRow(ctx, `SELECT tenant FROM customer_keys WHERE key_id = $1`, id).Scan(&tenant)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return personal.Erased, nil // no such key: nothing can open it
	case err != nil:
		return "", fmt.Errorf("show a personal value: %w", err)
	}
	v, err := s.Reveal(ctx, tenant, value)
	if errors.Is(err, personal.ErrErased) {
		return personal.Erased, nil
	}
	if err != nil {
		return "", fmt.Errorf("show a personal value: %w", err)
	}
	return v, nil
}
