//go:build cgo && !hilock_system

#include "../../core/src/grid/blocking_queue.c"
