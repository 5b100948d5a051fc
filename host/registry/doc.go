// Package registry finds floe plugin binaries and indexes their
// components, so the host can start the right binary for a connector.
//
// # Discovery
//
// [Scan] looks in each folder of the worker's plugin.path, and one level of
// subfolders, for executables named floe-plugin-<name>. It records each
// binary's SHA-256, starts it once to ask which components it offers
// (Describe), and ends it. Answers are cached by checksum in
// <cacheDir>/plugins.json, so a restart does not start every binary again;
// a changed binary has a new checksum and is asked again.
//
// # Problems
//
// A broken file never stops a scan: Scan returns a [Problem] for it, naming
// the file and what to do (not executable, exits at start, speaks another
// protocol version, declares a component another binary already declared),
// and indexes everything else.
//
// # Lookup and start
//
// [Registry.Lookup] finds a component by kind and name or alias;
// [Registry.Components] lists them all. [Registry.Start] starts the
// binary of an entry with the checksum recorded at scan time, so a binary
// replaced since then is refused instead of run.
package registry
