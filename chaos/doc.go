// Package chaos is orderflow's fault suite: every guarantee of the design is proven
// by causing the fault (SIGKILL, SIGTERM, a restarted server, a cut network,
// duplicate floods) on the real local stack and counting orders, workflows, charges
// and events afterwards. The tests carry the build tag "chaos" because they stop and
// restart the shared stack; `make test` runs them after the other tests, one at a
// time.
package chaos
