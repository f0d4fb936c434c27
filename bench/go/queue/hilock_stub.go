//go:build !hilock_bq

package main

// Without the build tag hilock_bq (bench/grid_queue.py sets it when the Go
// binding has Client.BlockingQueue), hilock's row says "not built".
const hilockBuilt = false

func hilockQueue(url, name string) queue {
	die("not built")
	return queue{}
}
