// Command floe-plugin-partitioners is the floe plugin binary offering the
// hash, roundrobin and skew-aware partitioners. floe starts it; it does not
// run on its own.
package main

import (
	"github.com/floehq/floe/plugins/partitioners"
	"github.com/floehq/floe/sdk"
)

func main() {
	sdk.Serve(partitioners.Components()...)
}
