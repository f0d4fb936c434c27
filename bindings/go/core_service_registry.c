//go:build cgo && !hilock_system

#include "../../core/src/service/registry.c"
