//go:build !go1.20

package hilock_test

import "context"

// Go 1.19 has no context.Cause: only hilock.Cause is checked.
const haveStdCause = false

func stdCause(ctx context.Context) error { return nil }
