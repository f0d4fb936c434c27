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
#cgo LDFLAGS: -lhiredis -luuid -lssl -lcrypto -lpthread -lm
// Linux's fast calls (CMake finds them by feature checks; cgo cannot, so
// they are named here; elsewhere the core's portable fallbacks serve).
#cgo linux CFLAGS: -DHL_HAVE_CONDATTR_SETCLOCK -DHL_HAVE_EVENTFD -DHL_HAVE_GETRANDOM -DHL_HAVE_MSG_NOSIGNAL -DHL_HAVE_PIPE2 -DHL_HAVE_PTHREAD_SETNAME_NP_2 -DHL_HAVE_SOCK_CLOEXEC
*/
import "C"
