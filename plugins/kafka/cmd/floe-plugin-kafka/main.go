// Command floe-plugin-kafka is floe's kafka source plugin binary. The floe
// host starts it; it is not meant to be run by hand.
package main

import (
	"github.com/floehq/floe/plugins/kafka"
	"github.com/floehq/floe/sdk"
)

func main() { sdk.Serve(kafka.Component()) }
