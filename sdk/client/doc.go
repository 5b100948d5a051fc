// Package client is the host side of the floe plugin protocol: it starts a
// plugin binary over go-plugin and calls its components. The floe host and
// the sdktest conformance kits use it; plugin authors do not.
//
// # Starting a plugin
//
// [Start] launches a binary found by the registry (host/registry) and
// completes go-plugin's handshake: magic cookie, protocol version 2, gRPC
// on a Unix socket in a directory of the process's own (with AutoMTLS when
// [StartOptions.TLS] asks), and the binary's SHA-256 checked against the
// one the registry recorded. With [StartOptions.SharedMemory], batches
// travel in sealed memory files and only handles cross gRPC ([Batch.Shared];
// release a batch when done with it). Start's errors name the binary and say what to do about it:
// missing, not executable, exited before the handshake (with the last lines
// it wrote), speaking another protocol version, or changed since the scan.
// [Attach] connects to a server running inside the calling process
// (sdk.ServeInProcess), for tests.
//
// One [Process] hosts every task of one connector for one plugin kind.
// Open a task with [Process.OpenSource], [Process.OpenPartitioner],
// [Process.OpenSink] or [Process.OpenMaintenance]; each returns a handle
// whose methods call that task. [Process.Exited] is closed when the process
// ends, and [Process.ExitReason] then says why.
//
// # Batches
//
// Batches stay in their wire form (Arrow IPC bytes, [Batch]) on this side,
// so the host forwards them from source to partitioner and sink without
// decoding them. [Batch.Decode] and [Schema.Arrow] decode when the host
// needs to look inside.
//
// # Errors
//
// A failed call returns an [*Error] naming the plugin and the call, with
// the plugin's message. The SDK's sentinel errors survive the trip:
// errors.Is(err, sdk.ErrSchemaRejected), sdk.ErrRecordTooLarge and
// sdk.ErrUnsupported (an optional capability the plugin lacks) hold on this
// side, and so do sdk.ErrTransient and sdk.ErrPermanent when the plugin
// marked its error with sdk.Transient or sdk.Permanent. An invalid config carries every bad key in [Error.ConfigErrors].
// When the process died during a call, the error says so and includes its
// exit reason.
//
// # Source host
//
// A source task calls back into floe (start positions, schema admission,
// dead letters) through the [SourceHost] given to OpenSource. The client
// serves it to the plugin over go-plugin's broker, one connection per task,
// for as long as the task is open.
package client
