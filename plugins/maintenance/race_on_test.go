//go:build race

package maintenance

// raceDetector is true under -race, where everything runs several times
// slower and the racing tests widen their ingestion cadence to match.
const raceDetector = true
