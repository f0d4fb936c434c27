//go:build cgo && !hilock_system

#include "../../core/src/grid/delayed.c"
