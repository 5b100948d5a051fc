// Package metrics holds floe's Prometheus collectors.
//
// # Ownership
//
// A worker owns one [Metrics], which owns its *prometheus.Registry: floe
// never registers anything in the client library's global default
// registry, so two workers in one process (tests) do not collide. The REST
// API serves [Metrics.Registry] on /metrics.
//
// # Labels
//
// Every series carries the connector name; per-task series add "task",
// per-writer series add "writer", restart counters add "kind", and the
// maintenance and table-health series (floe_maintenance_*, floe_table_*)
// add "table" and, for runs, the maintenance "task". The runtime
// gets a [Connector] view with the connector label bound, and the worker
// calls [Metrics.Forget] when a connector is deleted so its series go away.
//
// # Freshness
//
// The host cannot see when a record was produced, so it reports commit lag:
// at each commit, now minus the receive time of the oldest batch of the
// committed checkpoint. True produce-to-visible freshness is measured by
// the benchmarks.
package metrics
