package hilock_test

import (
	"errors"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

// A lost hold is not held any more: errors.Is(err, ErrNotHeld) holds for
// it, and errors.Is(err, ErrLost) still tells it apart.
func TestLostMatchesNotHeld(t *testing.T) {
	if !errors.Is(hilock.ErrLost, hilock.ErrNotHeld) {
		t.Fatal("ErrLost does not match ErrNotHeld")
	}
	if errors.Is(hilock.ErrNotHeld, hilock.ErrLost) {
		t.Fatal("ErrNotHeld matches ErrLost")
	}
	c := fastClient(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	lost := m.Lost()
	r.do("DEL", name)
	select {
	case <-lost:
	case <-time.After(8 * time.Second):
		t.Fatal("the loss was not seen")
	}
	err := m.Release()
	var he *hilock.Error
	if !errors.Is(err, hilock.ErrLost) || !errors.Is(err, hilock.ErrNotHeld) ||
		!errors.As(err, &he) || he.Name != "HL_ELOST" {
		t.Fatalf("Release of a lost hold: %v, want HL_ELOST matching ErrLost and ErrNotHeld", err)
	}
	if errors.Is(err, hilock.ErrInDoubt) || errors.Is(err, hilock.ErrClosed) {
		t.Fatalf("%v matches an unrelated sentinel", err)
	}
	err = m.Release() // never held now: not lost
	if !errors.Is(err, hilock.ErrNotHeld) || errors.Is(err, hilock.ErrLost) {
		t.Fatalf("Release of nothing: %v, want ErrNotHeld only", err)
	}
}
