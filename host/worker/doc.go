// Package worker is a floe worker in standalone mode: it holds the
// connectors, validates and stores their configs, runs each one
// (host/runtime) in its target state, and answers the REST API and the CLI
// through [API].
//
// # Config
//
// [LoadConfig] reads the worker's JSON (a flat object of strings):
// listeners, plugin.path, data.dir, config.dir, worker.id, log.level and
// task.shutdown.graceful.timeout.ms. Unknown keys are an error naming the
// key and the file.
//
// # Validation
//
// A connector config is checked against the union of the specs it uses:
// the host's keys ([HostConfig], declared once in runtime.HostSpec), and
// the keys of its source, partitioner, sink and maintenance components.
// The host validates its own keys; each component's keys are validated in
// its plugin (a process is started for it), so the plugin's own checks
// run. A key no spec declares (exactly or by a prefix field) is an error
// that suggests the closest declared key. A component that is not
// installed is an error on the key naming it (connector.class, source,
// partitioner, maintenance), listing the installed ones. A config that does
// not validate leaves nothing stored or started.
//
// # Secrets
//
// Values of keys a spec declares PASSWORD are shown as [Hidden] ("[hidden]")
// by Connector and Tasks, and as null in Validate's ConfigInfos. Put and
// Patch that send [Hidden] back for such a key keep the stored value, so a
// GET-edit-PUT round trip works. Plugins get the real values.
//
// # State
//
// Configs and target states (RUNNING, PAUSED, STOPPED) live in the store
// under data.dir, so a restarted worker brings every connector back as it
// was. Statuses are kept in memory and stored when a connector fails.
// Offsets are the sink's frontier; PATCH and DELETE offsets need the
// connector STOPPED and take effect on its next start (see host/runtime,
// "Offset overrides").
package worker
