package rest

import (
	"maps"
	"regexp"
	"strings"

	"github.com/floehq/floe/host/worker"
)

// hidden stands in for a secret in answers, as Connect prints a password.
const hidden = "[hidden]"

// secretWords mark a key as a secret when its name contains one. Keys
// passed through unchecked by a prefix field (kafka.sasl.password) are
// only recognisable this way.
var secretWords = []string{
	"password", "passwd", "secret", "token", "credential", "jaas.config",
	"user.info", "userinfo", "private.key", "private-key", "keystore.key",
	"api.key", "api-key", "apikey",
}

// isSecretName reports whether a key's name says it holds a secret. Keys
// naming a URL or endpoint are not (sasl.oauthbearer.token.endpoint.url);
// a password inside their value is masked by maskInline instead.
func isSecretName(key string) bool {
	k := strings.ToLower(key)
	for _, suffix := range []string{"url", "uri", "endpoint", "location", "file", "path", "type", "source"} {
		if strings.HasSuffix(k, suffix) {
			return false
		}
	}
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// secretKeys returns the keys of config that a component of the connector
// declares as PASSWORD. Components the worker does not know are skipped:
// the name heuristics still apply to them.
func secretKeys(w worker.API, config map[string]string) map[string]bool {
	keys := map[string]bool{}
	partitioner := config["partitioner"]
	if partitioner == "" {
		partitioner = "hash"
	}
	for _, comp := range []string{config["connector.class"], config["source"], partitioner, config["maintenance"]} {
		if comp == "" {
			continue
		}
		defs, err := w.PluginConfig(comp)
		if err != nil {
			continue
		}
		for _, d := range defs {
			if d.Type == "PASSWORD" {
				keys[d.Name] = true
			}
		}
	}
	return keys
}

// Redact returns what may be shown of a config value: "[hidden]" for a
// key whose name says it holds a secret, the value with any password in a
// URL or password= parameter hidden otherwise. The CLI prints values
// through it too.
func Redact(key, value string) string { return maskValue(key, value, nil) }

// maskValue returns what an answer may show of config[key].
func maskValue(key, value string, declared map[string]bool) string {
	if declared[key] || isSecretName(key) {
		return hidden
	}
	return maskInline(value)
}

var (
	// urlPassword matches the password of scheme://user:password@host.
	urlPassword = regexp.MustCompile(`(://[^/@:\s]*:)([^/@\s]+)(@)`)
	// kvPassword matches password=… in a query string or libpq DSN.
	kvPassword = regexp.MustCompile(`(?i)((?:^|[?&;\s])(?:password|passwd|pwd|secret|token)=)([^&;\s]+)`)
)

// maskInline hides passwords embedded in a value: a URL's user info and
// password= parameters.
func maskInline(v string) string {
	if !strings.Contains(v, "=") && !strings.Contains(v, "@") {
		return v
	}
	v = urlPassword.ReplaceAllString(v, "${1}"+hidden+"${3}")
	return kvPassword.ReplaceAllString(v, "${1}"+hidden)
}

// maskConfig returns a copy of config safe to answer with.
func maskConfig(w worker.API, config map[string]string) map[string]string {
	if config == nil {
		return map[string]string{}
	}
	declared := secretKeys(w, config)
	out := make(map[string]string, len(config))
	for k, v := range config {
		out[k] = maskValue(k, v, declared)
	}
	return out
}

// unmask puts stored secrets back where a client sent the masked value
// unchanged, so that GET, edit, PUT keeps them. config is changed in place.
func unmask(w worker.API, config map[string]string, stored map[string]string) {
	if len(stored) == 0 {
		return
	}
	merged := maps.Clone(stored)
	maps.Copy(merged, config)
	declared := secretKeys(w, merged)
	for k, v := range config {
		old, ok := stored[k]
		if ok && v != old && maskValue(k, old, declared) == v {
			config[k] = old
		}
	}
}

// unmaskPatch is unmask for a PATCH body, where nil removes a key.
func unmaskPatch(w worker.API, patch map[string]*string, stored map[string]string) {
	plain := map[string]string{}
	for k, v := range patch {
		if v != nil {
			plain[k] = *v
		}
	}
	unmask(w, plain, stored)
	for k, v := range plain {
		patch[k] = &v
	}
}

// maskInfos hides secret values in a validation answer: Value becomes
// null for secrets, and embedded passwords are masked elsewhere.
func maskInfos(infos worker.ConfigInfos) worker.ConfigInfos {
	out := infos
	out.Configs = make([]worker.ConfigInfo, len(infos.Configs))
	for i, c := range infos.Configs {
		if c.Value.Value != nil {
			if c.Definition.Type == "PASSWORD" || isSecretName(c.Value.Name) {
				c.Value.Value = nil
			} else {
				v := maskInline(*c.Value.Value)
				c.Value.Value = &v
			}
		}
		out.Configs[i] = normConfigInfo(c)
	}
	if out.Groups == nil {
		out.Groups = []string{}
	}
	return out
}
