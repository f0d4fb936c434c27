//go:build cgo && !hilock_system

#include "../../core/src/prim/line.c"
