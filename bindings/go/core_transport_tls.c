//go:build cgo && !hilock_system

#include "../../core/src/transport/tls.c"
