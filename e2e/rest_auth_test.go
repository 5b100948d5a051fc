package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestRESTAuthAndTLS runs a real floe with an https listener (a PEM
// certificate made here), HTTP Basic users from a credentials file in
// the format of Connect's BasicAuthSecurityRestExtension and a bearer
// token file. GET /health answers without credentials (probes); every
// other request needs a valid user or token (401 with WWW-Authenticate
// otherwise); plain http on the port gets no API; a connector created
// with credentials runs.
func TestRESTAuthAndTLS(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	ctx := harness.Context(t, 3*time.Minute)
	dir := t.TempDir()
	certFile, keyFile, pool := selfSignedCert(t, dir)
	users := filepath.Join(dir, "users.properties")
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(users, []byte("# Connect's format\nalice: wonderland\nbob=builder\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokens, []byte("tok-e2e-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()

	f := harness.StartFloe(t, env, harness.Options{NoWait: true, Worker: map[string]string{
		"listeners": "https://" + addr,
		"listeners.https.ssl.certificate.location": certFile,
		"listeners.https.ssl.key.location":         keyFile,
		"rest.auth.basic.credentials.file":         users,
		"rest.auth.bearer.tokens.file":             tokens,
	}})
	tlsClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	anon := harness.NewClient("https://" + addr)
	anon.HTTP = tlsClient
	f.WaitFor(ctx, "GET /health over https without credentials", func(ctx context.Context) (bool, string, error) {
		err := anon.Health(ctx)
		return err == nil, "", nil
	})

	with := func(h string) *harness.Client {
		c := harness.NewClient("https://" + addr)
		c.HTTP = tlsClient
		if h != "" {
			c.Header = http.Header{"Authorization": {h}}
		}
		return c
	}
	basic := func(u, p string) string {
		req, _ := http.NewRequest("GET", "/", nil)
		req.SetBasicAuth(u, p)
		return req.Header.Get("Authorization")
	}
	for _, tc := range []struct {
		name string
		auth string
		code int
	}{
		{"none", "", http.StatusUnauthorized},
		{"wrong password", basic("alice", "nope"), http.StatusUnauthorized},
		{"unknown user", basic("mallory", "wonderland"), http.StatusUnauthorized},
		{"wrong token", "Bearer tok-wrong", http.StatusUnauthorized},
		{"alice", basic("alice", "wonderland"), http.StatusOK},
		{"bob", basic("bob", "builder"), http.StatusOK},
		{"token", "Bearer tok-e2e-123", http.StatusOK},
	} {
		for _, path := range []string{"/", "/connectors", "/connector-plugins"} {
			r, err := with(tc.auth).Do(ctx, "GET", path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tc.code {
				t.Errorf("%s: GET %s answered %d %s, want %d", tc.name, path, r.Status, r.Body, tc.code)
			}
			if tc.code == http.StatusUnauthorized && !strings.Contains(strings.Join(r.Header.Values("WWW-Authenticate"), ","), "Basic") {
				t.Errorf("%s: 401 without a WWW-Authenticate Basic challenge: %v", tc.name, r.Header)
			}
		}
	}
	if r, err := with("").Do(ctx, "POST", "/connectors", map[string]any{"name": "anon", "config": map[string]string{"connector.class": "iceberg"}}); err != nil || r.Status != http.StatusUnauthorized {
		t.Errorf("an anonymous POST: %v %v, want 401", r, err)
	}

	// Plain http on the https port reaches no API.
	if resp, err := http.Get("http://" + addr + "/connectors"); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain http on the https listener answered 200")
		}
	}

	f.API = with("Bearer tok-e2e-123")
	if _, err := f.API.CreateConnector(ctx, harness.Connector{Name: "secure", Config: map[string]string{
		"connector.class": "iceberg", "source": "datagen", "datagen.rate": "10", "iceberg.tables": "secure.t",
	}}); err != nil {
		t.Fatal(err)
	}
	f.WaitStatus(ctx, "secure", "RUNNING over https with a token", false, harness.ConnectorStatus.Running)
	if !f.LogContains(`REST API listening.*url=https://`) {
		t.Errorf("the log does not show the https listener")
	}
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key (PEM)
// into dir and returns their paths and a pool trusting it.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "floe e2e"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
