// Command crash is a test plugin that exits before the handshake.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "crash: cannot load libfoo.so")
	os.Exit(4)
}
