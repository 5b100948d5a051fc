package bench

// State carries measurements from one section to a later one in the
// same run: freshness produces at half the rate the kafka section
// measured.
type State struct {
	// KafkaRate is floe's median kafka → iceberg records/s, 0 when the
	// kafka section did not run (or failed).
	KafkaRate float64
}
