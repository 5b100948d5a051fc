package distributed

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/floehq/floe/host/cluster"
	"github.com/floehq/floe/host/control"
	"github.com/floehq/floe/host/kclient"
	"github.com/floehq/floe/host/store/kafkastore"
	"github.com/floehq/floe/host/worker"
)

// Worker config keys of distributed mode beyond the stores' (package
// kafkastore) and the Kafka client's (package kclient), with Kafka
// Connect's names and meanings.
const (
	KeyAdvertisedListener = "rest.advertised.listener"
	KeyAdvertisedHost     = "rest.advertised.host.name"
	KeyAdvertisedPort     = "rest.advertised.port"
	KeySessionTimeout     = "session.timeout.ms"
	KeyHeartbeatInterval  = "heartbeat.interval.ms"
)

// storeKeys are the kafkastore keys; the worker config parser does not
// know them.
var storeKeys = []string{
	kafkastore.KeyGroupID,
	kafkastore.KeyConfigTopic, kafkastore.KeyConfigReplicationFactor,
	kafkastore.KeyOffsetTopic, kafkastore.KeyOffsetReplicationFactor, kafkastore.KeyOffsetPartitions,
	kafkastore.KeyStatusTopic, kafkastore.KeyStatusReplicationFactor, kafkastore.KeyStatusPartitions,
}

// Config is a distributed worker's config: a standalone worker's keys
// plus the cluster's.
type Config struct {
	// Worker holds the keys a standalone worker has (listeners,
	// plugin.path, data.dir, …). Its WorkerID names this worker in the
	// cluster (default: the advertised URL's host:port).
	Worker worker.Config
	// Stores are the internal topics and the client that reaches them.
	Stores kafkastore.Settings
	// Control is the control topic, which carries connectors'
	// checkpoints between workers and committers.
	Control control.Settings
	// URL is the REST URL other workers forward requests to.
	URL string
	// SessionTimeout and HeartbeatInterval tune the membership group.
	SessionTimeout, HeartbeatInterval time.Duration
}

// ParseConfig reads a distributed worker config from key-value pairs.
// Errors name the file and the key.
func ParseConfig(raw map[string]string, file string) (Config, error) {
	rest := maps.Clone(raw)
	for _, k := range storeKeys {
		delete(rest, k)
	}
	for _, k := range append([]string{KeyAdvertisedListener, KeyAdvertisedHost, KeyAdvertisedPort, KeySessionTimeout, KeyHeartbeatInterval}, control.Keys()...) {
		delete(rest, k)
	}
	for k := range rest {
		if k == kclient.KeySecurityProtocol || strings.HasPrefix(k, kclient.PrefixSASL) || strings.HasPrefix(k, kclient.PrefixSSL) {
			delete(rest, k)
		}
	}
	// bootstrap.servers stays: connectors inherit it, as in Connect.
	wc, err := worker.ConfigFromMap(rest, file)
	if err != nil {
		return Config{}, err
	}
	st, err := kafkastore.ParseSettings(raw)
	if err != nil {
		return Config{}, fmt.Errorf("worker config %s: %w", file, err)
	}
	ctl, err := control.ParseSettings(raw, st.Client, st.GroupID)
	if err != nil {
		return Config{}, fmt.Errorf("worker config %s: %w", file, err)
	}
	c := Config{Worker: wc, Stores: st, Control: ctl}
	if c.URL, err = advertisedURL(raw, wc.Listeners[0]); err != nil {
		return Config{}, fmt.Errorf("worker config %s: %w", file, err)
	}
	if strings.TrimSpace(raw[worker.KeyWorkerID]) == "" {
		u, _ := url.Parse(c.URL)
		c.Worker.WorkerID = u.Host
	}
	if c.SessionTimeout, err = millis(raw, KeySessionTimeout, cluster.DefaultSessionTimeout); err != nil {
		return Config{}, fmt.Errorf("worker config %s: %w", file, err)
	}
	if c.HeartbeatInterval, err = millis(raw, KeyHeartbeatInterval, cluster.DefaultHeartbeatInterval); err != nil {
		return Config{}, fmt.Errorf("worker config %s: %w", file, err)
	}
	if c.HeartbeatInterval >= c.SessionTimeout {
		return Config{}, fmt.Errorf("worker config %s: %s (%d) must be below %s (%d); a third of it is usual",
			file, KeyHeartbeatInterval, c.HeartbeatInterval.Milliseconds(), KeySessionTimeout, c.SessionTimeout.Milliseconds())
	}
	return c, nil
}

// advertisedURL is the URL other workers reach this one at: Connect's
// rest.advertised.* keys over the first listener. A listener on a
// wildcard address advertises the host name.
func advertisedURL(raw map[string]string, listener string) (string, error) {
	u, err := url.Parse(listener)
	if err != nil {
		return "", err
	}
	scheme, host, port := u.Scheme, u.Hostname(), u.Port()
	if v := strings.TrimSpace(raw[KeyAdvertisedListener]); v != "" {
		if v != "http" && v != "https" {
			return "", fmt.Errorf("%s: %q is not http or https", KeyAdvertisedListener, v)
		}
		scheme = v
	}
	if v := strings.TrimSpace(raw[KeyAdvertisedHost]); v != "" {
		host = v
	} else if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if host, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("%s: the listener %q binds every address and the host name is unknown (%w): set %s", KeyAdvertisedHost, listener, err, KeyAdvertisedHost)
		}
	}
	if v := strings.TrimSpace(raw[KeyAdvertisedPort]); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%s: %q is not a port number", KeyAdvertisedPort, v)
		}
		port = v
	}
	if port == "" || port == "0" {
		return "", fmt.Errorf("%s: the listener %q has no fixed port, so other workers cannot reach this one: give it a port or set %s", worker.KeyListeners, listener, KeyAdvertisedPort)
	}
	return scheme + "://" + net.JoinHostPort(host, port), nil
}

// millis reads a positive duration in milliseconds.
func millis(raw map[string]string, key string, def time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(raw[key])
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s: %q is not a positive number of milliseconds", key, v)
	}
	return time.Duration(n) * time.Millisecond, nil
}
