package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxBody bounds a request body; connector configs and offset documents
// are far smaller.
const maxBody = 16 << 20

// decodeBody reads the request body as one JSON value into v. Every
// failure is a 400 whose message says what is wrong and where: the line
// and column of a syntax error, the field of a type error.
func decodeBody(r *http.Request, v any) error {
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return errorf(http.StatusBadRequest, "request body is larger than %d bytes", maxBody)
		}
		return errorf(http.StatusBadRequest, "read request body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return errorf(http.StatusBadRequest, "request body is empty: send a JSON document (Content-Type: application/json)")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return jsonError(data, err)
	}
	if off := dec.InputOffset(); len(bytes.TrimSpace(data[off:])) > 0 {
		line, col := lineCol(data, int(off)+bytes.IndexFunc(data[off:], notSpace))
		return errorf(http.StatusBadRequest, "malformed JSON in request body: unexpected data after the JSON value at line %d, column %d", line, col)
	}
	return nil
}

func notSpace(r rune) bool { return !strings.ContainsRune(" \t\r\n", r) }

// jsonError turns a decoding error into a 400 naming the position.
func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := lineCol(data, int(syn.Offset)-1)
		return errorf(http.StatusBadRequest, "malformed JSON in request body at line %d, column %d: %v", line, col, syn)
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineCol(data, len(data))
		return errorf(http.StatusBadRequest, "malformed JSON in request body: it ends early at line %d, column %d (a missing closing bracket or quote?)", line, col)
	case errors.As(err, &typ):
		line, col := lineCol(data, int(typ.Offset)-1)
		where := "the request body"
		if typ.Field != "" {
			where = fmt.Sprintf("%q", typ.Field)
		}
		return errorf(http.StatusBadRequest, "malformed JSON in request body at line %d, column %d: %s must be %s, got %s", line, col, where, jsonKind(typ.Type.Kind().String()), typ.Value)
	}
	return errorf(http.StatusBadRequest, "malformed JSON in request body: %v", err)
}

// jsonKind names a Go kind the way a JSON user thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	return "a number"
}

// lineCol converts a byte index into a 1-based line and column.
func lineCol(data []byte, idx int) (line, col int) {
	idx = max(0, min(idx, len(data)))
	before := data[:idx]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = idx - bytes.LastIndexByte(before, '\n')
	return line, col
}

// configValues converts a JSON config object into strings. Numbers and
// booleans are taken as their text (Connect's Jackson does the same);
// objects and arrays are refused naming the key. A JSON null is nil when
// allowNull (PATCH removes the key), an error otherwise.
func configValues(raw map[string]json.RawMessage, allowNull bool) (map[string]*string, error) {
	out := make(map[string]*string, len(raw))
	for k, v := range raw {
		v = bytes.TrimSpace(v)
		if len(v) == 0 {
			continue
		}
		switch v[0] {
		case 'n':
			if !allowNull {
				return nil, errorf(http.StatusBadRequest, "config key %q is null: give it a string value, or leave the key out", k)
			}
			out[k] = nil
		case '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, errorf(http.StatusBadRequest, "config key %q: %v", k, err)
			}
			out[k] = &s
		case '{', '[':
			return nil, errorf(http.StatusBadRequest, "config key %q must be a string, got %s: Connect configs are flat string maps", k, jsonKind(map[byte]string{'{': "map", '[': "slice"}[v[0]]))
		default: // number, true, false
			s := string(v)
			out[k] = &s
		}
	}
	return out, nil
}

// stringConfig is configValues without nulls.
func stringConfig(raw map[string]json.RawMessage) (map[string]string, error) {
	vals, err := configValues(raw, false)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(vals))
	for k, v := range vals {
		out[k] = *v
	}
	return out, nil
}
