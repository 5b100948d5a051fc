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

// testPlugin is the path of testdata/testplugin, built once by TestMain.
var testPlugin string

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
	cmd := exec.Command("go", "build", "-o", testPlugin, "./testdata/testplugin")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build testdata/testplugin:", err)
		os.Exit(1)
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
