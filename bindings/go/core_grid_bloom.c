//go:build cgo && !hilock_system

#include "../../core/src/grid/bloom.c"
