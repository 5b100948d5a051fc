package rest

import (
	"errors"
	"net/http"

	"github.com/floehq/floe/host/worker"
)

// Offsets is Connect's offsets document (KIP-875).
type Offsets struct {
	Offsets []worker.Offset `json:"offsets"`
}

// Message is Connect's answer to an offsets change.
type Message struct {
	Message string `json:"message"`
}

// Topics is one connector's entry of GET /connectors/{c}/topics.
type Topics struct {
	Topics []string `json:"topics"`
}

// getOffsets answers GET /connectors/{c}/offsets: the positions the sink's
// tables hold.
func (s *Server) getOffsets(w http.ResponseWriter, r *http.Request) {
	offs, err := s.w.Offsets(r.Context(), r.PathValue("c"))
	if err != nil {
		writeError(w, err)
		return
	}
	if offs == nil {
		offs = []worker.Offset{}
	}
	writeJSON(w, http.StatusOK, Offsets{Offsets: offs})
}

// alterOffsets answers PATCH /connectors/{c}/offsets: 200 with a message,
// 400 unless the connector is STOPPED or when the body lists nothing.
func (s *Server) alterOffsets(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("c")
	var body Offsets
	if err := decodeBody(r, &body); err != nil {
		writeError(w, err)
		return
	}
	if len(body.Offsets) == 0 {
		writeError(w, errorf(http.StatusBadRequest, `Partitions / offsets need to be provided for an alter offsets request: send {"offsets": [{"partition": {…}, "offset": {…}}]}`))
		return
	}
	for i, o := range body.Offsets {
		if o.Partition == nil {
			writeError(w, errorf(http.StatusBadRequest, "offsets[%d] has no \"partition\": every entry names the partition it moves", i))
			return
		}
	}
	if err := s.w.AlterOffsets(r.Context(), name, body.Offsets); err != nil {
		writeError(w, offsetsError(name, err))
		return
	}
	writeJSON(w, http.StatusOK, Message{Message: "The offsets for this connector have been altered successfully"})
}

// resetOffsets answers DELETE /connectors/{c}/offsets: 200 with a message,
// 400 unless the connector is STOPPED.
func (s *Server) resetOffsets(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("c")
	if err := s.w.ResetOffsets(r.Context(), name); err != nil {
		writeError(w, offsetsError(name, err))
		return
	}
	writeJSON(w, http.StatusOK, Message{Message: "The offsets for this connector have been reset successfully"})
}

// offsetsError gives ErrBadState Connect's explanation and next step.
func offsetsError(name string, err error) error {
	if errors.Is(err, worker.ErrBadState) {
		return errorf(http.StatusBadRequest, "Connectors must be in the STOPPED state before their offsets can be modified. "+
			"This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint", name)
	}
	return err
}

// getTopics answers GET /connectors/{c}/topics: {"c": {"topics": […]}}.
func (s *Server) getTopics(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("c")
	topics, err := s.w.Topics(r.Context(), name)
	if err != nil {
		writeError(w, err)
		return
	}
	if topics == nil {
		topics = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]Topics{name: {Topics: topics}})
}

// resetTopics answers PUT /connectors/{c}/topics/reset: 202.
func (s *Server) resetTopics(w http.ResponseWriter, r *http.Request) {
	if err := s.w.ResetTopics(r.Context(), r.PathValue("c")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
