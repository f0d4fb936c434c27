//go:build go1.23

package hilock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// The map's iterators (Go 1.23): every entry once by range, a break,
// keys and values, and an error reported by the error function.
func TestGridMapIterators(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Map(name)
	const n = 1200
	entries := map[string][]byte{}
	for i := 0; i < n; i++ {
		entries[fmt.Sprintf("k%d", i)] = []byte(fmt.Sprintf("v%d", i))
	}
	if err := m.PutMap(ctx, entries); err != nil {
		t.Fatal(err)
	}
	all, errf := m.All(ctx)
	seen := map[string]bool{}
	for k, v := range all {
		if string(v) != "v"+string(k[1:]) || seen[string(k)] {
			t.Fatalf("%q = %q (seen %v)", k, v, seen[string(k)])
		}
		seen[string(k)] = true
	}
	if err := errf(); err != nil || len(seen) != n {
		t.Fatalf("All: %d entries, %v", len(seen), err)
	}
	count := 0
	for range all {
		count++
		if count == 5 {
			break
		}
	}
	if count != 5 || errf() != nil {
		t.Fatalf("break: %d %v", count, errf())
	}
	keys, kerr := m.Keys(ctx)
	values, verr := m.Values(ctx)
	nk, nv := 0, 0
	for range keys {
		nk++
	}
	for v := range values {
		if v[0] == 'v' {
			nv++
		}
	}
	if nk != n || nv != n || kerr() != nil || verr() != nil {
		t.Fatalf("keys %d values %d: %v %v", nk, nv, kerr(), verr())
	}
	r.do("DEL", name)
	r.do("RPUSH", name, "x")
	bad, berr := m.All(ctx)
	for range bad {
		t.Fatal("an entry of a list")
	}
	if err := berr(); err == nil || !strings.Contains(err.Error(), "another type") {
		t.Fatalf("wrong type: %v", err)
	}
}
