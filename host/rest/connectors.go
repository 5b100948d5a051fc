package rest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/floehq/floe/host/worker"
)

// ConnectorExpansion is one entry of GET /connectors?expand=….
type ConnectorExpansion struct {
	Status *worker.ConnectorStatus `json:"status,omitempty"`
	Info   *worker.ConnectorInfo   `json:"info,omitempty"`
}

// listConnectors answers GET /connectors: the names, or with expand=status
// and/or expand=info (repeated or comma-separated) a map from name to the
// expansions. Unknown expansions are ignored, as in Connect; a connector
// deleted while the answer is built is left out.
func (s *Server) listConnectors(w http.ResponseWriter, r *http.Request) {
	names := s.w.Connectors(r.Context())
	if names == nil {
		names = []string{}
	}
	expand, ok := r.URL.Query()["expand"]
	if !ok {
		writeJSON(w, http.StatusOK, names)
		return
	}
	withFloe, err := floeParam(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var status, info bool
	for _, e := range expand {
		for _, part := range strings.Split(e, ",") {
			switch strings.TrimSpace(part) {
			case "status":
				status = true
			case "info":
				info = true
			}
		}
	}
	out := make(map[string]ConnectorExpansion, len(names))
	for _, name := range names {
		var exp ConnectorExpansion
		if status {
			st, err := s.w.ConnectorStatus(r.Context(), name)
			if errors.Is(err, worker.ErrNotFound) {
				continue
			} else if err != nil {
				writeError(w, err)
				return
			}
			st = normStatus(st, withFloe)
			exp.Status = &st
		}
		if info {
			ci, err := s.w.Connector(r.Context(), name)
			if errors.Is(err, worker.ErrNotFound) {
				continue
			} else if err != nil {
				writeError(w, err)
				return
			}
			ci = s.normInfo(r.Context(), ci)
			exp.Info = &ci
		}
		out[name] = exp
	}
	writeJSON(w, http.StatusOK, out)
}

// createRequest is the body of POST /connectors.
type createRequest struct {
	Name         *string                    `json:"name"`
	Config       map[string]json.RawMessage `json:"config"`
	InitialState string                     `json:"initial_state"`
}

// createConnector answers POST /connectors: 201 with the connector's info
// and a Location header; 409 if it exists; 400 if the body or the config
// is invalid (the message lists each key's errors).
func (s *Server) createConnector(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	name := ""
	if req.Name != nil {
		name = strings.TrimSpace(*req.Name)
	}
	if err := checkName(name); err != nil {
		writeError(w, err)
		return
	}
	if req.Config == nil {
		writeError(w, errorf(http.StatusBadRequest, `connector %s has no "config": send {"name": %q, "config": {"connector.class": …}}`, name, name))
		return
	}
	config, err := stringConfig(req.Config)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := putName(name, config); err != nil {
		writeError(w, err)
		return
	}
	state, err := initialState(req.InitialState)
	if err != nil {
		writeError(w, err)
		return
	}
	info, err := s.w.CreateConnector(r.Context(), name, config, state)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Location", location(r, name))
	writeJSON(w, http.StatusCreated, s.normInfo(r.Context(), info))
}

// initialState reads initial_state: empty means RUNNING.
func initialState(s string) (worker.State, error) {
	switch st := worker.State(strings.ToUpper(strings.TrimSpace(s))); st {
	case "":
		return worker.StateRunning, nil
	case worker.StateRunning, worker.StatePaused, worker.StateStopped:
		return st, nil
	}
	return "", errorf(http.StatusBadRequest, "initial_state %q is not one of RUNNING, PAUSED, STOPPED", s)
}

// checkName refuses names Connect refuses: empty, or with control
// characters.
func checkName(name string) error {
	if name == "" {
		return errorf(http.StatusBadRequest, `connector name is missing or empty: give the request a "name"`)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return errorf(http.StatusBadRequest, "connector name %q contains control characters: use printable characters only", name)
	}
	return nil
}

// putName checks that config's name, if any, is name, and sets it.
func putName(name string, config map[string]string) error {
	if got, ok := config["name"]; ok && got != name {
		return errorf(http.StatusBadRequest, "Connector name configuration (%s) doesn't match connector name in the URL (%s)", got, name)
	}
	config["name"] = name
	return nil
}

// location is the URL of a connector, for the Location header.
func location(r *http.Request, name string) string {
	path := "/connectors/" + url.PathEscape(name)
	if r.Host == "" {
		return path
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + path
}

// getConnector answers GET /connectors/{c}.
func (s *Server) getConnector(w http.ResponseWriter, r *http.Request) {
	info, err := s.w.Connector(r.Context(), r.PathValue("c"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.normInfo(r.Context(), info))
}

// deleteConnector answers DELETE /connectors/{c}: 204.
func (s *Server) deleteConnector(w http.ResponseWriter, r *http.Request) {
	if err := s.w.DeleteConnector(r.Context(), r.PathValue("c")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// getConfig answers GET /connectors/{c}/config, secrets hidden.
func (s *Server) getConfig(w http.ResponseWriter, r *http.Request) {
	info, err := s.w.Connector(r.Context(), r.PathValue("c"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, maskConfig(r.Context(), s.w, info.Config))
}

// putConfig answers PUT /connectors/{c}/config: 201 with a Location when
// it created the connector, 200 when it replaced the config.
func (s *Server) putConfig(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("c")
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
	if err := putName(name, config); err != nil {
		writeError(w, err)
		return
	}
	if old, err := s.w.Connector(r.Context(), name); err == nil {
		unmask(r.Context(), s.w, config, old.Config)
	}
	info, created, err := s.w.PutConnectorConfig(r.Context(), name, config)
	if err != nil {
		writeError(w, err)
		return
	}
	code := http.StatusOK
	if created {
		w.Header().Set("Location", location(r, name))
		code = http.StatusCreated
	}
	writeJSON(w, code, s.normInfo(r.Context(), info))
}

// patchConfig answers PATCH /connectors/{c}/config: the body's keys are
// merged into the config, a null removes a key; 200 with the new info.
func (s *Server) patchConfig(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("c")
	var raw map[string]json.RawMessage
	if err := decodeBody(r, &raw); err != nil {
		writeError(w, err)
		return
	}
	patch, err := configValues(raw, true)
	if err != nil {
		writeError(w, err)
		return
	}
	if v, ok := patch["name"]; ok {
		if v == nil {
			writeError(w, errorf(http.StatusBadRequest, "the name of connector %s cannot be removed: leave \"name\" out of the patch", name))
			return
		}
		if *v != name {
			writeError(w, errorf(http.StatusBadRequest, "Connector name configuration (%s) doesn't match connector name in the URL (%s)", *v, name))
			return
		}
	}
	if old, err := s.w.Connector(r.Context(), name); err == nil {
		unmaskPatch(r.Context(), s.w, patch, old.Config)
	}
	info, err := s.w.PatchConnectorConfig(r.Context(), name, patch)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.normInfo(r.Context(), info))
}

// getStatus answers GET /connectors/{c}/status: Connect's document, and
// floe's progress too with floe=true.
func (s *Server) getStatus(w http.ResponseWriter, r *http.Request) {
	withFloe, err := floeParam(r)
	if err != nil {
		writeError(w, err)
		return
	}
	st, err := s.w.ConnectorStatus(r.Context(), r.PathValue("c"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, normStatus(st, withFloe))
}

// floeParam reads floe=true, the opt-in to floe's extra fields in answers
// whose Connect entity class refuses unknown fields (see the package doc).
func floeParam(r *http.Request) (bool, error) { return boolParam(r, "floe", false) }

// restartConnector answers POST /connectors/{c}/restart. floe's
// "connector instance" is the connector's runtime, which holds its tasks
// (see the package doc). Without includeTasks and onlyFailed it restarts
// that runtime and answers 204 once done, as Connect did before KIP-745;
// otherwise it answers 202 at once with the status, the instances being
// restarted shown RESTARTING, and the restart goes on in the background.
func (s *Server) restartConnector(w http.ResponseWriter, r *http.Request) {
	includeTasks, err := boolParam(r, "includeTasks", false)
	if err != nil {
		writeError(w, err)
		return
	}
	onlyFailed, err := boolParam(r, "onlyFailed", false)
	if err != nil {
		writeError(w, err)
		return
	}
	name := r.PathValue("c")
	var before worker.ConnectorStatus
	if includeTasks {
		if before, err = s.w.ConnectorStatus(r.Context(), name); err != nil {
			writeError(w, err)
			return
		}
	}
	st, err := s.w.RestartConnector(r.Context(), name, includeTasks, onlyFailed)
	if err != nil {
		writeError(w, err)
		return
	}
	if !includeTasks && !onlyFailed {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if includeTasks {
		if err := s.clusterTaskRestarts(r, name, before, onlyFailed); err != nil {
			writeError(w, err)
			return
		}
	}
	writeJSON(w, http.StatusAccepted, normStatus(st, false))
}

// boolParam reads a true/false query parameter.
func boolParam(r *http.Request, name string, def bool) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errorf(http.StatusBadRequest, "query parameter %s=%q is not true or false", name, v)
	}
	return b, nil
}

// pause and resume answer PUT /connectors/{c}/pause|resume with 202, stop
// with 204, as Connect does (its stop waits for the new target state to be
// written; floe's Stop returns once it is stored).
func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	s.setState(w, r, s.w.Pause, http.StatusAccepted)
}
func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	s.setState(w, r, s.w.Resume, http.StatusAccepted)
}
func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	s.setState(w, r, s.w.Stop, http.StatusNoContent)
}

func (s *Server) setState(w http.ResponseWriter, r *http.Request, op func(context.Context, string) error, code int) {
	if err := op(r.Context(), r.PathValue("c")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(code)
}

// getTasks answers GET /connectors/{c}/tasks, secrets hidden.
func (s *Server) getTasks(w http.ResponseWriter, r *http.Request) {
	tasks, err := s.w.Tasks(r.Context(), r.PathValue("c"))
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]worker.TaskInfo, len(tasks))
	for i, t := range tasks {
		t.Config = maskConfig(r.Context(), s.w, t.Config)
		out[i] = t
	}
	writeJSON(w, http.StatusOK, out)
}

// taskID reads {t}; a task id that is not a number is an unknown task.
func taskID(r *http.Request) (int, error) {
	t, err := strconv.Atoi(r.PathValue("t"))
	if err != nil || t < 0 {
		return 0, errorf(http.StatusNotFound, "task %q of connector %s not found: task ids are numbers from 0 (see GET /connectors/%s/tasks)", r.PathValue("t"), r.PathValue("c"), r.PathValue("c"))
	}
	return t, nil
}

// getTaskStatus answers GET /connectors/{c}/tasks/{t}/status.
func (s *Server) getTaskStatus(w http.ResponseWriter, r *http.Request) {
	t, err := taskID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	st, err := s.w.TaskStatus(r.Context(), r.PathValue("c"), t)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// restartTask answers POST /connectors/{c}/tasks/{t}/restart: 204.
func (s *Server) restartTask(w http.ResponseWriter, r *http.Request) {
	t, err := taskID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.w.RestartTask(r.Context(), r.PathValue("c"), t); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// getTables answers floe's GET /connectors/{c}/tables: table health and
// maintenance history.
func (s *Server) getTables(w http.ResponseWriter, r *http.Request) {
	rep, err := s.w.Tables(r.Context(), r.PathValue("c"))
	if err != nil {
		writeError(w, err)
		return
	}
	if rep.Tables == nil {
		rep.Tables = []worker.TableHealth{}
	}
	if rep.Runs == nil {
		rep.Runs = []worker.MaintenanceRun{}
	}
	writeJSON(w, http.StatusOK, rep)
}

// normInfo gives an info Connect's shape (tasks is a list, never null)
// with secrets hidden.
func (s *Server) normInfo(ctx context.Context, ci worker.ConnectorInfo) worker.ConnectorInfo {
	if ci.Tasks == nil {
		ci.Tasks = []worker.TaskID{}
	}
	ci.Config = maskConfig(ctx, s.w, ci.Config)
	return ci
}

// normStatus gives a status Connect's shape (tasks is a list) and leaves
// floe's progress out unless withFloe: Connect's ConnectorStateInfo
// refuses unknown fields.
func normStatus(st worker.ConnectorStatus, withFloe bool) worker.ConnectorStatus {
	if st.Tasks == nil {
		st.Tasks = []worker.TaskState{}
	}
	if !withFloe {
		st.Floe = nil
	}
	return st
}
