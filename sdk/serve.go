package sdk

// Serve runs the plugin binary's components over the floe plugin protocol.
// Call it from main; it returns when the host ends the process.
//
// (The protocol layer is being written; this placeholder keeps plugins
// compiling until it lands.)
func Serve(components ...Component) {
	for _, c := range components {
		if err := c.check(); err != nil {
			panic(err)
		}
	}
	panic("sdk.Serve: protocol layer not written yet")
}
