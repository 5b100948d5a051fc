package providers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "secrets.properties")
	if err := os.WriteFile(props, []byte("# secrets\npassword = s3cret\ntoken: abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key"), []byte("dir-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FLOE_TEST_TOKEN", "env-secret")
	s, err := FromWorkerConfig(map[string]string{
		KeyProviders:                  "file,env,dir",
		"config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
		"config.providers.dir.class":  "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
	})
	if err != nil {
		t.Fatal(err)
	}
	out, errs := s.Resolve(map[string]string{
		"a": "${file:" + props + ":password}",
		"b": "Bearer ${env:FLOE_TEST_TOKEN}",
		"c": "${dir:" + dir + ":key}",
		"d": "${vault:secret/x:y}", // not a provider of this worker: kept
		"e": "plain",
		"f": "${file:" + props + ":missing}",
		"g": "${env:FLOE_TEST_UNSET_VARIABLE}",
	})
	want := map[string]string{"a": "s3cret", "b": "Bearer env-secret", "c": "dir-secret", "d": "${vault:secret/x:y}", "e": "plain"}
	for k, v := range want {
		if out[k] != v {
			t.Errorf("%s = %q, want %q", k, out[k], v)
		}
	}
	if len(errs) != 2 || !strings.Contains(errs["f"], "no key \"missing\"") || !strings.Contains(errs["g"], "FLOE_TEST_UNSET_VARIABLE") {
		t.Errorf("errors = %v", errs)
	}

	// Without config.providers nothing resolves, as in Connect.
	out, _ = Set{}.Resolve(map[string]string{"a": "${env:FLOE_TEST_TOKEN}"})
	if out["a"] != "${env:FLOE_TEST_TOKEN}" {
		t.Errorf("undeclared provider resolved: %q", out["a"])
	}
}

func TestFromWorkerConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		raw  map[string]string
		says string
	}{
		{map[string]string{KeyProviders: "vault"}, "config.providers.vault.class"},
		{map[string]string{KeyProviders: "v", "config.providers.v.class": "com.example.Vault"}, "not a provider class"},
		{map[string]string{"config.providers.x.class": "org.apache.kafka.common.config.provider.FileConfigProvider"}, "not listed"},
	} {
		if _, err := FromWorkerConfig(tc.raw); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: %v, want %q", tc.raw, err, tc.says)
		}
	}
}
