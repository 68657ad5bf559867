// Package chaos is orderflow's fault suite: every guarantee of the design is proven
// by causing the fault (SIGKILL, SIGTERM, a restarted server, a cut network,
// duplicate floods) on the real local stack and counting orders, workflows, charges
// and events afterwards. The tests carry the build tag "chaos" because some stop
// and restart the shared stack.
//
// Each row has its own tenant, topics, consumer group, task queue and payment
// sandbox, so most call t.Parallel and run beside each other. The rows that stop
// or rewrite what every row shares (a stack server, the whole database) or that
// measure latency or memory under a flood of their own do not: Go runs them
// first, one at a time, before any parallel row starts.
package chaos
