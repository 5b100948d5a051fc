package client_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/floehq/floe/sdk/client"
)

// testPlugin and foreignPlugin are the paths of testdata/testplugin and
// testdata/foreign, built once by TestMain.
var testPlugin, foreignPlugin string

func TestMain(m *testing.M) {
	if path := os.Getenv("FLOE_TEST_HOST_PLUGIN"); path != "" {
		runTestHost(path) // the test binary as a floe host, for TestPluginExitsWithItsHost
		return
	}
	dir, err := os.MkdirTemp("", "floe-client-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testPlugin = filepath.Join(dir, "floe-plugin-clienttest")
	foreignPlugin = filepath.Join(dir, "floe-plugin-foreign")
	for pkg, out := range map[string]string{"./testdata/testplugin": testPlugin, "./testdata/foreign": foreignPlugin} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", pkg, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// runTestHost starts the plugin at path, prints its pid and waits to be
// killed.
func runTestHost(path string) {
	p, err := client.Start(context.Background(), client.StartOptions{Path: path})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(p.Pid())
	select {}
}
