package rest

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/floehq/floe/host/worker"
)

// clusterTaskRestarts completes POST /connectors/{c}/restart?includeTasks=true
// in a cluster. The request reached the worker that runs the connector
// (its committer), which restarted its own share; the connector's tasks
// on other workers (all of them, or the FAILED ones with onlyFailed, as
// before shows them) are restarted by their workers, each asked with
// POST /connectors/{c}/tasks/{t}/restart and the caller's credentials,
// as Connect restarts every task of the request wherever it runs. It
// returns an error naming the tasks whose worker did not restart them;
// nil when this is not a cluster.
func (s *Server) clusterTaskRestarts(r *http.Request, name string, before worker.ConnectorStatus, onlyFailed bool) error {
	pr, ok := s.router.(PeerRouter)
	if !ok {
		return nil
	}
	self := s.router.WorkerID()
	var remote []worker.TaskState
	for _, t := range before.Tasks {
		if t.WorkerID == "" || t.WorkerID == self || onlyFailed && t.State != worker.StateFailed {
			continue
		}
		remote = append(remote, t)
	}
	if len(remote) == 0 {
		return nil
	}
	peers, err := pr.Peers(r.Context())
	if err != nil {
		return err
	}
	var failed []string
	for _, t := range remote {
		base, ok := peers[t.WorkerID]
		if !ok {
			failed = append(failed, fmt.Sprintf("task %d: its worker %s is not a live member of the cluster", t.ID, t.WorkerID))
			continue
		}
		if err := s.restartPeerTask(r, base, name, t.ID); err != nil {
			failed = append(failed, fmt.Sprintf("task %d on %s (%s): %v", t.ID, t.WorkerID, base, err))
		}
	}
	if len(failed) > 0 {
		return errorf(http.StatusInternalServerError, "connector %s: restarted on this worker, but not: %s; send the request again",
			name, strings.Join(failed, "; "))
	}
	return nil
}

// restartPeerTask asks the worker at base to restart task of connector
// name.
func (s *Server) restartPeerTask(r *http.Request, base, name string, task int) error {
	u := strings.TrimRight(base, "/") + "/connectors/" + url.PathEscape(name) + "/tasks/" + strconv.Itoa(task) + "/restart"
	return s.callPeer(r, http.MethodPost, u, nil)
}
