//go:build cgo && !hilock_system

#include "../../core/src/base/slot.c"
