//go:build stack

package worker_test

import (
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"

	"github.com/orderflow/orderflow/testkit/stacktest"
)

// The worker process serves the codec on its own listener only: with no
// credential it refuses, with the token it decrypts; the ops port has no codec.
func TestWorkerCodecListenerNeedsACredential(t *testing.T) {
	h := newHarness(t)
	ops, codecAddr := stacktest.FreeAddr(t), stacktest.FreeAddr(t)
	const token = "test-codec-token-0123456789"
	env := h.WorkerEnv()
	env["OPS_ADDR"], env["CODEC_ADDR"], env["CODEC_TOKENS"] = ops, codecAddr, token
	stacktest.Start(t, stacktest.Binary(t, "cmd/worker"), env)
	stacktest.Eventually(t, 30*time.Second, "the worker to be ready", func() bool {
		resp, err := http.Get("http://" + ops + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	secret := `{"payment_method":"pm_card_visa","customer_id":"cus_codec_1"}`
	enc, err := stackCodec(t).Encode([]*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(secret)}})
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	body := `{"payloads":[{"metadata":{"encoding":"` + b64(enc[0].Metadata["encoding"]) + `","encryption-key-id":"` + b64(enc[0].Metadata["encryption-key-id"]) +
		`"},"data":"` + b64(enc[0].Data) + `"}]}`
	post := func(url, auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := post("http://"+ops+"/codec/decode", "Bearer "+token); code != http.StatusNotFound {
		t.Fatalf("the ops port answered the codec: %d", code)
	}
	if code, got := post("http://"+codecAddr+"/codec/decode", ""); code != http.StatusUnauthorized || strings.Contains(got, b64([]byte(secret))) {
		t.Fatalf("no credential: %d %s", code, got)
	}
	if code, got := post("http://"+codecAddr+"/codec/decode", "Bearer "+token); code != http.StatusOK || !strings.Contains(got, b64([]byte(secret))) {
		t.Fatalf("with the token: %d %s", code, got)
	}
}
