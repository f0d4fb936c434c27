//go:build cgo && hilock_system

package hilock

// With the build tag hilock_system (`go build -tags hilock_system`) the
// package links an installed libhilock found with `pkg-config hilock`
// (PKG_CONFIG_PATH pointing at its prefix's lib/pkgconfig, or at a CMake
// build tree's pkgconfig directory) instead of compiling the core itself.

/*
#cgo pkg-config: hilock
*/
import "C"
