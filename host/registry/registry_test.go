package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floehq/floe/host/registry"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// built holds the test plugins of testdata/, built once by TestMain.
var built string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "floe-registry-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"./testdata/alpha", "./testdata/beta", "./testdata/dupe", "./testdata/crash", "./testdata/protov3", "./testdata/protov1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build testdata plugins:", err)
		os.Exit(1)
	}
	built = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// install copies a built test plugin to dst, executable.
func install(t *testing.T, name, dst string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(built, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// problemFor finds the problem about path.
func problemFor(problems []registry.Problem, path string) (registry.Problem, bool) {
	for _, p := range problems {
		if p.Path == path {
			return p, true
		}
	}
	return registry.Problem{}, false
}

func TestScan(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	alpha := install(t, "alpha", filepath.Join(dir, "floe-plugin-alpha"))
	beta := install(t, "beta", filepath.Join(dir, "beta-1.0", "floe-plugin-beta")) // a subfolder
	dupe := install(t, "dupe", filepath.Join(other, "floe-plugin-dupe"))
	crash := install(t, "crash", filepath.Join(dir, "floe-plugin-crash"))
	v3 := install(t, "protov3", filepath.Join(dir, "floe-plugin-future"))
	// Built before protocol 2: it declares no capabilities, and would
	// never be asked for its frontier; it is refused instead.
	v1 := install(t, "protov1", filepath.Join(dir, "floe-plugin-old"))
	notExec := filepath.Join(dir, "floe-plugin-notes")
	write(t, notExec, "not a program", 0o644)
	write(t, filepath.Join(dir, "floe-plugin-alpha.sha256"), "ignored", 0o644)
	write(t, filepath.Join(dir, "README"), "ignored", 0o644)
	install(t, "beta", filepath.Join(dir, "deep", "deeper", "floe-plugin-beta")) // two levels down: not scanned
	missing := filepath.Join(t.TempDir(), "nope")

	r, problems := registry.Scan(context.Background(), []string{dir, other, missing}, "", nil)

	want := map[string]string{
		crash:   "exited before the handshake (exit status 4); its last lines:\n  crash: cannot load libfoo.so",
		v3:      "speaks floe protocol v3, this host speaks v2",
		v1:      "speaks floe protocol v1, this host speaks v2",
		notExec: "is not executable; run chmod +x " + notExec,
		dupe:    fmt.Sprintf(`source component "alpha" is declared by both %s and %s`, alpha, dupe),
		missing: "plugin folder " + missing + " does not exist",
	}
	for path, msg := range want {
		p, ok := problemFor(problems, path)
		if !ok {
			t.Errorf("no problem reported for %s", path)
			continue
		}
		if !strings.Contains(p.Error(), msg) {
			t.Errorf("problem for %s:\n got %s\nwant it to contain %s", filepath.Base(path), p.Error(), msg)
		}
	}
	if len(problems) != len(want) {
		t.Errorf("%d problems, want %d: %v", len(problems), len(want), problems)
	}

	var got []string
	for _, e := range r.Components() {
		got = append(got, fmt.Sprintf("%s/%s@%s", e.Component.Kind, e.Component.Name, filepath.Base(e.Binary)))
	}
	wantList := "source/alpha@floe-plugin-alpha source/beta@floe-plugin-beta partitioner/gamma@floe-plugin-dupe sink/alpha@floe-plugin-alpha"
	if strings.Join(got, " ") != wantList {
		t.Errorf("Components() =\n %s\nwant\n %s", strings.Join(got, " "), wantList)
	}

	e, err := r.Lookup(sdk.KindSource, "org.example.AlphaSource")
	if err != nil || e.Binary != alpha || e.Component.Version != "1.2.3" || len(e.Checksum) != 32 {
		t.Errorf("Lookup by alias = %+v, %v", e, err)
	}
	if e, err := r.Lookup(sdk.KindSource, "beta"); err != nil || e.Binary != beta {
		t.Errorf("Lookup(beta) = %+v, %v", e, err)
	}
	_, err = r.Lookup(sdk.KindSource, "alhpa")
	if err == nil || err.Error() != `unknown source plugin "alhpa"; known: alpha, beta` || !errors.Is(err, registry.ErrUnknownPlugin) {
		t.Errorf("Lookup of an unknown name: %v", err)
	}
	_, err = r.Lookup(sdk.KindMaintenance, "iceberg-maintenance")
	if err == nil || !strings.Contains(err.Error(), "no maintenance plugins were found in plugin.path") {
		t.Errorf("Lookup of a kind with none: %v", err)
	}

	p, err := r.Start(context.Background(), e, client.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	comps, err := p.Describe(context.Background())
	if err != nil || len(comps) != 2 || comps[0].Name != "alpha" {
		t.Errorf("Describe of the started entry: %v, %v", comps, err)
	}
}

func TestScanCachesByChecksum(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	beta := install(t, "beta", filepath.Join(dir, "floe-plugin-beta"))
	r, problems := registry.Scan(context.Background(), []string{dir}, cacheDir, nil)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	e, err := r.Lookup(sdk.KindSource, "beta")
	if err != nil {
		t.Fatal(err)
	}

	// Tamper with the cached answer: a second scan must use it, not the binary.
	path := filepath.Join(cacheDir, registry.CacheFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), beta) {
		t.Errorf("the cache does not record where the binary was: %s", data)
	}
	write(t, path, strings.Replace(string(data), "beta source", "from the cache", 1), 0o644)
	r, _ = registry.Scan(context.Background(), []string{dir}, cacheDir, nil)
	if e, _ := r.Lookup(sdk.KindSource, "beta"); e.Component.Summary != "from the cache" {
		t.Errorf("second scan summary %q: the cache was not used", e.Component.Summary)
	}

	// A changed binary has a new checksum: asked again, and the old
	// entry's start is refused.
	install(t, "alpha", beta)
	if _, err := r.Start(context.Background(), e, client.StartOptions{}); err == nil ||
		!strings.Contains(err.Error(), "changed since it was scanned; restart floe or re-scan") {
		t.Errorf("start of a replaced binary: %v", err)
	}
	r, _ = registry.Scan(context.Background(), []string{dir}, cacheDir, nil)
	if _, err := r.Lookup(sdk.KindSink, "alpha"); err != nil {
		t.Errorf("the replaced binary was not described again: %v", err)
	}
	var doc struct {
		Binaries map[string]json.RawMessage `json:"binaries"`
	}
	data, _ = os.ReadFile(path)
	if err := json.Unmarshal(data, &doc); err != nil || len(doc.Binaries) != 1 {
		t.Errorf("the cache keeps %d binaries (%v), want only the one seen last", len(doc.Binaries), err)
	}

	// A damaged cache is ignored.
	write(t, path, "{not json", 0o644)
	r, problems = registry.Scan(context.Background(), []string{dir}, cacheDir, nil)
	if len(problems) > 0 || len(r.Components()) != 2 {
		t.Errorf("scan with a damaged cache: %v, %d components", problems, len(r.Components()))
	}
}

func TestScanCancelled(t *testing.T) {
	dir := t.TempDir()
	install(t, "beta", filepath.Join(dir, "floe-plugin-beta"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, problems := registry.Scan(ctx, []string{dir}, "", nil)
	if len(problems) != 1 || len(r.Components()) != 0 {
		t.Errorf("cancelled scan: %v, %d components", problems, len(r.Components()))
	}
}
