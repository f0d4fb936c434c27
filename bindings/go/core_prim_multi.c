//go:build cgo && !hilock_system

#include "../../core/src/prim/multi.c"
