//go:build !go1.21

package hilock

import "log"

// defaultEventHandler prints each event with the standard log package (Go
// before 1.21 has no log/slog; see eventLine). WithEventHandler replaces it.
func defaultEventHandler() func(Event) {
	return func(e Event) { log.Print(eventLine(e)) }
}
