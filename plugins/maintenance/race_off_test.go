//go:build !race

package maintenance

const raceDetector = false
