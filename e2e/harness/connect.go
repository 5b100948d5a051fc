package harness

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The JSON documents of Kafka Connect's REST API, as the harness reads
// them. They are written from Connect's documentation, not copied from
// floe's code, so a test decoding floe's answers into them checks floe
// against Connect.

// Connector is a connector as Connect's POST /connectors body and as a
// connector file: {"name": …, "config": {…}}.
type Connector struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	// InitialState is RUNNING, PAUSED or STOPPED; empty leaves it out.
	InitialState string `json:"initial_state,omitempty"`
}

// ConnectorInfo is GET /connectors/{c}.
type ConnectorInfo struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []TaskID          `json:"tasks"`
	Type   string            `json:"type"`
}

// TaskID names a task.
type TaskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

// TaskInfo is one entry of GET /connectors/{c}/tasks.
type TaskInfo struct {
	ID     TaskID            `json:"id"`
	Config map[string]string `json:"config"`
}

// ConnectorStatus is GET /connectors/{c}/status. Floe is floe's own
// extension (records, commits, dead letters); Connect has no such field.
type ConnectorStatus struct {
	Name      string `json:"name"`
	Connector struct {
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
		Trace    string `json:"trace,omitempty"`
	} `json:"connector"`
	Tasks []TaskState `json:"tasks"`
	Type  string      `json:"type"`
	Floe  *Progress   `json:"floe,omitempty"`
}

// TaskState is one task's status.
type TaskState struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// Progress is the "floe" member of a connector status.
type Progress struct {
	RecordsIn          int64     `json:"records_in"`
	RecordsOut         int64     `json:"records_out"`
	DeadLetters        int64     `json:"dead_letters"`
	Checkpoint         uint64    `json:"checkpoint"`
	Commits            int64     `json:"commits"`
	FilesWritten       int64     `json:"files_written"`
	PendingCheckpoints int       `json:"pending_checkpoints"`
	WriterLoad         []float64 `json:"writer_load,omitempty"`
	PluginRestarts     int64     `json:"plugin_restarts"`
	// Waiting lists the services the sink is waiting for.
	Waiting []ServiceWait `json:"waiting,omitempty"`
	// Restarts counts the restart policy's restarts of failed instances.
	Restarts int64 `json:"restarts"`
	// Healing lists the failures the restart policy knows of.
	Healing    []Healing `json:"healing,omitempty"`
	EndOfInput bool      `json:"end_of_input"`
	// Maintenance is set when the connector has a maintenance plugin.
	Maintenance *MaintenanceSummary `json:"maintenance,omitempty"`
}

// Healing is the restart policy's view of one failed instance.
type Healing struct {
	Instance  string `json:"instance"` // "connector" or "task N"
	Attempts  int    `json:"attempts"`
	Permanent bool   `json:"permanent"`
	GaveUp    bool   `json:"gave_up"`
}

// ServiceWait is one entry of floe's progress "waiting": a service the
// sink is waiting for.
type ServiceWait struct {
	Service   string    `json:"service"`
	Since     time.Time `json:"since"`
	Attempts  int64     `json:"attempts"`
	LastError string    `json:"last_error"`
}

// MaintenanceSummary is the "maintenance" member of floe's progress.
type MaintenanceSummary struct {
	Runs       int64 `json:"runs"`
	FailedRuns int64 `json:"failed_runs"`
	LastRuns   []struct {
		Table       string `json:"table"`
		Task        string `json:"task"`
		FilesBefore int64  `json:"files_before"`
		FilesAfter  int64  `json:"files_after"`
		Error       string `json:"error"`
	} `json:"last_runs"`
	Error string `json:"error"`
}

// Failed returns the traces of the connector and its tasks that are
// FAILED, "" when none is.
func (s ConnectorStatus) Failed() string {
	var b strings.Builder
	if s.Connector.State == "FAILED" {
		fmt.Fprintf(&b, "connector %s FAILED: %s\n", s.Name, s.Connector.Trace)
	}
	for _, t := range s.Tasks {
		if t.State == "FAILED" {
			fmt.Fprintf(&b, "task %d FAILED: %s\n", t.ID, t.Trace)
		}
	}
	return b.String()
}

// Running reports whether the connector and all its tasks (at least one)
// are RUNNING.
func (s ConnectorStatus) Running() bool {
	if s.Connector.State != "RUNNING" || len(s.Tasks) == 0 {
		return false
	}
	for _, t := range s.Tasks {
		if t.State != "RUNNING" {
			return false
		}
	}
	return true
}

// Summary is a one-line description for logs.
func (s ConnectorStatus) Summary() string {
	states := make([]string, len(s.Tasks))
	for i, t := range s.Tasks {
		states[i] = t.State
	}
	line := fmt.Sprintf("%s: connector %s, tasks [%s]", s.Name, s.Connector.State, strings.Join(states, " "))
	if p := s.Floe; p != nil {
		line += fmt.Sprintf(", records in %d out %d, dead letters %d, commits %d, checkpoint %d, plugin restarts %d",
			p.RecordsIn, p.RecordsOut, p.DeadLetters, p.Commits, p.Checkpoint, p.PluginRestarts)
	}
	return line
}

// Offsets is GET /connectors/{c}/offsets (KIP-875).
type Offsets struct {
	Offsets []Offset `json:"offsets"`
}

// Offset is one entry of an offsets document. A sink connector's
// partition holds kafka_topic and kafka_partition, its offset
// kafka_offset.
type Offset struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
}

// Kafka reads a sink connector's entry: topic, partition and offset; ok
// is false for an entry that is not one.
func (o Offset) Kafka() (topic string, partition int32, offset int64, ok bool) {
	topic, _ = o.Partition["kafka_topic"].(string)
	p, err1 := strconv.ParseInt(fmt.Sprint(o.Partition["kafka_partition"]), 10, 32)
	offset, err2 := strconv.ParseInt(fmt.Sprint(o.Offset["kafka_offset"]), 10, 64)
	if topic == "" || err1 != nil || err2 != nil {
		return "", 0, 0, false
	}
	return topic, int32(p), offset, true
}

// PluginInfo is one entry of GET /connector-plugins. Class is the Connect
// class name where the component has one; Floe (floe=true only) holds
// floe's name and aliases.
type PluginInfo struct {
	Class   string `json:"class"`
	Type    string `json:"type"`
	Version string `json:"version"`
	Floe    *struct {
		Name    string   `json:"name"`
		Aliases []string `json:"aliases"`
	} `json:"floe,omitempty"`
}

// ConfigDef is one key of GET /connector-plugins/{p}/config and of a
// ConfigInfo's definition.
type ConfigDef struct {
	Name          string  `json:"name"`
	Type          string  `json:"type"`
	Required      bool    `json:"required"`
	DefaultValue  *string `json:"default_value"`
	Importance    string  `json:"importance"`
	Documentation string  `json:"documentation"`
}

// ConfigInfos is PUT /connector-plugins/{p}/config/validate's answer.
type ConfigInfos struct {
	Name       string       `json:"name"`
	ErrorCount int          `json:"error_count"`
	Groups     []string     `json:"groups"`
	Configs    []ConfigInfo `json:"configs"`
}

// ConfigInfo is one key of a validation answer.
type ConfigInfo struct {
	Definition ConfigDef `json:"definition"`
	Value      struct {
		Name              string   `json:"name"`
		Value             *string  `json:"value"`
		RecommendedValues []string `json:"recommended_values"`
		Errors            []string `json:"errors"`
		Visible           bool     `json:"visible"`
	} `json:"value"`
}

// Errors returns each key with errors and its messages.
func (c ConfigInfos) Errors() map[string][]string {
	out := map[string][]string{}
	for _, ci := range c.Configs {
		if len(ci.Value.Errors) > 0 {
			out[ci.Value.Name] = append(out[ci.Value.Name], ci.Value.Errors...)
		}
	}
	return out
}

// Value returns key's value in the answer and whether the key is there.
func (c ConfigInfos) Value(key string) (*string, bool) {
	for _, ci := range c.Configs {
		if ci.Value.Name == key {
			return ci.Value.Value, true
		}
	}
	return nil, false
}

// ErrorBody is Connect's error document, {"error_code": N, "message": "…"}.
type ErrorBody struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

// APIError is an answer with a status of 400 or more.
type APIError struct {
	Method, Path string
	// Status is the HTTP status.
	Status int
	// Body is the answer's body as sent.
	Body []byte
	// Doc is the body decoded as Connect's error document; nil when it
	// is not one (which a test should treat as a failure of its own).
	Doc *ErrorBody
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.Status, strings.TrimSpace(string(e.Body)))
}

// decodeErrorBody decodes a Connect error body strictly: both members,
// nothing else, error_code equal to the HTTP status.
func decodeErrorBody(status int, body []byte) *ErrorBody {
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil || len(raw) != 2 {
		return nil
	}
	var doc ErrorBody
	if json.Unmarshal(raw["error_code"], &doc.ErrorCode) != nil || json.Unmarshal(raw["message"], &doc.Message) != nil {
		return nil
	}
	if doc.ErrorCode != status {
		return nil
	}
	return &doc
}
