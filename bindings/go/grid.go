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

// hlgo_object_call makes the object, runs op and frees the object: one
// cgo call per operation, the failure detail copied on this thread.
static hl_value *hlgo_object_call(hlgo_result *r, hl_client *c, int kind,
		const char *name, size_t name_len, int op, const hl_arg *args,
		size_t nargs, int64_t timeout_ms) {
	hl_object *o = NULL;
	hl_value *v = NULL;
	int rc;
	hlgo_reset(r);
	if ((rc = hl_object_new(&o, c, kind, name, name_len)) != HL_OK) {
		hlgo_fail(r, rc);
		return NULL;
	}
	rc = hl_object_call_ex(&v, o, op, args, nargs, timeout_ms, NULL);
	if (rc != HL_OK)
		hlgo_fail(r, rc);
	hl_object_free(o);
	return v;
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

// hlgo_handle_call runs op on such an object.
static hl_value *hlgo_handle_call(hlgo_result *r, hl_object *o, int op,
		const hl_arg *args, size_t nargs, int64_t timeout_ms) {
	hl_value *v = NULL;
	int rc;
	hlgo_reset(r);
	rc = hl_object_call_ex(&v, o, op, args, nargs, timeout_ms, NULL);
	if (rc != HL_OK)
		hlgo_fail(r, rc);
	return v;
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

static hl_arg *hlgo_args(size_t n) { return calloc(n ? n : 1, sizeof(hl_arg)); }
static void hlgo_arg_set(hl_arg *a, size_t i, int type, const void *bytes,
		size_t len, int64_t iv, double d) {
	a[i].type = type;
	a[i].bytes = bytes;
	a[i].len = len;
	a[i].i = iv;
	a[i].d = d;
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
		n := int(C.hl_value_len(p))
		items := make([]Value, n)
		for i := 0; i < n; i++ {
			items[i] = goValue(C.hlgo_value_at(p, C.size_t(i)))
		}
		return Value{kind: valueArray, items: items}
	}
	return Value{}
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
	opName = o.what + " " + opName
	if err := o.check(opName); err != nil {
		return Value{}, err
	}
	for _, a := range args {
		if a.err != "" {
			return Value{}, invalid(opName, a.err)
		}
	}
	ms, err := timeoutMs(ctx)
	if err != nil {
		return Value{}, err
	}
	var out Value
	r := o.c.call(func(p *cClient) opResult {
		// the arguments' bytes and the name in C memory: one block
		total := len(o.name)
		for _, a := range args {
			total += len(a.b)
		}
		block := C.malloc(C.size_t(total + 1))
		defer C.free(block)
		buf := unsafe.Slice((*byte)(block), total+1)
		n := copy(buf, o.name)
		cargs := C.hlgo_args(C.size_t(len(args)))
		defer C.free(unsafe.Pointer(cargs))
		for i, a := range args {
			var ptr unsafe.Pointer
			if a.typ == argTypeBytes {
				ptr = unsafe.Pointer(&buf[n])
				n += copy(buf[n:], a.b)
			}
			C.hlgo_arg_set(cargs, C.size_t(i), C.int(a.typ), ptr, C.size_t(len(a.b)),
				C.int64_t(a.i), C.double(a.d))
		}
		var cr cResult
		var v *C.hl_value
		if o.st != nil {
			o.st.mu.RLock()
			defer o.st.mu.RUnlock()
			if o.st.p == nil {
				return opResult{err: invalid(opName, "the object was closed")}
			}
			v = C.hlgo_handle_call(&cr, o.st.p, C.int(op), cargs, C.size_t(len(args)), C.int64_t(ms))
		} else {
			v = C.hlgo_object_call(&cr, p, C.int(o.kind), (*C.char)(block), C.size_t(len(o.name)),
				C.int(op), cargs, C.size_t(len(args)), C.int64_t(ms))
		}
		if cr.status != 0 {
			return opResult{err: resultError(opName, &cr)}
		}
		out = goValue(v)
		C.hl_value_free(v)
		return opResult{}
	})
	return out, r.err
}

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
// exist; without an expiry ttl is NoExpiry with ok true (as Mutex.TTL).
func (o *object) TTL(ctx context.Context) (ttl time.Duration, ok bool, err error) {
	v, err := o.common(ctx, 4, "ttl", 0)
	if err != nil || v == -2 {
		return 0, false, err
	}
	if v == -1 {
		return NoExpiry, true, nil
	}
	return time.Duration(v) * time.Millisecond, true, nil
}
