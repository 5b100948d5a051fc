package runtime

import (
	"errors"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// Permanent reports whether err is a failure no restart can fix, so a
// restart policy must leave it FAILED for a human: a plugin refused its
// config, or marked the error sdk.Permanent (refused credentials, a
// dropped table, a record the table cannot hold while errors.tolerance
// is none). Everything else (an outage, a crash, a timeout) may heal.
func Permanent(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, sdk.ErrPermanent) {
		return true
	}
	var ce *client.Error
	return errors.As(err, &ce) && len(ce.ConfigErrors) > 0
}
