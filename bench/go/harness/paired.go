package harness

// The paired scenario: the uncontended pair (a Locker's Lock and Unlock)
// in 5 ms slices that alternate, in this process, with slices of the C
// floor (libhlfloor, bench/floor.h's hlfloor_run: hilock's scripts through
// raw hiredis), loaded with dlopen, as C, Python and Lua measure (1).
//
//	PROG URL paired SECONDS FLOORLIB

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef void *(*hlf_open)(const char *, const char *, char *, size_t);
typedef long long (*hlf_run)(void *, double, double *);
static hlf_open p_open;
static hlf_run p_run;

static const char *pfloor_load(const char *path) {
	void *h = dlopen(path, RTLD_NOW);
	if (!h)
		return dlerror();
	p_open = (hlf_open)dlsym(h, "hlfloor_open");
	p_run = (hlf_run)dlsym(h, "hlfloor_run");
	if (!p_open || !p_run)
		return "libhlfloor has no hlfloor_open or hlfloor_run";
	return NULL;
}
static void *pfloor_open(const char *url, const char *name, char *err, size_t n) {
	return p_open(url, name, err, n);
}
static long long pfloor_run(void *f, double s, double *el) { return p_run(f, s, el); }
*/
import "C"

import (
	"fmt"
	"strconv"
	"time"
	"unsafe"
)

const (
	pairedSlice  = 5 * time.Millisecond // as bench/hlbench.c's paired
	pairedWarmup = 300 * time.Millisecond
)

func pairedDie(f string, a ...interface{}) {
	die(fmt.Errorf("paired: "+f, a...))
}

// paired fills out; args: SECONDS FLOORLIB.
func paired(out map[string]interface{}, newLock Factory, lib, url string, args []string) {
	if len(args) != 2 {
		pairedDie("usage: URL paired SECONDS FLOORLIB")
	}
	secs, err := strconv.ParseFloat(args[0], 64)
	if err != nil || secs <= 0 {
		pairedDie("bad SECONDS %q", args[0])
	}
	clib := C.CString(args[1])
	defer C.free(unsafe.Pointer(clib))
	if e := C.pfloor_load(clib); e != nil {
		pairedDie("%s", C.GoString(e))
	}
	name := "bench:go:paired:" + lib
	curl, cname := C.CString(url), C.CString(name)
	defer C.free(unsafe.Pointer(curl))
	defer C.free(unsafe.Pointer(cname))
	var errbuf [256]C.char
	f := C.pfloor_open(curl, cname, &errbuf[0], 256)
	if f == nil {
		pairedDie("floor: %s", C.GoString(&errbuf[0]))
	}
	floor := func(d time.Duration) (int64, time.Duration) {
		var el C.double
		n := C.pfloor_run(f, C.double(d.Seconds()), &el)
		if n < 0 {
			pairedDie("the floor failed")
		}
		return int64(n), time.Duration(float64(el) * float64(time.Second))
	}
	l := newLock(name)
	pairs := func(d time.Duration) (int64, time.Duration) {
		var n int64
		t0 := time.Now()
		for {
			el := time.Since(t0)
			if el >= d {
				return n, el
			}
			if err := l.Lock(); err != nil {
				pairedDie("lock: %v", err)
			}
			if err := l.Unlock(); err != nil {
				pairedDie("unlock: %v", err)
			}
			n++
		}
	}
	floor(pairedWarmup)
	pairs(pairedWarmup)
	var nf, nh int64
	var tf, th time.Duration
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for time.Now().Before(end) {
		n, el := floor(pairedSlice)
		nf, tf = nf+n, tf+el
		n, el = pairs(pairedSlice)
		nh, th = nh+n, th+el
	}
	out["scenario"] = "paired"
	out["floor_pairs_per_s"] = float64(nf) / tf.Seconds()
	// the library's pairs, under the key C's, Python's and Lua's use
	out["hilock_pairs_per_s"] = float64(nh) / th.Seconds()
}
