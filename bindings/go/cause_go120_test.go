//go:build go1.20

package hilock_test

import "context"

// With Go 1.20 or newer the standard context.Cause sees ErrLost too.
const haveStdCause = true

func stdCause(ctx context.Context) error { return context.Cause(ctx) }
