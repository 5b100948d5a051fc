package sdk

import (
	"regexp"
	"strings"
)

// HiddenValue stands in for a secret wherever floe shows a config value
// (the REST API, the CLI, logs), as Kafka Connect prints a password.
const HiddenValue = "[hidden]"

// floe's one classification of secrets, used by the host to redact what
// it shows and by the sdktest kits to require specs to mark their secrets.
// Grow it here, so both sides keep agreeing.
var (
	// secretWords make a key a secret when its lower-cased name contains
	// one.
	secretWords = []string{
		"password", "passwd", "secret", "token", "credential",
		"jaas.config", "sasl.jaas", "user.info", "userinfo",
		"private.key", "private-key", "privatekey", "keystore.key",
		"api.key", "api-key", "apikey",
		"key.pem", "oauthbearer.config", // librdkafka's PEM private key, and its OAuth config (clientSecret=…)
		"authorization",                                   // HTTP headers a client sends (iceberg.catalog.header.Authorization)
		"sse.key", "sse-key", "account.key", "accountkey", // S3 SSE-C keys, Azure storage account keys
		"connection.string", "connection-string", "connectionstring", // Azure connection strings carry AccountKey=
	}
	// notSecretSuffixes name where a secret lives, or what kind it is,
	// rather than the secret: token.endpoint.url, ssl.key.location,
	// password.file, credential.source, sasl.token.type.
	notSecretSuffixes = []string{"url", "uri", "endpoint", "location", "file", "path", "type", "source"}

	// inlineSecrets find secrets inside values that are not secrets
	// themselves, and say what replaces each match.
	inlineSecrets = []struct {
		re   *regexp.Regexp
		repl string
	}{
		// scheme://user:password@host
		{regexp.MustCompile(`(://[^/@:\s]*:)[^/@\s]+@`), "${1}" + HiddenValue + "@"},
		// key=value parameters: query strings, libpq DSNs, Azure
		// connection strings (AccountKey=, SharedAccessSignature=), OAuth
		// configs (clientSecret=), JAAS options (password="...").
		{regexp.MustCompile(`(?i)((?:^|[?&;,\s])(?:password|passwd|pwd|secret|token|access_token|refresh_token|client_?secret|account_?key|shared_?access_?signature|sig)\s*=\s*)(?:"[^"]*"|'[^']*'|[^&;,\s]+)`), "${1}" + HiddenValue},
		// HTTP credentials: "Bearer <token>", "Basic <base64>". A token
		// is RFC 6750's b64token, base64url's "_" included.
		{regexp.MustCompile(`(?i)(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=_-]{8,}`), "${1}" + HiddenValue},
	}
)

// IsSecretKey reports whether a config key's name says its value is a
// secret: its name contains a word such as password, token, secret,
// credential, user.info, authorization or sse.key, and does not end by
// naming where a secret lives (…url, …endpoint, …location, …file, …path)
// or its kind (…type, …source).
//
// A key a spec declares with [Password] or [Field.Sensitive] is a secret
// whatever its name; IsSecretKey covers the keys nobody declared one by one
// (a prefix family's kafka.sasl.password), and the sdktest kits require a
// spec to mark every key it names.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	for _, s := range notSecretSuffixes {
		if strings.HasSuffix(k, s) {
			return false
		}
	}
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// RedactValue returns what may be shown of a config value: [HiddenValue]
// for a key whose name says it holds a secret ([IsSecretKey]), otherwise
// the value with the secrets embedded in it hidden ([RedactInline]).
func RedactValue(key, value string) string {
	if IsSecretKey(key) {
		return HiddenValue
	}
	return RedactInline(value)
}

// RedactInline hides the secrets embedded in a value that is not a secret
// as a whole: a URL's password (postgres://floe:pw@host), password=,
// secret= and token= parameters (query strings, libpq DSNs), Azure
// connection strings' AccountKey= and SharedAccessSignature=, OAuth
// configs' clientSecret=, and HTTP credentials after Bearer or Basic.
// Each becomes [HiddenValue]; the rest of the value stays readable.
func RedactInline(value string) string {
	for _, p := range inlineSecrets {
		value = p.re.ReplaceAllString(value, p.repl)
	}
	return value
}
