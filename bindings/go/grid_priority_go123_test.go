//go:build go1.23

package hilock_test

import (
	"context"
	"testing"
)

func TestGridPriorityQueueValues(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	q := c.PriorityQueue(uniqueName(t))
	for _, v := range []string{"b", "\U0001F600", "a", "b", "\uffff"} {
		if _, err := q.Add(ctx, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for v, err := range q.Values(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(v))
		if len(got) == 4 {
			break
		}
	}
	if len(got) != 4 || got[0] != "a" || got[1] != "b" || got[2] != "b" || got[3] != "\U0001F600" {
		t.Fatalf("Values: %q", got)
	}
}
