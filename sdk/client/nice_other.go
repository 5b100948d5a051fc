//go:build !unix

package client

import "errors"

// setNice is not available off Unix.
func setNice(int, int) error {
	return errors.New("niceness is only supported on Unix; leave process.<kind>.nice unset")
}
