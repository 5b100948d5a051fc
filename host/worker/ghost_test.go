package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// An invalid PUT of a new connector, then a valid PUT of the same name
// while the first still validates: the second waits for the first's
// reservation. The first answers its validation error, the second creates
// the connector; it is listed, runs once, and DELETE leaves nothing
// running. Before the fix the second configured and started the released
// reservation, answered 404, and the connector ran unlisted (a ghost).
func TestInvalidThenValidPutLeavesNoGhost(t *testing.T) {
	fp := newFakePlugins()
	fp.badDelay = 60 * time.Millisecond
	w := newWorker(t, fp, t.TempDir())
	ctx := context.Background()
	for round := range 20 {
		bad := baseConfig()
		bad["tbl.path"] = "bad"
		errc := make(chan error, 1)
		go func() {
			_, _, err := w.PutConnectorConfig(ctx, "race", bad)
			errc <- err
		}()
		time.Sleep(10 * time.Millisecond)
		info, created, err := w.PutConnectorConfig(ctx, "race", baseConfig())
		var ve *ValidationError
		if first := <-errc; !errors.As(first, &ve) {
			t.Fatalf("round %d: invalid PUT answered %v, want its validation error", round, first)
		}
		if err != nil || !created || info.Name != "race" {
			t.Fatalf("round %d: valid PUT answered %+v created=%v %v, want the connector created", round, info, created, err)
		}
		if names := w.Connectors(context.Background()); !slices.Equal(names, []string{"race"}) {
			t.Fatalf("round %d: connectors %v, want [race]", round, names)
		}
		if err := w.DeleteConnector(ctx, "race"); err != nil {
			t.Fatalf("round %d: delete: %v", round, err)
		}
		waitFor(t, "every plugin process gone after the delete", func() bool { return fp.live.Load() == 0 })
	}
}

// Restarting a STOPPED connector answers as Connect does (no error): it
// stays STOPPED.
func TestRestartStoppedConnectorIsANoOp(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	ctx := context.Background()
	if _, err := w.CreateConnector(ctx, "s", baseConfig(), StateStopped); err != nil {
		t.Fatal(err)
	}
	before := fp.starts.Load() // validation's
	for _, flags := range [][2]bool{{false, false}, {true, false}, {true, true}} {
		st, err := w.RestartConnector(ctx, "s", flags[0], flags[1])
		if err != nil || st.Connector.State != StateStopped || len(st.Tasks) != 0 {
			t.Errorf("restart(includeTasks=%v, onlyFailed=%v) of a STOPPED connector: %+v %v, want STOPPED and no error", flags[0], flags[1], st, err)
		}
	}
	if n := fp.starts.Load() - before; n != 0 {
		t.Errorf("restarting a STOPPED connector started %d plugin processes", n)
	}
}

// Names no URL or file can hold are refused as bad input (400), not as a
// failure of the store (500); a config of many bad keys gets a bounded
// message.
func TestNamesAndHugeConfigs(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	ctx := context.Background()
	for _, name := range []string{".", "..", strings.Repeat("n", 251), strings.Repeat("é", 100)} {
		_, err := w.CreateConnector(ctx, name, baseConfig(), "")
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("create %.20q… (%d bytes): %v, want a validation error", name, len(name), err)
		}
	}
	if _, err := w.CreateConnector(ctx, strings.Repeat("n", 240), baseConfig(), StateStopped); err != nil {
		t.Errorf("a 240-byte name: %v", err)
	}
	cfg := baseConfig()
	for i := range 5000 {
		cfg[fmt.Sprintf("unknown.key.%06d.%s", i, strings.Repeat("x", 30))] = "v"
	}
	_, err := w.CreateConnector(ctx, "huge", cfg, "")
	if err == nil || len(err.Error()) > 64<<10 || !strings.Contains(err.Error(), "more errors") {
		t.Errorf("5000 unknown keys: a message of %d bytes, want at most 64 KiB saying how many more", len(fmt.Sprint(err)))
	}
}
