package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// PeerRouter is a [Router] that also knows the cluster's other workers,
// for the requests every worker must apply itself: PUT
// /admin/loggers/{name}?scope=cluster. Without it (a standalone worker),
// scope=cluster applies to this worker, the whole cluster.
type PeerRouter interface {
	Router
	// Peers returns the REST base URLs of the other live workers, by
	// worker id. An error wrapping worker.ErrRebalancing answers 409.
	Peers(ctx context.Context) (map[string]string, error)
}

// peerTimeout bounds one worker's answer to a cluster-wide level change.
const peerTimeout = 10 * time.Second

// clusterLevel sends a level change to every other worker of the
// cluster (Connect's KIP-976 scope=cluster, which Connect spreads
// through its config topic; floe asks each worker over REST, with the
// caller's credentials). Each worker applies it to itself only: the
// request carries [HeaderForwarded]. It returns nil when this is not a
// cluster or the request was forwarded here, and an error naming the
// workers that did not apply it otherwise.
func (s *Server) clusterLevel(r *http.Request, name, level string) error {
	if s.router == nil || r.Header.Get(HeaderForwarded) != "" {
		return nil
	}
	pr, ok := s.router.(PeerRouter)
	if !ok {
		return errorf(http.StatusNotImplemented, "scope=cluster is not supported here: this worker cannot list the cluster's workers; set the level on each worker with scope=worker")
	}
	peers, err := pr.Peers(r.Context())
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]string{"level": level})
	var failed []string
	for _, id := range slices.Sorted(maps.Keys(peers)) {
		if err := s.putPeerLevel(r, peers[id], name, body); err != nil {
			failed = append(failed, fmt.Sprintf("%s (%s): %v", id, peers[id], err))
		}
	}
	if len(failed) > 0 {
		return errorf(http.StatusInternalServerError, "logger %s: level %s set on this worker and %d other(s), but not on: %s; send the request again",
			name, level, len(peers)-len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// putPeerLevel sets the level of logger name on the worker at base.
func (s *Server) putPeerLevel(r *http.Request, base, name string, body []byte) error {
	return s.callPeer(r, http.MethodPut, strings.TrimRight(base, "/")+"/admin/loggers/"+name+"?scope=cluster", body)
}

// callPeer sends the request r asked for to another worker of the
// cluster at u, with this worker's forwarded-by header and r's
// credentials, and returns an error naming the peer's answer unless it
// is a 2xx. body, when not nil, is sent as JSON.
func (s *Server) callPeer(r *http.Request, method, u string, body []byte) error {
	ctx, cancel := context.WithTimeout(r.Context(), peerTimeout)
	defer cancel()
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(HeaderForwarded, s.router.WorkerID())
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		return fmt.Errorf("answered %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
