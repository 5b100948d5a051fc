package rest

import (
	"context"
	"maps"
	"strings"

	"github.com/floehq/floe/host/worker"
	"github.com/floehq/floe/sdk"
)

// hidden stands in for a secret in answers, as Connect prints a password.
// Which keys and which parts of values are secrets is the SDK's one
// classification (sdk.IsSecretKey, sdk.RedactInline), which the sdktest
// kits hold specs to as well.
const hidden = sdk.HiddenValue

// secretKeys returns the keys of config that a component of the connector
// declares as PASSWORD. Components the worker does not know are skipped:
// the name heuristics still apply to them.
func secretKeys(ctx context.Context, w worker.API, config map[string]string) map[string]bool {
	keys := map[string]bool{}
	partitioner := config["partitioner"]
	if partitioner == "" {
		partitioner = "hash"
	}
	for _, comp := range []string{config["connector.class"], config["source"], partitioner, config["maintenance"]} {
		if comp == "" {
			continue
		}
		defs, err := w.PluginConfig(ctx, comp)
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

// maskValue returns what an answer may show of config[key]: hidden for a
// key a component declares PASSWORD or whose name says it is a secret,
// the value with its embedded secrets hidden otherwise.
func maskValue(key, value string, declared map[string]bool) string {
	if declared[key] {
		return hidden
	}
	return sdk.RedactValue(key, value)
}

// maskConfig returns a copy of config safe to answer with.
func maskConfig(ctx context.Context, w worker.API, config map[string]string) map[string]string {
	if config == nil {
		return map[string]string{}
	}
	declared := secretKeys(ctx, w, config)
	out := make(map[string]string, len(config))
	for k, v := range config {
		out[k] = maskValue(k, v, declared)
	}
	return out
}

// unmask puts stored secrets back where a client sent the masked value
// unchanged, so that GET, edit, PUT keeps them. config is changed in place.
func unmask(ctx context.Context, w worker.API, config map[string]string, stored map[string]string) {
	if len(stored) == 0 {
		return
	}
	merged := maps.Clone(stored)
	maps.Copy(merged, config)
	declared := secretKeys(ctx, w, merged)
	for k, v := range config {
		old, ok := stored[k]
		if ok && v != old && maskValue(k, old, declared) == v {
			config[k] = old
		}
	}
}

// unmaskPatch is unmask for a PATCH body, where nil removes a key.
func unmaskPatch(ctx context.Context, w worker.API, patch map[string]*string, stored map[string]string) {
	plain := map[string]string{}
	for k, v := range patch {
		if v != nil {
			plain[k] = *v
		}
	}
	unmask(ctx, w, plain, stored)
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
		secret := c.Definition.Type == "PASSWORD" || sdk.IsSecretKey(c.Value.Name)
		// A key's errors may quote its value (a check saying what it
		// got): they hide what the value shows hidden.
		if len(c.Value.Errors) > 0 {
			errs := make([]string, len(c.Value.Errors))
			for j, e := range c.Value.Errors {
				if secret && c.Value.Value != nil && *c.Value.Value != "" {
					e = strings.ReplaceAll(e, *c.Value.Value, sdk.HiddenValue)
				}
				errs[j] = sdk.RedactInline(e)
			}
			c.Value.Errors = errs
		}
		if c.Value.Value != nil {
			if secret {
				c.Value.Value = nil
			} else {
				v := sdk.RedactInline(*c.Value.Value)
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
