package sdk_test

import (
	"testing"

	"github.com/floehq/floe/sdk"
)

func TestIsSecretKey(t *testing.T) {
	for key, want := range map[string]bool{
		"kafka.sasl.password":                           true,
		"kafka.sasl.jaas.config":                        true,
		"kafka.ssl.keystore.key":                        true,
		"kafka.sasl.oauthbearer.client.secret":          true,
		"schema.registry.basic.auth.user.info":          true,
		"iceberg.catalog.token":                         true,
		"iceberg.catalog.credential":                    true,
		"iceberg.catalog.s3.secret-access-key":          true,
		"iceberg.catalog.s3.sse.key":                    true,
		"iceberg.catalog.header.Authorization":          true,
		"iceberg.catalog.adls.account.key":              true,
		"iceberg.catalog.adls.connection-string":        true,
		"datadog.api.key":                               true,
		"kafka.ssl.key.pem":                             true,
		"kafka.sasl.oauthbearer.config":                 true,
		"kafka.ssl.certificate.pem":                     false,
		"kafka.sasl.oauthbearer.token.endpoint.url":     false, // where a token comes from
		"kafka.ssl.key.location":                        false,
		"schema.registry.basic.auth.credentials.source": false,
		"kafka.sasl.password.file":                      false,
		"kafka.sasl.token.type":                         false,
		"iceberg.catalog.s3.access-key-id":              false,
		"iceberg.tables":                                false,
		"topics":                                        false,
	} {
		if got := sdk.IsSecretKey(key); got != want {
			t.Errorf("IsSecretKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestRedactInline(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://floe:s3cret@db:5432/catalog":                                                        "postgres://floe:[hidden]@db:5432/catalog",
		"postgres://floe@db/catalog":                                                                    "postgres://floe@db/catalog",
		"host=db user=floe password=s3cret dbname=catalog":                                              "host=db user=floe password=[hidden] dbname=catalog",
		"https://x/api?token=abc&user=u":                                                                "https://x/api?token=[hidden]&user=u",
		"DefaultEndpointsProtocol=https;AccountName=a;AccountKey=k==;EndpointSuffix=x":                  "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=[hidden];EndpointSuffix=x",
		"BlobEndpoint=https://a;SharedAccessSignature=sv=1&sig=abc":                                     "BlobEndpoint=https://a;SharedAccessSignature=[hidden]&sig=[hidden]",
		"clientId=floe clientSecret=abc123 scope=all":                                                   "clientId=floe clientSecret=[hidden] scope=all",
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p w";`: `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password=[hidden];`,
		"Bearer eyJhbGciOiJIUzI1NiJ9.e30.x":                                                             "Bearer [hidden]",
		"Bearer abc_def-ghi_jkl":                                                                        "Bearer [hidden]",
		"Authorization: Basic dXNlcjpwYXNz":                                                             "Authorization: Basic [hidden]",
		"SASL_SSL":                                                                                      "SASL_SSL",
		"OAUTHBEARER":                                                                                   "OAUTHBEARER",
		"day(ts), bucket(16, id)":                                                                       "day(ts), bucket(16, id)",
	} {
		if got := sdk.RedactInline(in); got != want {
			t.Errorf("RedactInline(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

func TestRedactValue(t *testing.T) {
	if got := sdk.RedactValue("kafka.sasl.password", "pw"); got != sdk.HiddenValue {
		t.Errorf("a secret key's value = %q", got)
	}
	if got := sdk.RedactValue("iceberg.catalog.uri", "postgres://u:pw@h/c"); got != "postgres://u:[hidden]@h/c" {
		t.Errorf("a URL with a password = %q", got)
	}
}
