package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/floehq/floe/host/worker"
)

// ErrorBody is Connect's error document.
type ErrorBody struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

// apiError is an error with the HTTP status it answers.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

// errorf makes an error that answers with code.
func errorf(code int, format string, args ...any) error {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

// statusOf maps an error to Connect's status code.
func statusOf(err error) int {
	var ae *apiError
	var ve *worker.ValidationError
	switch {
	case errors.As(err, &ae):
		return ae.code
	case errors.As(err, &ve):
		return http.StatusBadRequest
	case errors.Is(err, worker.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, worker.ErrExists), errors.Is(err, worker.ErrRebalancing):
		return http.StatusConflict
	case errors.Is(err, worker.ErrBadState):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// messageOf returns the text of err for the error body. A validation error
// lists every key's errors, as Connect does, and says where to see them.
func messageOf(err error) string {
	var ve *worker.ValidationError
	if errors.As(err, &ve) {
		return validationMessage(maskInfos(ve.Infos))
	}
	return err.Error()
}

// validationMessage is Connect's text for a config that does not validate.
func validationMessage(infos worker.ConfigInfos) string {
	var lines []string
	for _, c := range infos.Configs {
		for _, m := range c.Value.Errors {
			lines = append(lines, c.Value.Name+": "+m)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Connector configuration is invalid and contains the following %d error(s):", len(lines))
	for i, l := range lines {
		if i == worker.MaxListedErrors {
			fmt.Fprintf(&b, "\n… and %d more", len(lines)-i)
			break
		}
		if len(l) > 1000 {
			l = l[:1000] + "…"
		}
		b.WriteString("\n" + l)
	}
	class := infos.Name
	if class == "" {
		class = "{connectorType}"
	}
	fmt.Fprintf(&b, "\nYou can also find the above list of errors at the endpoint `/connector-plugins/%s/config/validate`", class)
	return b.String()
}

// writeError answers err with Connect's error body.
func writeError(w http.ResponseWriter, err error) {
	code := statusOf(err)
	writeJSON(w, code, ErrorBody{ErrorCode: code, Message: messageOf(err)})
}

// writeJSON answers v as compact JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		buf.Reset()
		_ = enc.Encode(ErrorBody{ErrorCode: code, Message: "encode response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}
