package payloadcodec_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/orderflow/orderflow/platform/payloadcodec"
)

func key(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func codec(t *testing.T, spec string) *payloadcodec.Codec {
	t.Helper()
	ring, err := payloadcodec.ParseKeyring(spec)
	if err != nil {
		t.Fatal(err)
	}
	return payloadcodec.New(ring)
}

const secret = `{"customer_id":"cus_secret_42","payment_method":"pm_card_secret_42"}`

func payload(t *testing.T) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(secret)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSealedPayloadHidesItsDataAndRoundTrips(t *testing.T) {
	c := codec(t, "k1:"+key(t))
	enc, err := c.Encode([]*commonpb.Payload{payload(t)})
	if err != nil {
		t.Fatal(err)
	}
	raw := enc[0].String()
	for _, s := range []string{"cus_secret_42", "pm_card_secret_42", "json/plain"} {
		if strings.Contains(raw, s) {
			t.Fatalf("encrypted payload shows %q: %s", s, raw)
		}
	}
	if got := string(enc[0].Metadata[payloadcodec.MetaKeyID]); got != "k1" {
		t.Fatalf("key id %q, want k1", got)
	}
	dec, err := c.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	var back string
	if err := converter.GetDefaultDataConverter().FromPayload(dec[0], &back); err != nil || back != secret {
		t.Fatalf("round trip: %q, %v", back, err)
	}
	again, _ := c.Encode([]*commonpb.Payload{payload(t)})
	if bytes.Equal(again[0].Data, enc[0].Data) {
		t.Fatal("two encryptions of one payload are equal: the nonce is not random")
	}
}

func TestRotationOldKeyStillReads(t *testing.T) {
	k1, k2 := key(t), key(t)
	old := codec(t, "k1:"+k1)
	enc, _ := old.Encode([]*commonpb.Payload{payload(t)})

	rotated := codec(t, "k2:"+k2+",k1:"+k1)
	if _, err := rotated.Decode(enc); err != nil {
		t.Fatalf("rotated keyring cannot read key 1: %v", err)
	}
	newer, _ := rotated.Encode([]*commonpb.Payload{payload(t)})
	if got := string(newer[0].Metadata[payloadcodec.MetaKeyID]); got != "k2" {
		t.Fatalf("rotated keyring writes with %q, want k2", got)
	}
	if _, err := codec(t, "k2:"+k2).Decode(enc); !errors.Is(err, payloadcodec.ErrUnknownKey) {
		t.Fatalf("keyring without k1 read a k1 payload: %v", err)
	}
}

func TestTamperedPayloadsAreRefused(t *testing.T) {
	k1, k2 := key(t), key(t)
	c := codec(t, "k1:"+k1+",k2:"+k2)
	cases := map[string]func(p *commonpb.Payload){
		"flipped byte": func(p *commonpb.Payload) { p.Data[len(p.Data)-1] ^= 1 },
		"truncated":    func(p *commonpb.Payload) { p.Data = p.Data[:5] },
		"relabelled":   func(p *commonpb.Payload) { p.Metadata[payloadcodec.MetaKeyID] = []byte("k2") },
	}
	for name, tamper := range cases {
		t.Run(name, func(t *testing.T) {
			enc, _ := c.Encode([]*commonpb.Payload{payload(t)})
			tamper(enc[0])
			if _, err := c.Decode(enc); err == nil {
				t.Fatal("tampered payload decoded")
			}
		})
	}
}

func TestPlainPayloadsPassThrough(t *testing.T) {
	p := payload(t)
	dec, err := codec(t, "k1:"+key(t)).Decode([]*commonpb.Payload{p})
	if err != nil || dec[0] != p {
		t.Fatalf("a history written before encryption must still read: %v", err)
	}
}

func TestParseKeyringRefusesBadSpecs(t *testing.T) {
	good := key(t)
	short := base64.StdEncoding.EncodeToString([]byte("sixteen-byte-key"))
	for _, spec := range []string{"", "k1", "k1:" + short, "k1:not base64!", "k 1:" + good, "k1:" + good + ",k1:" + good, ":" + good} {
		if _, err := payloadcodec.ParseKeyring(spec); err == nil {
			t.Errorf("ParseKeyring(%q) accepted", spec)
		} else if strings.Contains(err.Error(), good) {
			t.Errorf("error shows the key: %v", err)
		}
	}
}

func TestHandlerDecodes(t *testing.T) {
	c := codec(t, "k1:"+key(t))
	enc, _ := c.Encode([]*commonpb.Payload{payload(t)})
	body := `{"payloads":[{"metadata":{"encoding":"` + base64.StdEncoding.EncodeToString(enc[0].Metadata["encoding"]) +
		`","encryption-key-id":"` + base64.StdEncoding.EncodeToString([]byte("k1")) +
		`"},"data":"` + base64.StdEncoding.EncodeToString(enc[0].Data) + `"}]}`
	h := payloadcodec.Handler(c)

	req := httptest.NewRequest(http.MethodPost, "/codec/decode", strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("decode: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if !strings.Contains(rec.Body.String(), base64.StdEncoding.EncodeToString(payload(t).Data)) {
		t.Fatalf("decode did not return the plain payload: %s", rec.Body)
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/codec/decode", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", rec.Code)
	}
}

func BenchmarkEncodeDecode(b *testing.B) {
	ring, _ := payloadcodec.ParseKeyring("k1:" + base64.StdEncoding.EncodeToString(make([]byte, 32)))
	c := payloadcodec.New(ring)
	p, _ := converter.GetDefaultDataConverter().ToPayload(secret)
	b.ReportAllocs()
	for b.Loop() {
		enc, _ := c.Encode([]*commonpb.Payload{p})
		_, _ = c.Decode(enc)
	}
}
