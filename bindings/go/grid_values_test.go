package hilock_test

import (
	"context"
	"fmt"
	"testing"
)

// Many values out of the grid (a page of a scan, a get_all) come out of
// one gathered buffer (hl_value_gather): byte-exact, empty values and NUL
// bytes intact, each value capped so that appending to one never writes
// into the next.
func TestGridManyValues(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	r.do("HSET", name, "k1", "v1", "k\x00b", "", "e", "\x00\xff")
	m := c.Map(name)
	got, err := m.GetAll(ctx, []byte("k1"), []byte("nope"), []byte("k\x00b"), []byte("e"))
	if err != nil || len(got) != 3 || string(got["k1"]) != "v1" ||
		got["k\x00b"] == nil || len(got["k\x00b"]) != 0 || string(got["e"]) != "\x00\xff" {
		t.Fatalf("GetAll: %q %v", got, err)
	}
	v := append(got["k1"], 'X')
	if string(v) != "v1X" || string(got["k1"]) != "v1" || string(got["e"]) != "\x00\xff" ||
		len(got["k\x00b"]) != 0 {
		t.Fatalf("append wrote into a neighbour: %q", got)
	}

	big := name + ":big"
	const n = 1500 // past the listpack: a hashtable, many pages
	args := []string{"HSET", big}
	for i := 0; i < n; i++ {
		args = append(args, fmt.Sprintf("f%d", i), fmt.Sprintf("%s\x00%d", "vvvvvvv"[:i%7], i))
	}
	r.do(args...)
	seen := map[string]string{}
	cursor, pages := []byte("0"), 0
	bm := c.Map(big)
	for {
		next, page, err := bm.Scan(ctx, cursor, 100, nil)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for i, e := range page {
			if _, dup := seen[string(e.Key)]; dup {
				t.Fatalf("%q seen twice", e.Key)
			}
			seen[string(e.Key)] = string(e.Value)
			if i+1 < len(page) {
				before := string(page[i+1].Key)
				_ = append(e.Value, 'X')
				if string(page[i+1].Key) != before {
					t.Fatalf("append wrote into the next key")
				}
			}
		}
		if string(next) == "0" {
			break
		}
		cursor = next
	}
	if pages < 3 || len(seen) != n {
		t.Fatalf("%d pages, %d entries", pages, len(seen))
	}
	for i := 0; i < n; i++ {
		if want := fmt.Sprintf("%s\x00%d", "vvvvvvv"[:i%7], i); seen[fmt.Sprintf("f%d", i)] != want {
			t.Fatalf("f%d = %q, want %q", i, seen[fmt.Sprintf("f%d", i)], want)
		}
	}
}
