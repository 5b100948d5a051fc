// Package handshake holds what both sides of the floe plugin protocol must
// agree on before the first call: go-plugin's handshake (magic cookie and
// protocol version), the names the plugin kinds are served under, and the
// message size limit. The plugin side (package sdk) and the host side
// (package sdk/client) both import it, so they cannot drift apart.
package handshake

import plugin "github.com/hashicorp/go-plugin"

// ProtocolVersion is the floe plugin protocol version this SDK speaks. Bump
// it only for a change old hosts or old plugins cannot understand; fields
// added to the proto do not need a bump.
//
// Version 2: components declare their capabilities at Describe
// (Component.capabilities) and the host calls nothing optional they do
// not declare; a version 1 plugin declares none and would silently lose
// its frontier, so it is refused at the handshake instead.
const ProtocolVersion = 2

// MagicCookieKey and MagicCookieValue are go-plugin's magic cookie: the host
// sets the variable in the plugin's environment, and a plugin started
// without it refuses to run (a user ran it by hand). They are not a secret.
const (
	MagicCookieKey   = "FLOE_PLUGIN"
	MagicCookieValue = "deebbc6e8fe9924a6a79aadacb314fe5"
)

// Config returns go-plugin's handshake for floe. ProtocolVersion stays zero
// because both sides use VersionedPlugins.
func Config() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}

// Names under which the services are dispensed in go-plugin's plugin set.
const (
	Describe    = "describe"
	Source      = "source"
	Partitioner = "partitioner"
	Sink        = "sink"
	Maintenance = "maintenance"
)

// MaxMessageSize is the largest gRPC message either side sends or accepts.
const MaxMessageSize = 64 << 20

// MaxBatchBytes is the largest encoded batch the SDK puts in one message.
// It leaves a quarter of MaxMessageSize for what travels with a batch (the
// writer index per record of a Write, for example, which is at most 5 bytes
// per record while a record takes at least 20 bytes of Arrow IPC).
const MaxBatchBytes = MaxMessageSize / 4 * 3

// LogLevelEnv names the environment variable that sets the plugin's log
// level (trace, debug, info, warn, error). The default is info.
const LogLevelEnv = "FLOE_PLUGIN_LOG_LEVEL"

// Errors cross as gRPC statuses carrying the error's message. The SDK's
// sentinel errors also carry an errdetails.ErrorInfo with domain ErrorDomain
// and one of these reasons, so the host maps them back.
const (
	ErrorDomain = "floe.plugin.v1"
	// ReasonSchemaRejected: sdk.ErrSchemaRejected (code FailedPrecondition).
	ReasonSchemaRejected = "SCHEMA_REJECTED"
	// ReasonRecordTooLarge: sdk.ErrRecordTooLarge (code ResourceExhausted).
	ReasonRecordTooLarge = "RECORD_TOO_LARGE"
	// ReasonUnsupported: sdk.ErrUnsupported (code Unimplemented).
	ReasonUnsupported = "UNSUPPORTED"
	// ReasonEndOfInput: sdk.ErrEndOfInput outside Read (code OutOfRange).
	ReasonEndOfInput = "END_OF_INPUT"
	// ReasonTransient: sdk.ErrTransient (code Unavailable unless another
	// reason sets it). It may come as a second ErrorInfo after another.
	ReasonTransient = "TRANSIENT"
	// ReasonPermanent: sdk.ErrPermanent (code FailedPrecondition unless
	// another reason sets it), likewise.
	ReasonPermanent = "PERMANENT"
)
