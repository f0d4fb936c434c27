package hilock

// The data grid's Go idiom: the object every kind embeds (Delete, Exists,
// Expire, ClearExpire, TTL), values in and out, and the one cgo call that
// every operation of every kind goes through. The kinds themselves
// (grid_gen.go) are generated from the specs in core/grid/; see
// docs/grid.md.

/*
#include <stdlib.h>
#include <string.h>
#include <hilock.h>
#include "hlgo.h"

// One argument as Go passes it: no pointer (Go memory may hold no Go
// pointer when C is handed it), its bytes at off in the call's buffer.
typedef struct hlgo_garg {
	int type;
	size_t off, len;
	int64_t i;
	double d;
} hlgo_garg;

// The value as the call left it: its type, a number in i or d, a bytes
// value's length. No pointer: cgo then checks nothing when Go hands it
// over (a struct with pointers is walked on every call).
typedef struct hlgo_gout {
	int type;
	int64_t i;
	double d;
	size_t n;
} hlgo_gout;

// hlgo_object_call makes the object, runs op and frees the object: one
// cgo call per operation (the arguments read from Go memory, buf: the
// name then the arguments' bytes), the failure detail copied on this
// thread. A bytes result of at most cap bytes is copied back into buf
// (the arguments are read by then) and freed here; a longer one, or a
// list, is returned for Go to copy, then free (NULL otherwise).
static hl_value *hlgo_object_call(hlgo_result *r, hlgo_gout *out, hl_client *c,
		hl_object *have, int kind, char *buf, size_t cap, size_t name_len,
		int op, const hlgo_garg *ga, size_t nargs, int64_t timeout_ms) {
	hl_arg stack[8], *args = stack;
	hl_object *o = NULL;
	hl_value *v = NULL;
	int rc;
	hlgo_reset(r);
	out->type = HL_VALUE_NIL;
	if (nargs > 8 && !(args = calloc(nargs, sizeof(hl_arg)))) {
		hlgo_fail(r, HL_ENOMEM);
		return NULL;
	}
	for (size_t i = 0; i < nargs; i++) {
		args[i].type = ga[i].type;
		args[i].bytes = ga[i].type == HL_ARG_BYTES ? buf + ga[i].off : NULL;
		args[i].len = ga[i].len;
		args[i].i = ga[i].i;
		args[i].d = ga[i].d;
	}
	if (have) {
		rc = hl_object_call_ex(&v, have, op, args, nargs, timeout_ms, NULL);
		if (rc != HL_OK)
			hlgo_fail(r, rc);
	} else if ((rc = hl_object_new(&o, c, kind, buf, name_len)) != HL_OK) {
		hlgo_fail(r, rc);
	} else {
		rc = hl_object_call_ex(&v, o, op, args, nargs, timeout_ms, NULL);
		if (rc != HL_OK)
			hlgo_fail(r, rc);
		hl_object_free(o);
	}
	if (args != stack)
		free(args);
	out->type = hl_value_type(v);
	if (out->type == HL_VALUE_BYTES) {
		const char *b = hl_value_bytes(v, &out->n);
		if (out->n > cap)
			return v;
		memcpy(buf, b, out->n);
	} else if (out->type == HL_VALUE_ARRAY) {
		return v;
	}
	out->i = hl_value_int(v);
	out->d = hl_value_double(v);
	hl_value_free(v);
	return NULL;
}

// hlgo_object_common runs a common operation: 0 delete, 1 exists, 2
// expire, 3 clear expire, 4 ttl; r->value = its answer.
static void hlgo_object_common(hlgo_result *r, hl_client *c, int kind,
		const char *name, size_t name_len, int what, int64_t ms) {
	hl_object *o = NULL;
	int rc, flag = 0;
	int64_t v = 0;
	hlgo_reset(r);
	if ((rc = hl_object_new(&o, c, kind, name, name_len)) != HL_OK) {
		hlgo_fail(r, rc);
		return;
	}
	switch (what) {
	case 0: rc = hl_object_delete(&flag, o); v = flag; break;
	case 1: rc = hl_object_exists(&flag, o); v = flag; break;
	case 2: rc = hl_object_expire(&flag, o, ms); v = flag; break;
	case 3: rc = hl_object_clear_expire(&flag, o); v = flag; break;
	default: rc = hl_object_ttl(&v, o); break;
	}
	if (rc != HL_OK)
		hlgo_fail(r, rc);
	r->value = v;
	hl_object_free(o);
}

// hlgo_object_make makes an object that lives as long as its Go object
// (a kind with state: an adder).
static hl_object *hlgo_object_make(hlgo_result *r, hl_client *c, int kind,
		const char *name, size_t name_len) {
	hl_object *o = NULL;
	int rc;
	hlgo_reset(r);
	if ((rc = hl_object_new(&o, c, kind, name, name_len)) != HL_OK)
		hlgo_fail(r, rc);
	return o;
}

// hlgo_local runs a local operation (no round trip) with at most one
// number: no allocation; a failure's detail is copied (malloc) for Go to
// free.
typedef struct hlgo_lres { int status; char *msg; } hlgo_lres;
static hlgo_lres hlgo_local(hl_object *o, int op, int nargs, int type,
		int64_t iv, double d) {
	hlgo_lres r = {HL_OK, NULL};
	hl_arg a;
	a.type = type;
	a.bytes = NULL;
	a.len = 0;
	a.i = iv;
	a.d = d;
	if ((r.status = hl_object_call(NULL, o, op, &a, (size_t)nargs)) != HL_OK)
		r.msg = strdup(hl_error_last());
	return r;
}

static int hlgo_value_type(const hl_value *v) { return hl_value_type(v); }
static const hl_value *hlgo_value_at(const hl_value *v, size_t i) { return hl_value_at(v, i); }

*/
import "C"

import (
	"context"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

const (
	argTypeBytes  = int(C.HL_ARG_BYTES)
	argTypeInt    = int(C.HL_ARG_INT)
	argTypeDouble = int(C.HL_ARG_DOUBLE)
	argTypeNone   = int(C.HL_ARG_NONE)
)

// arg is one argument of an operation.
type arg struct {
	typ int
	b   []byte
	i   int64
	d   float64
	err string // a bad argument, reported by the call
}

func argBytes(b []byte) arg { return arg{typ: argTypeBytes, b: b} }
func argOptBytes(b []byte) arg {
	if b == nil {
		return arg{typ: argTypeNone}
	}
	return argBytes(b)
}
func argInt(i int64) arg     { return arg{typ: argTypeInt, i: i} }
func argFloat(d float64) arg { return arg{typ: argTypeDouble, d: d} }
func argBool(t bool) arg {
	if t {
		return argInt(1)
	}
	return argInt(0)
}
func argDuration(d time.Duration) arg {
	if d <= 0 {
		return arg{typ: argTypeInt, i: int64(d / time.Millisecond), err: "a duration must be positive"}
	}
	return argInt(durationMs(d))
}
func argOptDuration(d time.Duration) arg {
	if d == 0 {
		return arg{typ: argTypeNone}
	}
	return argDuration(d)
}

// argScored is entries as alternating scores and members (ZADD's order).
func argScored(entries []ScoredEntry) []arg {
	out := make([]arg, 0, 2*len(entries))
	for _, e := range entries {
		out = append(out, argFloat(e.Score), argBytes(e.Member))
	}
	return out
}

func argList(items [][]byte) []arg {
	out := make([]arg, len(items))
	for i, b := range items {
		out[i] = argBytes(b)
	}
	return out
}

// Value is what an operation answered: nil, an integer, a float, bytes or a
// list of values. The accessors read it as the operation's result type.
type Value struct {
	kind  int // valueNil...
	i     int64
	f     float64
	b     []byte
	items []Value
}

const (
	valueNil = iota
	valueInt
	valueFloat
	valueBytes
	valueArray
)

// IsNil reports an absent value.
func (v Value) IsNil() bool { return v.kind == valueNil }

// Int is the value as an integer (0 when it is not one).
func (v Value) Int() int64 {
	if v.kind == valueFloat {
		return int64(v.f)
	}
	return v.i
}

// Float is the value as a float64.
func (v Value) Float() float64 {
	if v.kind == valueInt {
		return float64(v.i)
	}
	return v.f
}

// Bool is the value as a boolean (an integer other than 0).
func (v Value) Bool() bool { return v.Int() != 0 }

// Bytes is the value's bytes (nil when absent or not bytes).
func (v Value) Bytes() []byte { return v.b }

// Values is a list's elements.
func (v Value) Values() []Value { return v.items }

// Entry is a key and its value (a map's), in the order Redis gave them.
type Entry struct {
	Key, Value []byte
}

// ScoredEntry is a member of a scored sorted set with its score.
type ScoredEntry struct {
	Member []byte
	Score  float64
}

// list is a list result: each value's bytes (nil for an absent one).
func (v Value) list() [][]byte {
	out := make([][]byte, len(v.items))
	for i, it := range v.items {
		out[i] = it.b
	}
	return out
}

// mapOf is a map result (alternating keys and values; absent values left
// out).
func (v Value) mapOf() map[string][]byte {
	out := make(map[string][]byte, len(v.items)/2)
	for i := 0; i+1 < len(v.items); i += 2 {
		if !v.items[i+1].IsNil() {
			out[string(v.items[i].b)] = v.items[i+1].b
		}
	}
	return out
}

// entries is alternating keys and values as entries, in order.
func (v Value) entries() []Entry {
	out := make([]Entry, 0, len(v.items)/2)
	for i := 0; i+1 < len(v.items); i += 2 {
		out = append(out, Entry{v.items[i].b, v.items[i+1].b})
	}
	return out
}

// scored is alternating members and scores.
func (v Value) scored() []ScoredEntry {
	out := make([]ScoredEntry, 0, len(v.items)/2)
	for i := 0; i+1 < len(v.items); i += 2 {
		out = append(out, ScoredEntry{v.items[i].b, v.items[i+1].Float()})
	}
	return out
}

// page is a cursor's page: the next cursor and its items.
func (v Value) page() ([]byte, Value) {
	if len(v.items) != 2 {
		return []byte("0"), Value{kind: valueArray}
	}
	return v.items[0].b, v.items[1]
}

// scanAll calls fn with every item of a cursor, page by page (fetch gives
// the next cursor and a page; "0" after the last), until fn returns false,
// fetch fails or ctx ends. Memory stays one page whatever the size.
func scanAll[T any](ctx context.Context, fetch func(cursor []byte) ([]byte, []T, error), fn func(T) bool) error {
	cursor := []byte("0")
	for {
		next, items, err := fetch(cursor)
		if err != nil {
			return err
		}
		for _, it := range items {
			if !fn(it) {
				return nil
			}
		}
		if string(next) == "0" {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		cursor = next
	}
}

func goValue(p *C.hl_value) Value {
	switch int(C.hlgo_value_type(p)) {
	case int(C.HL_VALUE_INT):
		return Value{kind: valueInt, i: int64(C.hl_value_int(p))}
	case int(C.HL_VALUE_DOUBLE):
		return Value{kind: valueFloat, f: float64(C.hl_value_double(p))}
	case int(C.HL_VALUE_BYTES):
		var n C.size_t
		b := C.hl_value_bytes(p, &n)
		return Value{kind: valueBytes, b: C.GoBytes(unsafe.Pointer(b), C.int(n))}
	case int(C.HL_VALUE_ARRAY):
		return goArray(p)
	}
	return Value{}
}

// goArray is an array's elements: the library gathers its bytes in one
// call (hl_value_gather) into one Go buffer that the values share (each
// capped, so an append copies), so a page of 1000 entries costs three
// calls into C instead of three per element; the others (nil, numbers,
// nested arrays) are read one by one.
func goArray(p *C.hl_value) Value {
	n := int(C.hl_value_len(p))
	items := make([]Value, n)
	if n == 0 {
		return Value{kind: valueArray, items: items}
	}
	lens := make([]C.size_t, n)
	total := int(C.hl_value_gather(p, &lens[0], nil, 0))
	buf := make([]byte, total)
	if total > 0 {
		C.hl_value_gather(p, &lens[0], (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(total))
	}
	o := 0
	for i, l := range lens {
		if l == ^C.size_t(0) {
			items[i] = goValue(C.hlgo_value_at(p, C.size_t(i)))
			continue
		}
		e := o + int(l)
		items[i] = Value{kind: valueBytes, b: buf[o:e:e]}
		o = e
	}
	return Value{kind: valueArray, items: items}
}

// object is what every grid object is: a kind and a name on a client.
type object struct {
	c    *Client
	kind int
	what string
	name []byte
	err  error
	st   *gridState // a kind with state (an adder): its C object
}

// gridState is the C object of a kind with state, made with the Go object
// and freed by Close (or the garbage collector).
type gridState struct {
	mu sync.RWMutex
	p  *C.hl_object
}

func (s *gridState) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p != nil {
		C.hl_object_free(s.p)
		s.p = nil
	}
}

// newStateObject makes the C object at once (an adder subscribes there).
func newStateObject(c *Client, kind int, what, name string) (object, error) {
	o := newObject(c, kind, what, name)
	if err := o.check(what); err != nil {
		return o, err
	}
	st := &gridState{}
	r := c.call(func(p *cClient) opResult {
		cname := C.CBytes(o.name)
		defer C.free(cname)
		var cr cResult
		h := C.hlgo_object_make(&cr, p, C.int(kind), (*C.char)(cname), C.size_t(len(o.name)))
		if cr.status != 0 {
			return opResult{err: resultError(what, &cr)}
		}
		st.p = h
		return opResult{}
	})
	if r.err != nil {
		return o, r.err
	}
	runtime.SetFinalizer(st, (*gridState).free)
	o.st = st
	return o, nil
}

// Close frees what an object of a kind with state holds in the client (an
// adder stops taking part in sums: its adds no longer count). Later calls
// fail. A no-op for the other kinds. Safe to call more than once.
func (o *object) Close() error {
	if o.st != nil {
		o.st.free()
	}
	return nil
}

func newObject(c *Client, kind int, what, name string) object {
	return object{c: c, kind: kind, what: what, name: []byte(name), err: checkName(what, what, name)}
}

// Name is the object's name (its Redis key).
func (o *object) Name() string { return string(o.name) }

func (o *object) check(op string) error {
	if o.c == nil {
		return invalid(op, "a grid object must come from its Client method")
	}
	return o.err
}

// timeoutMs is what is left of ctx's deadline (-1: none), or its error.
func timeoutMs(ctx context.Context) (int64, error) {
	if ctx == nil {
		return -1, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	dl, ok := ctx.Deadline()
	if !ok {
		return -1, nil
	}
	left := time.Until(dl)
	if left <= 0 {
		return 0, context.DeadlineExceeded
	}
	return durationMs(left), nil
}

// call runs operation op with args: the one way every generated method
// reaches C. ctx's deadline bounds it (its round trips are bounded by the
// client's command timeout in any case).
func (o *object) call(ctx context.Context, op int, opName string, args ...arg) (Value, error) {
	defer runtime.KeepAlive(o)
	// the operation's full name ("map get") only for an error: no
	// allocation on the way that succeeds
	if o.c == nil || o.err != nil {
		return Value{}, o.check(o.opName(opName))
	}
	for _, a := range args {
		if a.err != "" {
			return Value{}, invalid(o.opName(opName), a.err)
		}
	}
	ms, err := timeoutMs(ctx)
	if err != nil {
		return Value{}, err
	}
	// The name and the arguments' bytes in one Go buffer, the arguments
	// in Go memory without pointers, from a pool: C reads them during the
	// one cgo call (no allocation, C or Go, per call; one cgo call for a
	// number's result).
	sc := gridScratchPool.Get().(*gridScratch)
	defer gridScratchPool.Put(sc)
	buf := append(sc.buf[:0], o.name...)
	buf = append(buf, 0)
	ga := sc.ga[:0]
	for _, a := range args {
		g := C.hlgo_garg{_type: C.int(a.typ), len: C.size_t(len(a.b)),
			i: C.int64_t(a.i), d: C.double(a.d)}
		if a.typ == argTypeBytes {
			g.off = C.size_t(len(buf))
			buf = append(buf, a.b...)
		}
		ga = append(ga, g)
	}
	if cap(buf) <= 4096 {
		sc.buf = buf
	}
	if cap(ga) <= 64 {
		sc.ga = ga
	}
	var gap *C.hlgo_garg
	if len(ga) > 0 {
		gap = &ga[0]
	}
	var out Value
	r := o.c.call(func(p *cClient) opResult {
		cr, g := &sc.c.cr, &sc.c.g
		var have *C.hl_object
		if o.st != nil {
			o.st.mu.RLock()
			defer o.st.mu.RUnlock()
			if o.st.p == nil {
				return opResult{err: invalid(o.opName(opName), "the object was closed")}
			}
			have = o.st.p
		}
		buf = buf[:cap(buf)]
		v := C.hlgo_object_call(cr, g, p, have, C.int(o.kind), (*C.char)(unsafe.Pointer(&buf[0])),
			C.size_t(len(buf)), C.size_t(len(o.name)), C.int(op), gap, C.size_t(len(ga)),
			C.int64_t(ms))
		switch {
		case v != nil: // a list, or bytes longer than buf
			out = goValue(v)
			C.hl_value_free(v)
		case int(g._type) == int(C.HL_VALUE_INT):
			out = Value{kind: valueInt, i: int64(g.i)}
		case int(g._type) == int(C.HL_VALUE_DOUBLE):
			out = Value{kind: valueFloat, f: float64(g.d)}
		case int(g._type) == int(C.HL_VALUE_BYTES): // copied back into buf
			b := make([]byte, int(g.n)) // never nil, even empty
			copy(b, buf)
			out = Value{kind: valueBytes, b: b}
		}
		if cr.status != 0 {
			return opResult{err: resultError(o.opName(opName), cr)}
		}
		return opResult{}
	})
	return out, r.err
}

// opName is an operation's full name in errors: "map get".
func (o *object) opName(op string) string { return o.what + " " + op }

// local runs a local operation (an adder's add: no round trip) of a kind
// with state, with at most one number argument, in one cgo call.
func (o *object) local(op int, opName string, args ...arg) error {
	var a arg
	if len(args) > 0 {
		a = args[0]
	}
	if o.st == nil || len(args) > 1 || a.err != "" || a.typ == argTypeBytes {
		_, err := o.call(nil, op, opName, args...)
		return err
	}
	o.st.mu.RLock()
	defer o.st.mu.RUnlock()
	if o.st.p == nil {
		return invalid(o.what+" "+opName, "the object was closed")
	}
	lr := C.hlgo_local(o.st.p, C.int(op), C.int(len(args)), C.int(a.typ), C.int64_t(a.i), C.double(a.d))
	if lr.status != 0 {
		var cr cResult
		cr.status = lr.status
		if lr.msg != nil {
			C.hlgo_copy(&cr.msg[0], lr.msg)
			C.free(unsafe.Pointer(lr.msg))
		}
		return resultError(o.what+" "+opName, &cr)
	}
	return nil
}

// gridScratch is what one call lends C: pooled, so that a call allocates
// nothing (the failure detail alone is 512 bytes).
type gridScratch struct {
	buf []byte
	ga  []C.hlgo_garg
	c   *gridOut // apart: C may see no Go pointer in what it is handed
}

type gridOut struct {
	cr cResult
	g  C.hlgo_gout
}

var gridScratchPool = sync.Pool{New: func() interface{} {
	return &gridScratch{buf: make([]byte, 0, 256), ga: make([]C.hlgo_garg, 0, 8),
		c: new(gridOut)}
}}

func (o *object) common(ctx context.Context, what int, opName string, ms int64) (int64, error) {
	defer runtime.KeepAlive(o)
	opName = o.what + " " + opName
	if err := o.check(opName); err != nil {
		return 0, err
	}
	if _, err := timeoutMs(ctx); err != nil {
		return 0, err
	}
	var v int64
	r := o.c.call(func(p *cClient) opResult {
		name := C.CBytes(o.name)
		defer C.free(name)
		var cr cResult
		C.hlgo_object_common(&cr, p, C.int(o.kind), (*C.char)(name), C.size_t(len(o.name)),
			C.int(what), C.int64_t(ms))
		if cr.status != 0 {
			return opResult{err: resultError(opName, &cr)}
		}
		v = int64(cr.value)
		return opResult{}
	})
	return v, r.err
}

// Delete deletes the object (every key of it): true if it existed.
func (o *object) Delete(ctx context.Context) (bool, error) {
	v, err := o.common(ctx, 0, "delete", 0)
	return v != 0, err
}

// Exists reports whether the object's key exists.
func (o *object) Exists(ctx context.Context) (bool, error) {
	v, err := o.common(ctx, 1, "exists", 0)
	return v != 0, err
}

// Expire lets the object expire after d: true if it exists.
func (o *object) Expire(ctx context.Context, d time.Duration) (bool, error) {
	if d <= 0 {
		return false, invalid(o.what+" expire", "the duration must be positive")
	}
	v, err := o.common(ctx, 2, "expire", durationMs(d))
	return v != 0, err
}

// ClearExpire removes the object's expiry: true if it had one.
func (o *object) ClearExpire(ctx context.Context) (bool, error) {
	v, err := o.common(ctx, 3, "clear expire", 0)
	return v != 0, err
}

// TTL is the object's remaining time to live. ok is false when it does not
// exist; without an expiry ttl is -1 with ok true (as Mutex.TTL).
func (o *object) TTL(ctx context.Context) (ttl time.Duration, ok bool, err error) {
	v, err := o.common(ctx, 4, "ttl", 0)
	if err != nil || v == -2 {
		return 0, false, err
	}
	if v == -1 {
		return -1, true, nil
	}
	return time.Duration(v) * time.Millisecond, true, nil
}
