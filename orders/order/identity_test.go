package order

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/tenants"
)

// Test vectors (the order IDs cross-checked with Python's hashlib): these strings are stored in Postgres, Temporal and at the payment
// provider. A change to any of them re-keys live orders, so it must be deliberate.
func TestIdentityVectors(t *testing.T) {
	tests := []struct {
		tenant                              string
		src                                 Source
		key, workflowID, orderID, chargeKey string
	}{
		{"acme", FromEvent, "k1", "order:acme:k1", "ord_ax2p5a3epiba4quculbc2zh2nb", "ofpay_hfhld4jztk54flvdhpqnfcys765pm3lw6qbwt234jae3ts"},
		{"acme", FromEvent, "a:b", "order:acme:a%3Ab", "ord_cj56vjpezkgyzuteafozn3n4nn", "ofpay_s6sv3ntwih2s4sgkumff2t3kzbygn5tjotqj5ledb3qh4g"},
		{"acme", FromEvent, "50%", "order:acme:50%25", "ord_yz5m4lbn3lzts4xq7yy2dbyzr2", "ofpay_5rkpseh7wt3ormtngtf5as65rdgku5fn2556zdiikl6fyd"},
		{"acme", FromEvent, "é", "order:acme:%C3%A9", "ord_37zzkdcsvlljzekhntfrjveziz", "ofpay_og6htewow3db25vpunm4wx3kzqav6dl4xxtgzlw2ad6dro"},
		{"acme", FromHTTP, "k1", "order:acme:http:k1", "ord_ue6kfrsig3acwmbd3ceir34rmb", "ofpay_yvgvylsrua2aq2i6boaj77gopa4cvalubycirrpmvaozan"},
		{"acme", FromHTTP, "http:k1", "order:acme:http:http%3Ak1", "ord_elk6wb7ijd35r2iq5ho46jkn2x", "ofpay_2pzrla4pbned7qiblgkftiqwn5rpbjzgcm2kjjf5radsxu"},
	}
	for _, tt := range tests {
		wf := WorkflowID(tt.tenant, tt.src, tt.key)
		if wf != tt.workflowID {
			t.Errorf("WorkflowID(%q, %q) = %q, want %q", tt.tenant, tt.key, wf, tt.workflowID)
		}
		if got := IDFor(wf); got != tt.orderID {
			t.Errorf("IDFor(%q) = %q, want %q", wf, got, tt.orderID)
		}
		if got := PaymentKey(wf, "charge", 0); got != tt.chargeKey || len(got) != 52 {
			t.Errorf("PaymentKey(%q) = %q, want %q", wf, got, tt.chargeKey)
		}
	}
}

func TestWorkflowIDCannotCollideAcrossTenants(t *testing.T) {
	// Tenant "a" with key "b:c" must not equal tenant "a:b" with key "c": tenant
	// names cannot hold ':', and the key's ':' is escaped.
	if tenants.Valid("a:b") || tenants.Valid("a%b") {
		t.Fatal("tenant names must not hold ':' or '%'")
	}
	if WorkflowID("a", FromEvent, "b:c") == "order:a:b:c" {
		t.Fatal("key ':' not escaped")
	}
	// No eventId of a tenant gives the workflow of one of its HTTP keys.
	if WorkflowID("a", FromEvent, "http:k") == WorkflowID("a", FromHTTP, "k") {
		t.Fatal("event and HTTP ID spaces overlap")
	}
	// Nor of its CloudEvents: the "ce:" segment's colon is never an escaped one.
	ce := CloudEventKey("/shop/checkout", "e1")
	if WorkflowID("a", FromEvent, "ce:"+ce) == WorkflowID("a", FromCloudEvent, ce) ||
		WorkflowID("a", FromHTTP, ce) == WorkflowID("a", FromCloudEvent, ce) {
		t.Fatal("CloudEvent and other ID spaces overlap")
	}
}

func TestCloudEventKeyIsTheSourceAndID(t *testing.T) {
	k := CloudEventKey("/shop/checkout", "e1")
	if k != CloudEventKey("/shop/checkout", "e1") || len(k) != 32 {
		t.Fatalf("key %q: want 32 characters, stable", k)
	}
	for _, other := range []string{CloudEventKey("/shop/refunds", "e1"), CloudEventKey("/shop/checkout", "e2"),
		CloudEventKey("/shop/checkout/e", "1"), CloudEventKey("/shop/checkoute", "1")} {
		if other == k {
			t.Fatal("another source or id gives the same key")
		}
	}
	if got := WorkflowID("acme", FromCloudEvent, k); got != "order:acme:ce:"+k {
		t.Fatalf("WorkflowID = %q", got)
	}
}

func TestPaymentKeysAreFixedLengthAndDistinct(t *testing.T) {
	long := WorkflowID("acme", FromHTTP, strings.Repeat(":%", 127)+"k")
	keys := map[string]bool{}
	for _, wf := range []string{WorkflowID("acme", FromHTTP, "k"), long} {
		for _, op := range []string{"charge", "refund"} {
			for gen := range 3 {
				k := PaymentKey(wf, op, gen)
				if len(k) != 52 || keys[k] {
					t.Fatalf("PaymentKey(%d-char ID, %s, %d) = %q: want 52 characters, never repeated", len(wf), op, gen, k)
				}
				keys[k] = true
			}
		}
	}
}

func TestDerivedIDsAreStableAndDistinct(t *testing.T) {
	a, b := WorkflowID("acme", FromHTTP, "k1"), WorkflowID("acme", FromHTTP, "k2")
	id, event := IDFor(a), EventID(a, "OrderPaid")
	if IDFor(a) != id || EventID(a, "OrderPaid") != event {
		t.Fatal("derivations are not stable")
	}
	seen := map[string]bool{}
	for _, id := range []string{IDFor(a), IDFor(b), EventID(a, "OrderPaid"), EventID(a, "OrderCancelled"), EventID(b, "OrderPaid")} {
		if seen[id] {
			t.Fatalf("collision on %s", id)
		}
		seen[id] = true
	}
}

func TestTransitions(t *testing.T) {
	for _, s := range []Status{StatusPaymentDeclined, StatusCancelled, StatusFailed} {
		if !s.Terminal() || len(Sources(s)) == 0 {
			t.Errorf("%s: terminal %v, reachable from %v", s, s.Terminal(), Sources(s))
		}
	}
	for _, tt := range []struct {
		from, to Status
		ok       bool
	}{
		{StatusPending, StatusPaymentPending, true},
		{StatusPending, StatusPaymentUnknown, true},
		{StatusPaymentUnknown, StatusPaymentPending, true},
		{StatusPaymentUnknown, StatusPaid, true},
		{StatusPaymentPending, StatusPaid, true},
		{StatusPaid, StatusCancelled, true},
		{StatusPaid, StatusPaymentPending, false},
		{StatusPaid, StatusPaymentDeclined, false},
		{StatusCancelled, StatusPaid, false},
		{StatusFailed, StatusPending, false},
		{StatusPaymentPending, StatusPending, false},
	} {
		if got := CanMove(tt.from, tt.to); got != tt.ok {
			t.Errorf("CanMove(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.ok)
		}
	}
	if Status("SHIPPED").Valid() || Status("SHIPPED").Terminal() {
		t.Error("unknown status accepted")
	}
}

// Fingerprints are stored with keys and orders: the same request must hash to the
// same bytes in every release.
func TestFingerprintIsStable(t *testing.T) {
	fp := Fingerprint("cus_1", "USD", []Item{{SKU: "sku-1", Quantity: 2, UnitAmount: 1299}, {SKU: "é:;=", Quantity: 1, UnitAmount: 5}}, "pm_card_visa")
	if got := hex.EncodeToString(fp); got != "01146d9fb5f0cbbd8fb0eeeef667c28cd03c1c66e1dbc6df28e149fa0604f5543a" {
		t.Fatalf("fingerprint %s changed", got)
	}
}
