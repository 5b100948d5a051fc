// Package rest serves Kafka Connect's REST API over a [worker.API], so that
// Connect's tools and scripts work against floe unchanged, plus floe's own
// table-health endpoint and Prometheus metrics.
//
// # Endpoints
//
//	GET    /                                        200 version (Connect's, 4.1.0), commit, kafka_cluster_id
//	GET    /health                                  200 healthy, 503 starting
//	GET    /connectors[?expand=status&expand=info]  200 names, or name → {status, info}
//	POST   /connectors                              201 + Location, 400, 409
//	GET    /connectors/{c}                          200, 404
//	DELETE /connectors/{c}                          204, 404
//	GET    /connectors/{c}/config                   200, 404
//	PUT    /connectors/{c}/config                   201 created + Location, 200 updated, 400
//	PATCH  /connectors/{c}/config                   200, 400, 404 (null removes a key)
//	GET    /connectors/{c}/status[?floe=true]       200, 404 (floe=true adds floe's progress)
//	POST   /connectors/{c}/restart                  204 (no flags), 202 + status (includeTasks/onlyFailed); a STOPPED connector stays so
//	PUT    /connectors/{c}/pause|resume             202
//	PUT    /connectors/{c}/stop                     204
//	GET    /connectors/{c}/tasks                    200
//	GET    /connectors/{c}/tasks/{t}/status         200, 404
//	POST   /connectors/{c}/tasks/{t}/restart        204, 404
//	GET    /connectors/{c}/offsets                  200 {"offsets": [...]}
//	PATCH  /connectors/{c}/offsets                  200 {"message"}, 400 unless STOPPED
//	DELETE /connectors/{c}/offsets                  200 {"message"}, 400 unless STOPPED
//	GET    /connectors/{c}/topics                   200 {"c": {"topics": [...]}}
//	PUT    /connectors/{c}/topics/reset             202
//	GET    /connectors/{c}/tables                   200 table health and maintenance runs (floe)
//	GET    /connector-plugins[?floe=true]           200 sources and sinks (floe=true: every component)
//	GET    /connector-plugins/{p}/config            200, 404
//	PUT    /connector-plugins/{p}/config/validate   200 ConfigInfos (even with errors), 400
//	GET    /admin/loggers                           200 name → {level, last_modified}
//	GET    /admin/loggers/{name}                    200, 404
//	PUT    /admin/loggers/{name}                    200 affected logger names, 400, 404
//	PUT    /admin/loggers/{name}?scope=cluster      204 set on every worker, 500 naming those that did not
//	PUT    /admin/loggers                           as PUT /admin/loggers/root (floe)
//	GET    /metrics                                 Prometheus text format
//
// # Connect's entity classes
//
// Connect's clients read answers with Connect's entity classes and a plain
// Jackson mapper, which refuses a field the class lacks. So every answer
// on a Connect path has exactly Connect's fields, and floe's extras are an
// opt-in or elsewhere:
//
//   - GET / answers version "4.1.0" ([ConnectVersion]: clients such as
//     kcctl parse it as the Kafka version and pick features by it), commit
//     floe's commit; floe's own version is the X-Floe-Version header.
//   - A status (GET /connectors/{c}/status, expand=status, the 202 of a
//     restart) holds floe's progress (checkpoints, commits, writer load,
//     dead letters, maintenance) under "floe" only with floe=true.
//   - GET /connector-plugins lists sources and sinks, with or without
//     connectorsOnly=false: floe has none of Connect's other plugin types,
//     and its partitioners and maintenance plugins are no PluginType
//     Connect knows. Each is listed under its Connect class name when it
//     has one (org.apache.iceberg.connect.IcebergSinkConnector, not
//     iceberg). floe=true lists every component and adds "floe": floe's
//     name and aliases. /connector-plugins/{p}/... takes any of them, the
//     class's simple name, or that name without "Connector".
//
// # Tables
//
// GET /connectors/{c}/tables reports each table with "source":
// "maintenance" when the connector has a maintenance plugin (it reads the
// tables: snapshots, files, bytes, manifests), else "commits": only what
// the sink reported of this run's commits (snapshot_id, commits,
// committed_records, committed_files, last_commit). Counts floe does not
// know are left out, never shown as 0.
//
// # Restarts
//
// Connect restarts a connector's Connector object and its tasks
// separately. floe has no Connector object: a connector is its runtime
// (its plugin processes, the pipeline of each task, the committer), so the
// connector instance of POST /connectors/{c}/restart is that runtime.
//
//   - No flags: the runtime restarts whole (final commit, fresh start from
//     the sink's frontier, every task with it); 204 once it restarted.
//   - includeTasks=true: the same, in the background; 202 at once with the
//     connector and every task RESTARTING.
//   - onlyFailed=true: a connector that FAILED (or could not start)
//     restarts whole, its tasks with it, and all show RESTARTING; a running
//     connector with includeTasks restarts its FAILED tasks in place and
//     only they show RESTARTING; otherwise nothing restarts.
//
// Instances shown RESTARTING stay so until they run again; then the status
// moves to RUNNING (or PAUSED, or FAILED). POST
// /connectors/{c}/tasks/{t}/restart restarts one task in place.
//
// In a cluster the restart goes to the connector's worker, which runs the
// committer and some tasks; with includeTasks it asks every other worker
// running the connector's tasks (the FAILED ones with onlyFailed) to
// restart them (clusterTaskRestarts), and names in a 500 any worker that
// did not.
//
// # Errors
//
// Every error answers Connect's body, {"error_code": N, "message": "…"}:
// 404 for an unknown connector, task, plugin, logger or path; 409 when a
// connector exists already or the worker is rebalancing; 400 for bad input
// (malformed JSON names the problem, line and column); 405 for a known path
// with the wrong method; 500 for everything else.
//
// # Browsers
//
// A web page must not drive the API from a user's browser. Before any
// handler runs: a cross-origin POST, PUT, PATCH or DELETE (Sec-Fetch-Site
// or Origin says another site sent it) answers 403; on a loopback
// listener a Host header that is not a loopback name answers 403 (DNS
// rebinding); a write body that is not application/json answers 415.
// floe sends no CORS headers, so no other origin reads an answer.
// Non-browser clients send neither Origin nor Sec-Fetch-Site and are not
// affected.
//
// # Authentication and TLS
//
// With an [Auth] holding users (HTTP Basic) or bearer tokens, every
// request but GET /health needs one of them and answers 401 with a
// WWW-Authenticate challenge otherwise. https listeners serve TLS with
// [LoadTLS]'s certificate. docs/security.md has the worker keys.
//
// # Secrets
//
// Config values of keys that a component declares as PASSWORD, keys whose
// names say they hold a secret (password, secret, token, credentials, …),
// and passwords inside URLs are replaced by "[hidden]" in every answer. A
// client that sends a hidden value back unchanged (GET, edit, PUT) keeps the
// stored secret.
//
// # Log levels
//
// [Loggers] keeps one [slog.LevelVar] per named logger; /admin/loggers
// reads and sets them with log4j's level names, as Connect does. With
// scope=cluster in distributed mode the worker asked sends the change to
// every other worker its [PeerRouter] lists.
//
// # Starting
//
// A [Gate] serves the listener while the worker starts: 503 with
// Retry-After for every request until the stored connectors are loaded.
package rest
