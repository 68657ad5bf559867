package settings

import "maps"

// meanings says what each variable is for: docs/configuration.md's last column.
// Table refuses a variable read without one, and one here that nothing reads.
func meanings() map[string]string {
	m := connectionMeanings()
	maps.Copy(m, ingressMeanings())
	maps.Copy(m, workerMeanings())
	return m
}

// connectionMeanings are a part of meanings' table, kept under a screen each.
func connectionMeanings() map[string]string {
	return map[string]string{
		"DATABASE_URL":                           "PostgreSQL URL (secret: it holds the password)",
		"DB_MAX_CONNS":                           "pool size",
		"TEMPORAL_CONFIG_FILE":                   "Temporal's client configuration file; its profile is read under the variables below. All `TEMPORAL_*` are read by the SDK's `contrib/envconfig`, as the `temporal` CLI reads them (not `TEMPORAL_GRPC_META_*`, nor `TEMPORAL_CODEC_*`: these processes encrypt with `PAYLOAD_KEYS`)",
		"TEMPORAL_PROFILE":                       "the profile of that file",
		"TEMPORAL_ADDRESS":                       "Temporal frontend",
		"TEMPORAL_NAMESPACE":                     "namespace",
		"TEMPORAL_TLS":                           "TLS to the frontend (on with an API key or a client certificate; `false` turns it off)",
		"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION": "do not check the frontend's name against its certificate (test clusters only)",
		"TEMPORAL_API_KEY":                       "Temporal Cloud API key (secret); turns TLS on",
		"TEMPORAL_CLIENT_AUTHORITY":              "the `:authority` sent to the frontend, when a proxy routes on it",
		"TEMPORAL_TLS_CLIENT_CERT_PATH":          "client certificate for mTLS (or `TEMPORAL_TLS_CLIENT_CERT_DATA`)",
		"TEMPORAL_TLS_CLIENT_CERT_DATA":          "the client certificate itself, PEM",
		"TEMPORAL_TLS_CLIENT_KEY_PATH":           "its private key (secret; or `TEMPORAL_TLS_CLIENT_KEY_DATA`)",
		"TEMPORAL_TLS_CLIENT_KEY_DATA":           "the private key itself, PEM (secret)",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH":       "CA of the frontend's certificate (system roots when unset; or `TEMPORAL_TLS_SERVER_CA_CERT_DATA`)",
		"TEMPORAL_TLS_SERVER_CA_CERT_DATA":       "that CA itself, PEM",
		"TEMPORAL_TLS_SERVER_NAME":               "the name the frontend's certificate carries, when not its address",
		"TASK_QUEUE":                             "task queue of the order workflows",
		"BACKLOG_ACCEPT":                         "how long new work may wait behind the fleet's backlog: above what the fleet closes in that time (workflows on `TASK_QUEUE` still open and at work: an order whose charge is not sent yet whatever its age, any other started in the last 30 s and not waiting for a customer; against those closed in the last 10 s, the highest such rate of the last five minutes; read from Temporal's visibility every second), the API answers `POST`s and `DELETE`s 503 with `Retry-After` before any work (a retry of a key still on record passes: it is answered from the record) and the consumer waits, leaving events in the topic ([capacity](capacity.md#what-orderflow-does-above-capacity)). 0 (the default): no bound. The bound is shared by the tenants asking, by their `FAIRNESS_WEIGHTS`: a tenant under its share is admitted whatever another's flood holds (a share must exceed what the tenant starts in a second); events take three quarters of it, leaving the rest to requests that must be answered now. Every process reads the counts, and the open workflows of the 8 tenants that asked last, every second",
		"BACKLOG_FLOOR":                          "open workflows under which nothing is refused for the backlog, whatever the rate (an idle fleet's rate says little); nothing is refused either while nothing has closed for five minutes (no worker at work); a fleet that closed work within them and closes none now has stalled, and what is over the bound hears 503 with Retry-After 30",
		"SHUTDOWN_TIMEOUT":                       "whole drain budget, under Kubernetes' 30 s; the API's must cover `DRAIN_DELAY` plus a placement's 10 s start budget",
		"LOG_LEVEL":                              "JSON logs on stdout at this level and above",
		"PAYLOAD_KEYS":                           "payload encryption keyring (secret): `id:base64key[,id:base64key...]`, 32-byte keys; the first encrypts, all decrypt (see [Payload encryption](operations.md#payload-encryption))",
		"FAIRNESS_WEIGHTS":                       "tenants' shares of the task queues, `tenant=weight,...` (over 0, at most 1000); a tenant not named weighs 1. Every order's tasks carry its tenant as fairness key (see [Tenants share fairly](operations.md#tenants-share-fairly))",
		"TENANT_RATE":                            "every tenant's request budget, requests a second, unless `api limits set` gave it its own; over it the API answers 429 and Kafka events wait",
		"TENANT_BURST":                           "the requests a tenant may send at once within that budget",
		"TENANT_LIMITS_REFRESH":                  "how often the tenants' own budgets are read",
		"CANCEL_WINDOW":                          "how long a paid order stays cancellable (with a refund) before it counts as fulfilled",
		"PAYMENT_LOOKUP_DELAY":                   "the provider's search consistency window: how long before orphan intents are swept (`make run` uses 5s with the sandbox)",
		"PAYMENT_ACTION_TIMEOUT":                 "how long an order waits on its customer to authenticate before its intent is cancelled (at most 7 days)",
		"PAYMENT_POLL_INTERVAL":                  "the longest pause between an order's reads of an intent that waits on its customer or is processing: the fallback that needs no webhook (100ms to 10m)",
		"IDEMPOTENCY_TTL":                        "how long an Idempotency-Key and its response are kept (beyond Temporal's retention; 24h at least); each answer says until when (`Idempotency-Key-Expires`), and after it the order the key made answers ([retention](retention.md))",
		"REPLAY_CACHE_BYTES":                     "memory of the in-process cache of completed responses (keys, fingerprints, bodies, 256 bytes of overhead each), oldest out first; Postgres answers what it does not hold",
		"MAX_BODY_BYTES":                         "larger bodies get 413",
		"TRUSTED_PROXIES":                        "the proxies in front of the API (addresses or CIDR ranges, comma-separated: the ingress controller's pods, a load balancer) whose `TRUSTED_PROXY_HEADER` names the client; each client address then has its own bound on unknown API keys. Empty: the connection's peer is the client",
	}
}

// ingressMeanings are a part of meanings' table, kept under a screen each.
func ingressMeanings() map[string]string {
	return map[string]string{ //nolint:gosec // G101: variables' names and what they are for, no credentials
		"TRUSTED_PROXY_HEADER":          "the one header those proxies append the client's address to: `X-Forwarded-For` (nginx, Envoy, most load balancers) or `Forwarded` (RFC 7239). The client is the rightmost address in it that is not a trusted proxy, and the other header, which a client can write itself, is never read. Anything else stops the API at start",
		"API_KEY_CACHE_TTL":             "how long what Postgres said of an API key id (its hash and tenant, or that it does not exist) is trusted: a revoked key is refused within it. Ids not known yet are looked up together, one query per 250 ms (more than 1,000 waiting: 503)",
		"PAYMENTS_URL":                  "payment provider (the sandbox locally)",
		"PAYMENTS_API_KEY":              "Stripe secret key (`sk_…`, secret), sent by stripe-go; the API only reads PaymentIntents, so give it a restricted key (`rk_…`): the manifests pass it the Secret's `PAYMENTS_READ_KEY`",
		"PAYMENTS_TIMEOUT":              "timeout of one provider request (Stripe's libraries wait 80 s)",
		"PAYMENTS_RETURN_URL":           "where a customer comes back to after 3-D Secure; with it an order's `next_action` is a redirect URL, without it Stripe.js's client secret. It is one of the confirm's parameters: change it only with no confirm in flight",
		"PAYMENTS_WEBHOOK_SECRETS":      "the webhook endpoint's signing secrets (`whsec_…`, secret): both while a rotation overlaps. Unset: no `/webhooks/stripe`, and orders waiting on their intent rely on the poll alone",
		"PROBLEM_BASE_URL":              "where the problem types are documented: each problem's `type` is this and its kind (`…/quota-exceeded`); point it at a copy of [docs/problems](problems/README.md), e.g. `https://github.com/ORG/orderflow/blob/main/docs/problems/README.md#`",
		"API_ADDR":                      "public listen address: /v1, /openapi.yaml and /webhooks/stripe",
		"OPS_ADDR":                      "the ops listener, off the public network: /healthz, /readyz, /metrics",
		"SHED_MAX_POSTS":                "`POST`s one API process handles at once without `Prefer: wait`; above it a `POST` is answered 503 with `Retry-After` (the time the process takes to finish what it holds, 1 to 30 s) before any work starts ([capacity](capacity.md#what-orderflow-does-above-capacity))",
		"SHED_MAX_WAITERS":              "`POST`s with `Prefer: wait` one API process holds at once; above it, 503 with `Retry-After` as above",
		"DRAIN_DELAY":                   "time between /readyz turning 503 and the listener closing",
		"MAX_CONCURRENT_ACTIVITIES":     "activity slots",
		"MAX_CONCURRENT_WORKFLOW_TASKS": "workflow task slots",
		"EAGER_DISPATCH":                "hand an activity straight back to the worker whose task scheduled it, and an order placed by event its first task with its start, skipping matching when a slot is free (the server must allow it: `system.enableActivityEagerExecution`, `system.enableEagerWorkflowStart`); lower latency, but tasks that skip matching skip its fair queue, so tenants' weights no longer split the slots",
		"WORKER_STOP_TIMEOUT":           "how long a stop lets running activities finish before handing them back; under `SHUTDOWN_TIMEOUT`",
		"CODEC_ADDR":                    "the codec endpoint's own listener (/codec/ for the Temporal Web UI); unset: none. It needs a credential below, or the worker does not start",
		"CONSOLE_ADDR":                  "the operator console's own listener (orders, timelines, dead letters, findings); unset: none. Never on the public network; it needs `CONSOLE_TOKENS`, or the worker does not start",
		"CONSOLE_TOKENS":                "operator tokens (secret, 16 characters at least each) the console's login accepts; its sessions are signed with a key derived from them, so changing them logs everyone out",
		"TEMPORAL_UI_URL":               "Temporal's Web UI, for the console's link to an order's workflow; unset: no link",
		"KAFKA_CLOSE_TIMEOUT":           "how long a kafka-go reader or writer may take to close before it is abandoned",
		"KAFKA_BROKERS":                 "bootstrap brokers",
		"KAFKA_TLS":                     "TLS to the brokers; any of the three paths below or a server name turns it on too",
		"KAFKA_TLS_CA_PATH":             "the brokers' CA (system roots when unset)",
		"KAFKA_TLS_CERT_PATH":           "a client certificate for mTLS",
		"KAFKA_TLS_KEY_PATH":            "its private key (secret)",
		"KAFKA_TLS_SERVER_NAME":         "the name the brokers' certificates carry",
		"KAFKA_SASL_MECHANISM":          "SASL: `SCRAM-SHA-512`, `SCRAM-SHA-256` or `PLAIN` (PLAIN only over TLS); used by every Kafka client of the process (group, readers, writers, admin, redrive)",
		"KAFKA_SASL_USERNAME":           "SASL user",
		"KAFKA_SASL_PASSWORD":           "SASL password (secret)",
		"EVENTS_TOPIC":                  "topic of OrderPaid and the other order events",
		"REQUESTS_TOPIC":                "topic the ingress consumer reads",
	}
}

// workerMeanings are a part of meanings' table, kept under a screen each.
func workerMeanings() map[string]string {
	return map[string]string{ //nolint:gosec // G101: variables' names and what they are for, no credentials
		"DLQ_TOPIC":                 "dead-letter topic for poison messages",
		"CONSUMER_GROUP":            "consumer group (with the tenant, the dedup scope of `processed_events`)",
		"CONSUMER_IN_FLIGHT":        "messages handled at once by one worker, over all its partitions",
		"CONSUMER_MAX_UNCOMMITTED":  "messages a partition holds behind its oldest unsettled one before fetching pauses (gauge `orderflow_consumer_uncommitted_messages`); a quarter of it may wait for one tenant's budget, the rest of that tenant's events are parked (offsets only, 64 times it at most) and read again as the budget allows",
		"CONSUMER_COMMIT_INTERVAL":  "how often each partition commits its watermark",
		"PAYMENTS_RATE":             "the provider account's rate limit, in requests a second, held across every worker and API process calling it (one budget in PostgreSQL) and handed to tenants by their FAIRNESS_WEIGHTS when requests wait; set it to the account's limit (Stripe: 100 live, 25 in test mode) whatever the number of replicas; 0 for none. A 429 from the provider is retried, never a failure",
		"TENANT_CACHE_TTL":          "how long the consumer trusts that an event's tenant exists; a tenant whose keys are all revoked is refused after it",
		"RECONCILE_INTERVAL":        "how often a reconcile pass runs (`worker bootstrap` sets the Schedule's interval), and how long an order stays unsettled before its workflow is looked at (1s or more)",
		"RECONCILE_REFUND_ORPHANS":  "refund a succeeded charge that no order shows (no order, an order ended without payment, a second charge); false: report it only",
		"CODEC_TOKENS":              "bearer tokens (secret, at least 16 characters each) the codec accepts, as `Authorization: Bearer` or in the path (`/codec/t/<token>/decode`, for a UI without single sign-on)",
		"CODEC_JWT_ISSUER":          "the Web UI's forwarded access token (`codec.passAccessToken`) is accepted as a JWT from this issuer, for the audience below, signed by a key of `CODEC_JWKS`, unexpired",
		"CODEC_JWT_AUDIENCE":        "that token's audience",
		"CODEC_JWKS":                "the keys that sign it: a file or an https URL, read again every 5 min",
		"CODEC_CORS_ORIGIN":         "the only browser origin the codec answers (`make run` sets the UI's)",
		"EVENTS_RETENTION":          "how long `processed_events` keeps an event's row (24h at least): the requests topic's retention plus the longest redrive ([retention](retention.md))",
		"WEBHOOK_EVENTS_RETENTION":  "how long a provider event's row is kept (72h at least: Stripe retries for three days)",
		"REDRIVES_RETENTION":        "how long a redriven dead letter is remembered (24h at least; above the dead-letter topic's retention)",
		"FINDINGS_RETENTION":        "how long the reconciler's findings are kept for `worker reconcile report`",
		"ORDERS_RETENTION":          "0 keeps orders and payments for ever, as the ledger of record; otherwise (4320h, 180 days, at least) closed orders whose last change is older go, with their payments; archive them first ([retention](retention.md#orders-and-payments-archive-then-drop))",
		"PRUNE_INTERVAL":            "how often the workers prune what is past its retention; one worker at a time leads a pass",
		"PAYSIM_ADDR":               "sandbox listen address",
		"PAYSIM_STATE":              "file that keeps the sandbox's state across restarts (none: memory only)",
		"PAYSIM_REFUND_FAIL_AFTER":  "how long a refund of the refund failure test cards (pm_card_refundFail) lasts before it fails",
		"PAYSIM_LATENCY_MS":         "injected latency of each request, ms (also `PUT /sandbox/faults`)",
		"PAYSIM_FAIL_BEFORE":        "the next N writes are answered 500 without acting",
		"PAYSIM_FAIL_AFTER":         "the next N writes act, then answer 500 (the charge stands, the caller sees an error)",
		"PAYSIM_DROP_AFTER":         "the next N writes act, then drop the connection",
		"PAYSIM_KEY_TTL":            "how long the sandbox keeps a key's saved answer",
		"PAYSIM_SEARCH_DELAY":       "how long a new charge or PaymentIntent stays invisible to search",
		"PAYSIM_WEBHOOK_URL":        "where the sandbox delivers its events (also `PUT /sandbox/webhooks`)",
		"PAYSIM_WEBHOOK_SECRETS":    "the secrets it signs every event with",
		"PAYSIM_WEBHOOK_DUPLICATES": "deliveries of each event",
		"PAYSIM_WEBHOOK_DELAY_MS":   "the longest random hold of each delivery, ms (so events overtake each other)",
	}
}
