//go:build hilock_bq

package main

// hilock's blocking queue: every call of the binding in this one place
// (names of issue 22: Client.BlockingQueue, Offer, Take with a context).

import (
	"context"

	hilock "github.com/hilock/hilock/bindings/go"
)

const hilockBuilt = true

func hilockQueue(url, name string) queue {
	c, err := hilock.Connect(context.Background(), url)
	if err != nil {
		die("%v", err)
	}
	q := c.BlockingQueue(name)
	return queue{
		offer: func(ctx context.Context, v []byte) error { _, err := q.Offer(ctx, v); return err },
		take:  func(ctx context.Context) ([]byte, error) { return q.Take(ctx) },
		close: func() { c.Close() },
	}
}
