//go:build cgo && !hilock_system

#include "../../core/src/grid/gen_kinds.c"
