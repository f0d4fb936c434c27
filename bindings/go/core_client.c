//go:build cgo && !hilock_system

#include "../../core/src/client.c"
