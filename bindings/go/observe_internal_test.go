package hilock

import "testing"

// The line the Go < 1.21 fallback handler prints (observe_log.go).
func TestEventLine(t *testing.T) {
	for _, c := range []struct {
		e    Event
		want string
	}{
		{Event{Type: EventLost, Message: "lock \"a\" was lost"}, "hilock: WARNING lost: lock \"a\" was lost"},
		{Event{Type: EventRenewalFailed, Message: "m"}, "hilock: WARNING renewal_failed: m"},
		{Event{Type: EventReconnect, Message: "m"}, "hilock: INFO reconnect: m"},
		{Event{Type: EventFailover, Message: "m"}, "hilock: INFO failover: m"},
	} {
		if got := eventLine(c.e); got != c.want {
			t.Errorf("eventLine(%v) = %q, want %q", c.e.Type, got, c.want)
		}
	}
}
