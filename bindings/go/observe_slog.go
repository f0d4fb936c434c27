//go:build go1.21

package hilock

import (
	"context"
	"log/slog"
)

// WithLogger sends the client's events to l (Go 1.21 or newer): a lost hold
// or a failed renewal at slog.LevelWarn, a reconnect or a failover at
// slog.LevelInfo, with the message and the attributes "event" (the type),
// and where set "lock", "owner", "node", "status". Without this option (and
// without WithEventHandler) the events go to slog.Default(). nil drops them.
func WithLogger(l *slog.Logger) Option {
	if l == nil {
		return WithEventHandler(nil)
	}
	return WithEventHandler(func(e Event) { logEvent(l, e) })
}

func logEvent(l *slog.Logger, e Event) {
	level := slog.LevelInfo
	if e.Warning() {
		level = slog.LevelWarn
	}
	attrs := make([]slog.Attr, 0, 5)
	attrs = append(attrs, slog.String("event", e.Type.String()))
	if e.Lock != "" {
		attrs = append(attrs, slog.String("lock", e.Lock))
	}
	if e.Owner != "" {
		attrs = append(attrs, slog.String("owner", e.Owner))
	}
	if e.Node != "" {
		attrs = append(attrs, slog.String("node", e.Node))
	}
	attrs = append(attrs, slog.String("status", e.Status))
	l.LogAttrs(context.Background(), level, "hilock: "+e.Message, attrs...)
}

// defaultEventHandler logs to slog.Default() as it is when each event comes
// (a program may set it after Connect).
func defaultEventHandler() func(Event) {
	return func(e Event) { logEvent(slog.Default(), e) }
}
