//go:build cgo && !hilock_system

#include "../../core/src/base/sys.c"
