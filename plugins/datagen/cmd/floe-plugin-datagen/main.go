// Command floe-plugin-datagen is floe's datagen source plugin binary. The
// floe host starts it; it is not meant to be run by hand.
package main

import (
	"github.com/floehq/floe/plugins/datagen"
	"github.com/floehq/floe/sdk"
)

func main() { sdk.Serve(datagen.Component()) }
