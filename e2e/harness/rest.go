package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls a floe worker's REST API (Kafka Connect's paths). Methods
// return an *[APIError] for answers of 400 and more; its Doc is the
// decoded {"error_code","message"} body. Safe for concurrent use.
type Client struct {
	// URL is the listener, http://127.0.0.1:port, without a trailing slash.
	URL string
	// HTTP does the requests; NewClient gives it a 60 s timeout.
	HTTP *http.Client
	// Observe, when set, sees every answer (a test checks that no answer
	// holds a secret, say). It may be called concurrently.
	Observe func(method, path string, r *Response)
	// Header is added to every request (Authorization, say).
	Header http.Header
}

// NewClient returns a client of the API at baseURL.
func NewClient(baseURL string) *Client {
	return &Client{URL: strings.TrimRight(baseURL, "/"), HTTP: &http.Client{Timeout: 60 * time.Second}}
}

// Response is an answer as received.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Decode decodes the body into v (numbers as json.Number when v is an
// any or a map of any).
func (r *Response) Decode(v any) error {
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode %q: %w", truncate(string(r.Body), 300), err)
	}
	return nil
}

// Do sends a request; body, when not nil, is sent as JSON (a []byte or
// json.RawMessage as is). Any status is returned without error; only
// transport failures are errors.
func (c *Client) Do(ctx context.Context, method, path string, body any) (*Response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case json.RawMessage:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode body: %w", method, path, err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, rd)
	if err != nil {
		return nil, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	for k, vs := range c.Header {
		req.Header[k] = vs
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
	if c.Observe != nil {
		c.Observe(method, path, out)
	}
	return out, nil
}

// call sends a request, checks the status is one of want (any 2xx when
// want is empty) and decodes the body into out when out is not nil.
func (c *Client) call(ctx context.Context, method, path string, body, out any, want ...int) (*Response, error) {
	r, err := c.Do(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	if r.Status >= 400 {
		return r, &APIError{Method: method, Path: path, Status: r.Status, Body: r.Body, Doc: decodeErrorBody(r.Status, r.Body)}
	}
	ok := len(want) == 0 && r.Status/100 == 2
	for _, w := range want {
		ok = ok || r.Status == w
	}
	if !ok {
		return r, fmt.Errorf("%s %s: HTTP %d, want %v: %s", method, path, r.Status, want, truncate(string(r.Body), 500))
	}
	if out != nil {
		if err := r.Decode(out); err != nil {
			return r, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return r, nil
}

func esc(s string) string { return url.PathEscape(s) }

// Health is GET /health's status: nil when it answers 200.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.call(ctx, http.MethodGet, "/health", nil, nil, http.StatusOK)
	return err
}

// Connectors is GET /connectors.
func (c *Client) Connectors(ctx context.Context) ([]string, error) {
	var out []string
	_, err := c.call(ctx, http.MethodGet, "/connectors", nil, &out, http.StatusOK)
	return out, err
}

// ConnectorExpansion is one entry of GET /connectors?expand=….
type ConnectorExpansion struct {
	Status *ConnectorStatus `json:"status"`
	Info   *ConnectorInfo   `json:"info"`
}

// ConnectorsExpanded is GET /connectors?expand=status&expand=info.
func (c *Client) ConnectorsExpanded(ctx context.Context, expand ...string) (map[string]ConnectorExpansion, error) {
	q := url.Values{"expand": expand}
	var out map[string]ConnectorExpansion
	_, err := c.call(ctx, http.MethodGet, "/connectors?"+q.Encode(), nil, &out, http.StatusOK)
	return out, err
}

// CreateConnector is POST /connectors: 201 with the connector's info.
func (c *Client) CreateConnector(ctx context.Context, conn Connector) (ConnectorInfo, error) {
	var out ConnectorInfo
	_, err := c.call(ctx, http.MethodPost, "/connectors", conn, &out, http.StatusCreated)
	return out, err
}

// Connector is GET /connectors/{c}.
func (c *Client) Connector(ctx context.Context, name string) (ConnectorInfo, error) {
	var out ConnectorInfo
	_, err := c.call(ctx, http.MethodGet, "/connectors/"+esc(name), nil, &out, http.StatusOK)
	return out, err
}

// Config is GET /connectors/{c}/config.
func (c *Client) Config(ctx context.Context, name string) (map[string]string, error) {
	var out map[string]string
	_, err := c.call(ctx, http.MethodGet, "/connectors/"+esc(name)+"/config", nil, &out, http.StatusOK)
	return out, err
}

// PutConfig is PUT /connectors/{c}/config; created reports a 201 (the
// connector was created) rather than a 200.
func (c *Client) PutConfig(ctx context.Context, name string, config map[string]string) (info ConnectorInfo, created bool, err error) {
	r, err := c.call(ctx, http.MethodPut, "/connectors/"+esc(name)+"/config", config, &info, http.StatusOK, http.StatusCreated)
	return info, err == nil && r.Status == http.StatusCreated, err
}

// PatchConfig is PATCH /connectors/{c}/config; a nil value removes a key.
func (c *Client) PatchConfig(ctx context.Context, name string, patch map[string]*string) (ConnectorInfo, error) {
	var out ConnectorInfo
	_, err := c.call(ctx, http.MethodPatch, "/connectors/"+esc(name)+"/config", patch, &out, http.StatusOK)
	return out, err
}

// DeleteConnector is DELETE /connectors/{c}: 204.
func (c *Client) DeleteConnector(ctx context.Context, name string) error {
	_, err := c.call(ctx, http.MethodDelete, "/connectors/"+esc(name), nil, nil, http.StatusNoContent)
	return err
}

// Status is GET /connectors/{c}/status?floe=true: Connect's status with
// floe's progress.
func (c *Client) Status(ctx context.Context, name string) (ConnectorStatus, error) {
	var out ConnectorStatus
	_, err := c.call(ctx, http.MethodGet, "/connectors/"+esc(name)+"/status?floe=true", nil, &out, http.StatusOK)
	return out, err
}

// Restart is POST /connectors/{c}/restart?includeTasks=…&onlyFailed=….
// It returns the HTTP status (Connect: 204 without the parameters, 202
// with a status body otherwise) and the body's status when there is one.
func (c *Client) Restart(ctx context.Context, name string, includeTasks, onlyFailed bool) (int, *ConnectorStatus, error) {
	path := "/connectors/" + esc(name) + "/restart"
	var q []string
	if includeTasks {
		q = append(q, "includeTasks=true")
	}
	if onlyFailed {
		q = append(q, "onlyFailed=true")
	}
	if len(q) > 0 {
		path += "?" + strings.Join(q, "&")
	}
	r, err := c.call(ctx, http.MethodPost, path, nil, nil)
	if err != nil {
		return statusOf(r), nil, err
	}
	if len(bytes.TrimSpace(r.Body)) == 0 {
		return r.Status, nil, nil
	}
	var st ConnectorStatus
	if err := r.Decode(&st); err != nil {
		return r.Status, nil, fmt.Errorf("POST %s: %w", path, err)
	}
	return r.Status, &st, nil
}

// RestartTask is POST /connectors/{c}/tasks/{t}/restart: 204.
func (c *Client) RestartTask(ctx context.Context, name string, task int) error {
	_, err := c.call(ctx, http.MethodPost, fmt.Sprintf("/connectors/%s/tasks/%d/restart", esc(name), task), nil, nil, http.StatusNoContent)
	return err
}

// Pause and Resume are PUT /connectors/{c}/pause|resume: 202.
func (c *Client) Pause(ctx context.Context, name string) error  { return c.put202(ctx, name, "pause") }
func (c *Client) Resume(ctx context.Context, name string) error { return c.put202(ctx, name, "resume") }

// StopConnector is PUT /connectors/{c}/stop: 204 (named apart from [Floe.Stop],
// which stops the process).
func (c *Client) StopConnector(ctx context.Context, name string) error {
	_, err := c.call(ctx, http.MethodPut, "/connectors/"+esc(name)+"/stop", nil, nil, http.StatusNoContent)
	return err
}

func (c *Client) put202(ctx context.Context, name, op string) error {
	_, err := c.call(ctx, http.MethodPut, "/connectors/"+esc(name)+"/"+op, nil, nil, http.StatusAccepted)
	return err
}

// Tasks is GET /connectors/{c}/tasks.
func (c *Client) Tasks(ctx context.Context, name string) ([]TaskInfo, error) {
	var out []TaskInfo
	_, err := c.call(ctx, http.MethodGet, "/connectors/"+esc(name)+"/tasks", nil, &out, http.StatusOK)
	return out, err
}

// TaskStatus is GET /connectors/{c}/tasks/{t}/status.
func (c *Client) TaskStatus(ctx context.Context, name string, task int) (TaskState, error) {
	var out TaskState
	_, err := c.call(ctx, http.MethodGet, fmt.Sprintf("/connectors/%s/tasks/%d/status", esc(name), task), nil, &out, http.StatusOK)
	return out, err
}

// Offsets is GET /connectors/{c}/offsets.
func (c *Client) Offsets(ctx context.Context, name string) (Offsets, error) {
	var out Offsets
	_, err := c.call(ctx, http.MethodGet, "/connectors/"+esc(name)+"/offsets", nil, &out, http.StatusOK)
	return out, err
}

// AlterOffsets is PATCH /connectors/{c}/offsets (the connector STOPPED).
func (c *Client) AlterOffsets(ctx context.Context, name string, offs Offsets) error {
	_, err := c.call(ctx, http.MethodPatch, "/connectors/"+esc(name)+"/offsets", offs, nil, http.StatusOK)
	return err
}

// ResetOffsets is DELETE /connectors/{c}/offsets (the connector STOPPED).
func (c *Client) ResetOffsets(ctx context.Context, name string) error {
	_, err := c.call(ctx, http.MethodDelete, "/connectors/"+esc(name)+"/offsets", nil, nil, http.StatusOK)
	return err
}

// Topics is GET /connectors/{c}/topics.
func (c *Client) Topics(ctx context.Context, name string) ([]string, error) {
	var out map[string]struct {
		Topics []string `json:"topics"`
	}
	if _, err := c.call(ctx, http.MethodGet, "/connectors/"+esc(name)+"/topics", nil, &out, http.StatusOK); err != nil {
		return nil, err
	}
	return out[name].Topics, nil
}

// Plugins is GET /connector-plugins; with connectorsOnly false it is
// GET /connector-plugins?connectorsOnly=false&floe=true, every component
// with floe's partitioners and maintenance plugins.
func (c *Client) Plugins(ctx context.Context, connectorsOnly bool) ([]PluginInfo, error) {
	path := "/connector-plugins"
	if !connectorsOnly {
		path += "?connectorsOnly=false&floe=true"
	}
	var out []PluginInfo
	_, err := c.call(ctx, http.MethodGet, path, nil, &out, http.StatusOK)
	return out, err
}

// PluginConfig is GET /connector-plugins/{p}/config.
func (c *Client) PluginConfig(ctx context.Context, plugin string) ([]ConfigDef, error) {
	var out []ConfigDef
	_, err := c.call(ctx, http.MethodGet, "/connector-plugins/"+esc(plugin)+"/config", nil, &out, http.StatusOK)
	return out, err
}

// Validate is PUT /connector-plugins/{p}/config/validate. A config with
// errors still answers 200; its ErrorCount says so.
func (c *Client) Validate(ctx context.Context, plugin string, config map[string]string) (ConfigInfos, error) {
	var out ConfigInfos
	_, err := c.call(ctx, http.MethodPut, "/connector-plugins/"+esc(plugin)+"/config/validate", config, &out, http.StatusOK)
	return out, err
}

// Tables is floe's GET /connectors/{c}/tables (table health and
// maintenance history), decoded loosely: its shape is floe's own.
func (c *Client) Tables(ctx context.Context, name string) (map[string]any, error) {
	var out map[string]any
	_, err := c.call(ctx, http.MethodGet, "/connectors/"+esc(name)+"/tables", nil, &out, http.StatusOK)
	return out, err
}

// Metrics is GET /metrics, parsed: each sample's name with its labels
// ({name}{k="v",…} as Prometheus prints it) to its value.
func (c *Client) Metrics(ctx context.Context) (Metrics, error) {
	r, err := c.call(ctx, http.MethodGet, "/metrics", nil, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return ParseMetrics(r.Body), nil
}

// Metrics maps a sample (name plus label set, as printed) to its value.
type Metrics map[string]float64

// ParseMetrics reads Prometheus' text format; comments are skipped.
func ParseMetrics(text []byte) Metrics {
	m := Metrics{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m
}

// Sum adds the samples of metric name whose labels include every
// label="value" pair of labels; found reports whether any sample matched.
func (m Metrics) Sum(name string, labels ...string) (sum float64, found bool) {
	for k, v := range m {
		base, lbl, _ := strings.Cut(k, "{")
		if base != name {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains("{"+lbl, l)
		}
		if ok {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

func statusOf(r *Response) int {
	if r == nil {
		return 0
	}
	return r.Status
}

// IsStatus reports whether err is an *APIError with that HTTP status.
func IsStatus(err error, status int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == status
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
