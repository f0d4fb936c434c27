//go:build !cgo

package hilock

// The binding calls the C library through cgo. Without cgo (CGO_ENABLED=0,
// or no C compiler found) the package cannot be built: this undefined name
// makes the first error say so, ahead of the cgo-only files' "undefined:
// cClient" and the like.
type hilockRequiresCgo hilock_requires_cgo__set_CGO_ENABLED_1_and_install_a_C_compiler
