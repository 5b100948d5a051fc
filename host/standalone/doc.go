// Package standalone is the standalone worker's watched config folder and
// the connector file format it shares with `floe standalone`'s command
// line.
//
// # Connector files
//
// A connector file is JSON in Kafka Connect's shape,
//
//	{"name": "orders", "config": {"connector.class": "iceberg", …}, "initial_state": "RUNNING"}
//
// or a flat object of config keys (a Connect .properties file written as
// JSON), whose "name" key, or else the file name, names the connector.
// [ParseConnector] reads both and reports bad JSON with its line and
// column.
//
// # The watched folder
//
// [Watch] keeps a folder (the worker's config.dir) and the worker in step:
// dropping a *.json file in creates its connector, editing it replaces the
// config (the worker restarts the connector), removing it deletes the
// connector. Changes are debounced so an editor's several writes apply
// once. A file that is not valid is logged by name and leaves the
// connector as it was.
package standalone
