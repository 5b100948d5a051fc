package runtime

import (
	"strings"

	"github.com/floehq/floe/sdk"
)

// PluginConfig is the config one plugin component receives: the keys of
// config that its spec declares (fields, as the registry describes the
// component), exactly or by a prefix field, plus floe.data.dir. Nothing
// else reaches it, so a partitioner never sees the source's
// kafka.sasl.password nor a third-party sink the catalog's credentials of
// another component.
//
// The host's own keys ([HostSpec]) stay with the host: a component
// receives one only when it names that key exactly (the maintenance
// plugin reads commit.interval.ms), never through a prefix field. A
// component that reads another component's key declares it too; it then
// shows in its `floe plugins describe` listing.
//
// Standalone and distributed workers, config/validate and `floe maintain`
// all build plugin configs here.
func PluginConfig(fields []sdk.Field, config map[string]string, dataDir string) map[string]string {
	host := HostSpec()
	out := make(map[string]string, len(fields)+1)
	for k, v := range config {
		f, ok := declared(fields, k)
		if !ok {
			continue
		}
		if f.Prefix {
			if _, hostOwns := host.Lookup(k); hostOwns {
				continue
			}
		}
		out[k] = v
	}
	out[KeyDataDir] = dataDir
	return out
}

// declared finds the field of fields that declares key: an exact name
// wins over a prefix field.
func declared(fields []sdk.Field, key string) (sdk.Field, bool) {
	for _, f := range fields {
		if !f.Prefix && f.Name == key {
			return f, true
		}
	}
	for _, f := range fields {
		if f.Prefix && strings.HasPrefix(key, f.Name) {
			return f, true
		}
	}
	return sdk.Field{}, false
}
