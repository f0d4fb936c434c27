//go:build cgo && !hilock_system

#include "../../core/src/router/nodes.c"
