//go:build cgo && !hilock_system

#include "../../core/src/router/router.c"
