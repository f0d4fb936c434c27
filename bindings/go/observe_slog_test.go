//go:build go1.21

package hilock_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

// recorder is a slog.Handler that keeps the records.
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.recs = append(h.recs, r)
	h.mu.Unlock()
	return nil
}
func (h *recorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recorder) WithGroup(string) slog.Handler      { return h }

func (h *recorder) find(event string) (slog.Record, map[string]string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.recs {
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		if attrs["event"] == event {
			return r, attrs, true
		}
	}
	return slog.Record{}, nil, false
}

func TestEventsToSlog(t *testing.T) {
	h := &recorder{}
	c := connect(t, hilock.WithWatchdogTimeout(time.Second), hilock.WithLogger(slog.New(h)),
		hilock.WithClientName("gotest-slog"))
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	r.do("DEL", name)
	<-m.Lost()
	var rec slog.Record
	var attrs map[string]string
	if !waitFor(5*time.Second, func() bool {
		var ok bool
		rec, attrs, ok = h.find("lost")
		return ok
	}) {
		t.Fatal("no lost record")
	}
	if rec.Level != slog.LevelWarn || attrs["lock"] != name || attrs["owner"] != m.Owner() ||
		attrs["status"] != "HL_ELOST" {
		t.Fatalf("lost record: %v %q %v", rec.Level, rec.Message, attrs)
	}
	_ = m.Release()

	// a reconnect: INFO
	killConns(t, r, "gotest-slog")
	if _, err := m.IsLocked(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(5*time.Second, func() bool {
		var ok bool
		rec, attrs, ok = h.find("reconnect")
		return ok
	}) {
		t.Fatal("no reconnect record")
	}
	if rec.Level != slog.LevelInfo || attrs["node"] == "" {
		t.Fatalf("reconnect record: %v %q %v", rec.Level, rec.Message, attrs)
	}
}

// Without an option the events go to slog.Default() as it is when they
// come.
func TestEventsToSlogDefault(t *testing.T) {
	h := &recorder{}
	old := slog.Default()
	slog.SetDefault(slog.New(h))
	t.Cleanup(func() { slog.SetDefault(old) })
	c := connect(t)
	m := c.Mutex(uniqueName(t))
	if _, err := m.TryLock(context.Background(), 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ForceUnlock(); err != nil {
		t.Fatal(err)
	}
	c.Close() // hands over what was queued
	if _, attrs, ok := h.find("lost"); !ok || attrs["lock"] != m.Name() {
		t.Fatalf("no lost record in slog.Default(): %v", attrs)
	}
}
