//go:build cgo && !hilock_system

#include "../../core/src/grid/sorted_set.c"
