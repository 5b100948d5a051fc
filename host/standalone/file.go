package standalone

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/floehq/floe/host/worker"
)

// Connector is what one connector file declares.
type Connector struct {
	Name   string
	Config map[string]string
	// InitialState is the file's initial_state: RUNNING (when empty),
	// PAUSED or STOPPED. It applies when the file creates the connector.
	InitialState worker.State
}

// LoadConnector reads and parses one connector file. Errors name the file
// and, for bad JSON, the line and column.
func LoadConnector(path string) (Connector, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Connector{}, fmt.Errorf("connector file %s: %w", path, err)
	}
	return ParseConnector(path, data)
}

// ParseConnector parses a connector file's content; file names it in
// errors and gives the connector its name when the JSON has none.
//
// Two shapes are accepted:
//   - Kafka Connect's: {"name": "orders", "config": {"connector.class": …},
//     "initial_state": "PAUSED"} (initial_state optional);
//   - a flat object of the config's keys: {"name": "orders",
//     "connector.class": …}, like a Connect .properties file in JSON
//     (an "initial_state" key there is the initial state, not config).
//
// Config values are strings; numbers and booleans are taken as their text.
// A "name" inside the config must match the top-level name.
func ParseConnector(file string, data []byte) (Connector, error) {
	if err := checkSyntax(data); err != nil {
		return Connector{}, fmt.Errorf("connector file %s: %w", file, err)
	}
	members, err := readObject(data, 0, data)
	if err != nil {
		return Connector{}, fmt.Errorf("connector file %s: %w", file, err)
	}
	var c Connector
	cfgMember, connectShape := find(members, "config")
	if connectShape && firstNonSpace(cfgMember.raw) == '{' {
		for _, m := range members {
			switch m.key {
			case "name":
				if c.Name, err = m.str(data); err != nil {
					return Connector{}, fmt.Errorf("connector file %s: %w", file, err)
				}
			case "config":
			case "initial_state":
				s, err := m.str(data)
				if err != nil {
					return Connector{}, fmt.Errorf("connector file %s: %w", file, err)
				}
				if c.InitialState, err = parseState(s); err != nil {
					return Connector{}, fmt.Errorf("connector file %s: %s: %w", file, m.pos(data), err)
				}
			default:
				return Connector{}, fmt.Errorf("connector file %s: %s: unknown key %q next to \"config\": a Connect-shaped file holds only \"name\", \"config\" and \"initial_state\" (move %q into \"config\")",
					file, m.pos(data), m.key, m.key)
			}
		}
		inner, err := readObject(data, cfgMember.off, cfgMember.raw)
		if err != nil {
			return Connector{}, fmt.Errorf("connector file %s: \"config\": %w", file, err)
		}
		c.Config = map[string]string{}
		for _, m := range inner {
			if c.Config[m.key], err = m.str(data); err != nil {
				return Connector{}, fmt.Errorf("connector file %s: %w", file, err)
			}
		}
	} else {
		c.Config = map[string]string{}
		for _, m := range members {
			v, err := m.str(data)
			if err != nil {
				return Connector{}, fmt.Errorf("connector file %s: %w (a flat connector file maps each config key to a string; or use Connect's {\"name\": …, \"config\": {…}})", file, err)
			}
			if m.key == "initial_state" {
				if c.InitialState, err = parseState(v); err != nil {
					return Connector{}, fmt.Errorf("connector file %s: %s: %w", file, m.pos(data), err)
				}
				continue
			}
			c.Config[m.key] = v
		}
		c.Name = c.Config["name"]
	}
	c.Name = strings.TrimSpace(c.Name)
	if c.Name == "" {
		c.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if n, ok := c.Config["name"]; ok && n != c.Name {
		return Connector{}, fmt.Errorf("connector file %s: the config's \"name\" (%s) differs from the connector's name (%s): make them the same or drop the config's", file, n, c.Name)
	}
	c.Config["name"] = c.Name
	if c.InitialState == "" {
		c.InitialState = worker.StateRunning
	}
	return c, nil
}

// checkSyntax reports the first JSON syntax error with its line and
// column.
func checkSyntax(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("the file is empty: write a connector as {\"name\": …, \"config\": {…}}")
	}
	var raw json.RawMessage
	err := json.Unmarshal(data, &raw)
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		return nil
	}
	if int(syn.Offset) >= len(data) && strings.Contains(syn.Error(), "unexpected end") {
		line, col := LineCol(data, len(data))
		return fmt.Errorf("line %d, column %d: the JSON ends early (a missing closing bracket or quote?)", line, col)
	}
	line, col := LineCol(data, int(syn.Offset)-1)
	return fmt.Errorf("line %d, column %d: %w (check the JSON there)", line, col, syn)
}

func parseState(s string) (worker.State, error) {
	switch st := worker.State(strings.ToUpper(strings.TrimSpace(s))); st {
	case "":
		return worker.StateRunning, nil
	case worker.StateRunning, worker.StatePaused, worker.StateStopped:
		return st, nil
	}
	return "", fmt.Errorf("initial_state %q is not one of RUNNING, PAUSED, STOPPED", s)
}

// member is one key of a JSON object and where its value starts.
type member struct {
	key string
	raw json.RawMessage
	off int // byte offset of the value in the document being reported
}

func find(ms []member, key string) (member, bool) {
	i := slices.IndexFunc(ms, func(m member) bool { return m.key == key })
	if i < 0 {
		return member{}, false
	}
	return ms[i], true
}

// pos is "line L, column C" of the member's value in data.
func (m member) pos(data []byte) string {
	line, col := LineCol(data, m.off)
	return fmt.Sprintf("line %d, column %d", line, col)
}

// str returns the member's value as config text.
func (m member) str(data []byte) (string, error) {
	switch c := firstNonSpace(m.raw); c {
	case '"':
		var s string
		err := json.Unmarshal(m.raw, &s)
		return s, err
	case '{', '[', 'n':
		kind := map[byte]string{'{': "an object", '[': "an array", 'n': "null"}[c]
		return "", fmt.Errorf("%s: %q is %s: config values are strings (check the JSON there)", m.pos(data), m.key, kind)
	}
	return string(bytes.TrimSpace(m.raw)), nil // number, true, false
}

func firstNonSpace(b []byte) byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// readObject reads doc[base:base+len(part)], which must be one JSON
// object, keeping each member's offset in doc. Errors give the line and
// column in doc.
func readObject(doc []byte, base int, part []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(part))
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(doc, base, dec, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		line, col := LineCol(doc, base+int(dec.InputOffset())-1)
		return nil, fmt.Errorf("line %d, column %d: expected a JSON object {…}", line, col)
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(doc, base, dec, err)
		}
		key, _ := tok.(string)
		start := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxError(doc, base, dec, err)
		}
		// The value starts after the colon and any spaces.
		for start < len(part) && (part[start] == ':' || isSpace(part[start])) {
			start++
		}
		m := member{key: key, raw: raw, off: base + start}
		if seen[key] {
			return nil, fmt.Errorf("%s: key %q appears twice: keep one", m.pos(doc), key)
		}
		seen[key] = true
		out = append(out, m)
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxError(doc, base, dec, err)
	}
	end := int(dec.InputOffset())
	if rest := bytes.TrimLeft(part[end:], " \t\r\n"); len(rest) > 0 {
		line, col := LineCol(doc, base+len(part)-len(rest))
		return nil, fmt.Errorf("line %d, column %d: unexpected text after the JSON object (check the JSON there)", line, col)
	}
	return out, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// syntaxError reports an error of the token walk; checkSyntax has
// already caught malformed JSON, so this is a fallback.
func syntaxError(doc []byte, base int, dec *json.Decoder, err error) error {
	line, col := LineCol(doc, base+int(dec.InputOffset()))
	return fmt.Errorf("line %d, column %d: %w (check the JSON there)", line, col, err)
}

// LineCol converts a byte offset into a 1-based line and column.
func LineCol(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	before := data[:off]
	return 1 + bytes.Count(before, []byte("\n")), off - bytes.LastIndexByte(before, '\n')
}
