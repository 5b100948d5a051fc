package rest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/floehq/floe/host/worker"
)

// listPlugins answers GET /connector-plugins: sources and sinks, each
// under its Connect class name when it has one. floe has none of
// Connect's other plugin types (converters, transformations, …), so
// connectorsOnly=false lists the same. floe=true adds floe's partitioners
// and maintenance plugins, which Connect's PluginInfo class refuses as
// types, and each component's floe name and aliases (under "floe", a
// field that class refuses too).
func (s *Server) listPlugins(w http.ResponseWriter, r *http.Request) {
	if _, err := boolParam(r, "connectorsOnly", true); err != nil {
		writeError(w, err)
		return
	}
	withFloe, err := floeParam(r)
	if err != nil {
		writeError(w, err)
		return
	}
	plugins := s.w.Plugins(r.Context(), !withFloe)
	if plugins == nil {
		plugins = []worker.PluginInfo{}
	}
	if !withFloe {
		for i := range plugins {
			plugins[i].Floe = nil
		}
	}
	writeJSON(w, http.StatusOK, plugins)
}

// pluginConfig answers GET /connector-plugins/{p}/config: the component's
// config key definitions.
func (s *Server) pluginConfig(w http.ResponseWriter, r *http.Request) {
	defs, err := s.w.PluginConfig(r.Context(), r.PathValue("p"))
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]worker.ConfigDef, len(defs))
	for i, d := range defs {
		out[i] = normDef(d)
	}
	writeJSON(w, http.StatusOK, out)
}

// validate answers PUT /connector-plugins/{p}/config/validate with
// Connect's ConfigInfos: 200 even when the config has errors (they are in
// error_count and each key's value.errors). 400 only for a body that is
// not a JSON object of strings, or a connector.class naming another
// plugin; 404 for an unknown plugin.
func (s *Server) validate(w http.ResponseWriter, r *http.Request) {
	plugin := r.PathValue("p")
	var raw map[string]json.RawMessage
	if err := decodeBody(r, &raw); err != nil {
		writeError(w, err)
		return
	}
	config, err := stringConfig(raw)
	if err != nil {
		writeError(w, err)
		return
	}
	if class, ok := config["connector.class"]; ok && !s.sameClass(r.Context(), class, plugin) {
		writeError(w, errorf(http.StatusBadRequest, "Included connector type %s does not match request type %s: validate at /connector-plugins/%s/config/validate instead", class, plugin, class))
		return
	}
	if _, err := s.w.PluginConfig(r.Context(), plugin); errors.Is(err, worker.ErrNotFound) {
		writeError(w, errorf(http.StatusNotFound, "Unknown plugin %s: GET /connector-plugins?floe=true lists the installed ones", plugin))
		return
	}
	if _, ok := config["connector.class"]; !ok {
		config["connector.class"] = plugin
	}
	infos, err := s.w.Validate(r.Context(), plugin, config)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, maskInfos(infos))
}

// sameClass reports whether a config's connector.class may be validated
// as plugin. As in Connect, a class matches its simple name and a name
// with or without the "Connector" suffix; a component's class, floe name
// and aliases all name it. Only two names of different plugins the worker
// lists are a mismatch: an unknown name reaches the worker, which says
// why.
func (s *Server) sameClass(ctx context.Context, class, plugin string) bool {
	a, b := normClass(class), normClass(plugin)
	if a == b || strings.HasSuffix(a, b) || strings.HasSuffix(b, a) {
		return true
	}
	ia, ib := -1, -1
	for i, p := range s.w.Plugins(ctx, false) {
		names := []string{p.Class}
		if p.Floe != nil {
			names = append(append(names, p.Floe.Name), p.Floe.Aliases...)
		}
		for _, n := range names {
			n = normClass(n)
			simple := n[strings.LastIndexByte(n, '.')+1:]
			if ia < 0 && (n == a || simple == a) {
				ia = i
			}
			if ib < 0 && (n == b || simple == b) {
				ib = i
			}
		}
	}
	return ia < 0 || ib < 0 || ia == ib
}

func normClass(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.TrimSuffix(s, "connector")
}

// normDef gives a definition Connect's shape (dependents is a list).
func normDef(d worker.ConfigDef) worker.ConfigDef {
	if d.Dependents == nil {
		d.Dependents = []string{}
	}
	return d
}

// normConfigInfo gives a validated key Connect's shape.
func normConfigInfo(c worker.ConfigInfo) worker.ConfigInfo {
	c.Definition = normDef(c.Definition)
	if c.Value.Errors == nil {
		c.Value.Errors = []string{}
	}
	if c.Value.RecommendedValues == nil {
		c.Value.RecommendedValues = []string{}
	}
	return c
}
