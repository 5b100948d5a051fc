package rest

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// Auth says who may call the API. A request passes with HTTP Basic
// credentials of one of Users, or with "Authorization: Bearer <token>"
// of one of Tokens; GET /health stays open for probes. The zero Auth
// (nothing configured) lets every request through, as Connect does
// without a REST extension.
type Auth struct {
	// Users maps a user name to the SHA-256 of its password.
	Users map[string][32]byte
	// Tokens holds the SHA-256 of each accepted bearer token.
	Tokens [][32]byte
}

// Enabled reports whether any credential is configured.
func (a *Auth) Enabled() bool { return a != nil && (len(a.Users) > 0 || len(a.Tokens) > 0) }

// LoadBasicCredentials reads a credentials file as Kafka Connect's
// BasicAuthSecurityRestExtension's property file has them: one
// "user: password" (or "user=password") per line; blank lines and lines
// starting with # or ! are skipped. Errors name the file and the line.
func (a *Auth) LoadBasicCredentials(path string) error {
	return readLines(path, func(n int, line string) error {
		i := strings.IndexAny(line, ":=")
		if i <= 0 {
			return fmt.Errorf("rest: credentials file %s line %d: want \"user: password\"", path, n)
		}
		user, pass := strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
		if user == "" || pass == "" {
			return fmt.Errorf("rest: credentials file %s line %d: empty user or password", path, n)
		}
		if a.Users == nil {
			a.Users = map[string][32]byte{}
		}
		a.Users[user] = sha256.Sum256([]byte(pass))
		return nil
	})
}

// LoadBearerTokens reads a file of accepted bearer tokens, one per line;
// blank lines and lines starting with # are skipped.
func (a *Auth) LoadBearerTokens(path string) error {
	return readLines(path, func(n int, line string) error {
		if strings.ContainsAny(line, " \t") {
			return fmt.Errorf("rest: tokens file %s line %d: a token has no spaces", path, n)
		}
		a.Tokens = append(a.Tokens, sha256.Sum256([]byte(line)))
		return nil
	})
}

func readLines(path string, each func(n int, line string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("rest: %w", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	n, found := 0, false
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
			continue
		}
		if err := each(n, line); err != nil {
			return err
		}
		found = true
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("rest: read %s: %w", path, err)
	}
	if !found {
		return fmt.Errorf("rest: %s holds no credentials: an empty file would lock every client out", path)
	}
	return nil
}

// errUnauthorized is the answer to a request without valid credentials.
var errUnauthorized = errors.New("HTTP 401 Unauthorized: this worker's REST API needs credentials: HTTP Basic (user and password) or Authorization: Bearer <token>")

// allows reports whether r carries credentials a accepts. Comparisons
// take the same time whatever the input, and every user is checked, so
// timing tells nothing of names or secrets.
func (a *Auth) allows(r *http.Request) bool {
	if !a.Enabled() {
		return true
	}
	h := r.Header.Get("Authorization")
	scheme, cred, _ := strings.Cut(h, " ")
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		sum := sha256.Sum256([]byte(strings.TrimSpace(cred)))
		ok := 0
		for _, t := range a.Tokens {
			ok |= subtle.ConstantTimeCompare(sum[:], t[:])
		}
		return ok == 1
	case strings.EqualFold(scheme, "Basic"):
		user, pass, found := r.BasicAuth()
		if !found {
			return false
		}
		sum := sha256.Sum256([]byte(pass))
		want, known := a.Users[user]
		if !known {
			want = [32]byte{} // still compare, in the same time
		}
		return subtle.ConstantTimeCompare(sum[:], want[:]) == 1 && known
	}
	return false
}

// authenticate answers 401 to a request a does not allow, and returns
// false then. GET /health needs no credentials.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) bool {
	if s.auth.allows(r) || r.Method == http.MethodGet && r.URL.Path == "/health" {
		return true
	}
	var challenges []string
	if len(s.auth.Users) > 0 {
		challenges = append(challenges, `Basic realm="floe", charset="UTF-8"`)
	}
	if len(s.auth.Tokens) > 0 {
		challenges = append(challenges, `Bearer realm="floe"`)
	}
	for _, c := range challenges {
		w.Header().Add("WWW-Authenticate", c)
	}
	writeError(w, errorf(http.StatusUnauthorized, "%v", errUnauthorized))
	return false
}
