//go:build cgo && !hilock_system

#include "../../core/src/grid/rate_limiter.c"
