//go:build cgo && !hilock_system

package hilock

// The default build compiles the C core itself, as go-sqlite3 does: each
// core_*.c file next to this one includes one of core/src's .c files (see
// core-sources.sh), so `go build` needs no installed libhilock, no
// pkg-config and no LD_LIBRARY_PATH. Only the core's own dependencies come
// from the system: hiredis, libuuid and OpenSSL (Debian: libhiredis-dev,
// uuid-dev, libssl-dev). Headers or libraries elsewhere (Homebrew...) are
// passed the usual way, in CGO_CFLAGS and CGO_LDFLAGS.
//
// The build tag hilock_system links an installed libhilock instead, found
// with pkg-config (cgo_system.go).

/*
#cgo CFLAGS: -I${SRCDIR}/../../core/include -I${SRCDIR}/../../core/src -D_GNU_SOURCE
#cgo LDFLAGS: -lhiredis -luuid -lssl -lcrypto -lpthread
*/
import "C"
