//go:build go1.23

package hilock_test

import (
	"context"
	"testing"
)

func TestGridSortedSetAll(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	s := c.SortedSet(uniqueName(t))
	for _, v := range []string{"b", "\U0001F600", "a", "\uffff"} {
		if _, err := s.Add(ctx, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for v, err := range s.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(v))
		if len(got) == 3 {
			break
		}
	}
	if len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "\U0001F600" {
		t.Fatalf("All: %q", got)
	}
}
