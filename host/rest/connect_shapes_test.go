package rest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// The types below mirror Kafka Connect 4.1's REST entity classes
// (org.apache.kafka.connect.runtime.rest.entities), field for field.
// Connect's RestClient reads answers with a plain Jackson ObjectMapper,
// which fails on a field the class does not have: decoding with
// DisallowUnknownFields is the same check. e2e's TestRESTConnectEntities
// runs the real classes against a real worker.
type (
	cServerInfo struct {
		Version        string `json:"version"`
		Commit         string `json:"commit"`
		KafkaClusterID string `json:"kafka_cluster_id"`
	}
	cState struct {
		State    string  `json:"state"`
		Trace    *string `json:"trace"`
		WorkerID string  `json:"worker_id"`
		Version  *string `json:"version"`
	}
	cTaskState struct {
		ID       int     `json:"id"`
		State    string  `json:"state"`
		Trace    *string `json:"trace"`
		WorkerID string  `json:"worker_id"`
		Version  *string `json:"version"`
	}
	cConnectorStateInfo struct {
		Name      string       `json:"name"`
		Connector cState       `json:"connector"`
		Tasks     []cTaskState `json:"tasks"`
		Type      string       `json:"type"`
	}
	cTaskID struct {
		Connector string `json:"connector"`
		Task      int    `json:"task"`
	}
	cConnectorInfo struct {
		Name   string            `json:"name"`
		Config map[string]string `json:"config"`
		Tasks  []cTaskID         `json:"tasks"`
		Type   string            `json:"type"`
	}
	cTaskInfo struct {
		ID     cTaskID           `json:"id"`
		Config map[string]string `json:"config"`
	}
	cPluginInfo struct {
		Class   string `json:"class"`
		Type    string `json:"type"`
		Version string `json:"version"`
	}
	cConfigKeyInfo struct {
		Name          string   `json:"name"`
		Type          string   `json:"type"`
		Required      bool     `json:"required"`
		DefaultValue  *string  `json:"default_value"`
		Importance    string   `json:"importance"`
		Documentation string   `json:"documentation"`
		Group         string   `json:"group"`
		Order         int      `json:"order"`
		Width         string   `json:"width"`
		DisplayName   string   `json:"display_name"`
		Dependents    []string `json:"dependents"`
	}
	cConfigValueInfo struct {
		Name              string   `json:"name"`
		Value             *string  `json:"value"`
		RecommendedValues []string `json:"recommended_values"`
		Errors            []string `json:"errors"`
		Visible           bool     `json:"visible"`
	}
	cConfigInfos struct {
		Name       string   `json:"name"`
		ErrorCount int      `json:"error_count"`
		Groups     []string `json:"groups"`
		Configs    []struct {
			Definition cConfigKeyInfo   `json:"definition"`
			Value      cConfigValueInfo `json:"value"`
		} `json:"configs"`
	}
	cErrorMessage struct {
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	cWorkerStatus struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	cExpansion struct {
		Status *cConnectorStateInfo `json:"status"`
		Info   *cConnectorInfo      `json:"info"`
	}
)

// connectPluginTypes are the values Connect writes for PluginType.
var connectPluginTypes = []string{"source", "sink", "converter", "header_converter", "transformation",
	"predicate", "configprovider", "rest_extension", "connector_client_config_override_policy"}

// strict decodes data into v as Connect's mapper does: unknown fields fail.
func strict(t *testing.T, what string, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("%s: Connect's entity class refuses the answer: %v\nanswer: %s", what, err, data)
	}
}

func TestAnswersDecodeAsConnectEntities(t *testing.T) {
	f := newFixture(t)
	f.create("orders", ordersConfig())
	get := func(method, path string, body any, code int) []byte {
		t.Helper()
		rec := f.do(method, path, body)
		if rec.Code != code {
			t.Fatalf("%s %s: status %d, want %d; body %s", method, path, rec.Code, code, rec.Body)
		}
		return rec.Body.Bytes()
	}

	var si cServerInfo
	strict(t, "GET /", get("GET", "/", nil, http.StatusOK), &si)
	strict(t, "GET /health", get("GET", "/health", nil, http.StatusOK), &cWorkerStatus{})
	strict(t, "GET /connectors/orders", get("GET", "/connectors/orders", nil, http.StatusOK), &cConnectorInfo{})
	strict(t, "GET /connectors/orders/status", get("GET", "/connectors/orders/status", nil, http.StatusOK), &cConnectorStateInfo{})
	strict(t, "GET /connectors?expand=status&expand=info", get("GET", "/connectors?expand=status&expand=info", nil, http.StatusOK), &map[string]cExpansion{})
	strict(t, "GET /connectors/orders/tasks", get("GET", "/connectors/orders/tasks", nil, http.StatusOK), &[]cTaskInfo{})
	strict(t, "GET /connectors/orders/tasks/0/status", get("GET", "/connectors/orders/tasks/0/status", nil, http.StatusOK), &cTaskState{})
	strict(t, "PUT /connectors/orders/config", get("PUT", "/connectors/orders/config", ordersConfig(), http.StatusOK), &cConnectorInfo{})
	strict(t, "POST restart?includeTasks=true", get("POST", "/connectors/orders/restart?includeTasks=true", nil, http.StatusAccepted), &cConnectorStateInfo{})
	strict(t, "GET /connector-plugins/iceberg/config", get("GET", "/connector-plugins/iceberg/config", nil, http.StatusOK), &[]cConfigKeyInfo{})
	strict(t, "PUT validate", get("PUT", "/connector-plugins/iceberg/config/validate", ordersConfig(), http.StatusOK), &cConfigInfos{})
	strict(t, "a 404", get("GET", "/connectors/nope", nil, http.StatusNotFound), &cErrorMessage{})

	for _, path := range []string{"/connector-plugins", "/connector-plugins?connectorsOnly=false"} {
		var plugins []cPluginInfo
		strict(t, "GET "+path, get("GET", path, nil, http.StatusOK), &plugins)
		for _, p := range plugins {
			if !slices.Contains(connectPluginTypes, p.Type) {
				t.Errorf("GET %s lists %s of type %q: Connect's PluginType has no such value", path, p.Class, p.Type)
			}
		}
	}
	if si.Version != ConnectVersion {
		t.Errorf("GET / version %q, want %s", si.Version, ConnectVersion)
	}
}
