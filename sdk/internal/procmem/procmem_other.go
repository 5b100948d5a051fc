//go:build !linux

package procmem

// ReleaseNow does nothing on this system.
func ReleaseNow() (int64, error) { return 0, nil }
