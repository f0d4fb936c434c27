#!/usr/bin/env python3
"""Generate the data grid's kinds from their specs (core/grid/*.kind).

One spec per kind (the format is in core/grid/README.md) becomes: the C
header of kinds, operations and typed calls; the C tables and typed calls;
one class per kind in Python, Go and Lua; and the reference in docs/grid.md.

    python3 tools/gridgen.py           write every output
    python3 tools/gridgen.py --check   fail (exit 1) when an output is stale
"""

import hashlib
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECS = os.path.join(ROOT, "core", "grid")

ARG_TYPES = {"bytes", "i64", "f64", "ms", "bool", "bytes*", "bound", "scored*"}
RESULTS = {"none", "bool", "i64", "f64", "bytes", "value", "list", "map", "scored",
           "page:list", "page:map", "page:scored", "i64?", "f64?"}
MODES = {"read", "idem", "once", "mark", "local"}

# A "mark" operation's script runs inside this frame: the executor adds a
# request marker key (the last key) and its lifetime in ms (the last
# argument). The first run keeps its answer there; a copy resent after a
# lost reply finds it and answers the same without running again. An
# answer of nil (or false) is not kept: such a script must have changed
# nothing then (a poll of an empty queue), so running it again is safe.
MARK_HEAD = """local hl_mark = table.remove(KEYS)
local hl_ttl = table.remove(ARGV)
local hl_seen = redis.call('get', hl_mark)
if hl_seen then return cmsgpack.unpack(hl_seen) end
local hl_r = (function()
"""
MARK_TAIL = """end)()
if hl_r then redis.call('set', hl_mark, cmsgpack.pack(hl_r), 'px', hl_ttl) end
return hl_r
"""


def c_result(result):
    return "HL_R_" + result.upper().replace(":", "_").replace("?", "_OPT")


class SpecError(Exception):
    pass


class Arg:
    def __init__(self, text, where):
        m = re.fullmatch(r"([a-z_][a-z0-9_]*):([a-z0-9]+\*?)(\?)?(?:=(\S+))?", text)
        if not m:
            raise SpecError("%s: bad argument %r" % (where, text))
        self.name, self.type, opt, self.default = m.groups()
        self.optional = bool(opt)
        if self.type not in ARG_TYPES:
            raise SpecError("%s: unknown type %r" % (where, self.type))
        if self.type in ("bytes*", "scored*") and (self.optional or self.default):
            raise SpecError("%s: a list is neither optional nor defaulted" % where)

    @property
    def list(self):
        return self.type in ("bytes*", "scored*")


class Op:
    def __init__(self, kind, index, name, args, result, where):
        self.kind, self.index, self.name = kind, index, name
        self.args, self.result, self.where = args, result, where
        self.mode = None
        self.template = None
        self.hand = False  # the bindings' idiom writes it by hand
        self.doc = []

    @property
    def number(self):
        return (self.kind.number << 8) | self.index

    @property
    def cname(self):
        return "HL_OP_%s_%s" % (self.kind.name.upper(), self.name.upper())


class Kind:
    def __init__(self, name, number, goname, java, where):
        self.name, self.number, self.goname, self.java = name, number, goname, java
        self.where = where
        self.doc, self.codec, self.keys = [], "", []
        self.ops, self.scripts = [], {}
        self.state = None  # the C hooks' name (hl__hooks_<state>): objects with state
        self.idiom = False  # the bindings subclass it (Python <GoName>Base)


def parse(path):
    return finish(parse_raw(path))


def include(kind, name, where):
    """`include <kind>`: another kind's operations and scripts, copied here
    (numbered from this point), so a deque is a queue and more."""
    other = parse_raw(os.path.join(SPECS, name + ".kind"))
    for o in other.ops:
        if o.name in [x.name for x in kind.ops]:
            raise SpecError("%s: op %s twice" % (where, o.name))
        c = Op(kind, len(kind.ops), o.name, o.args, o.result, o.where)
        c.mode, c.template, c.hand, c.doc = o.mode, list(o.template), o.hand, list(o.doc)
        kind.ops.append(c)
    for sname, src in other.scripts.items():
        if kind.scripts.get(sname, src) != src:
            raise SpecError("%s: script %s differs" % (where, sname))
        kind.scripts[sname] = src


def parse_raw(path):
    kind = None
    op = None
    script = None
    lines = open(path, encoding="utf-8").read().split("\n")
    for n, raw in enumerate(lines, 1):
        where = "%s:%d" % (os.path.relpath(path, ROOT), n)
        if script is not None:
            if raw == ".":
                kind.scripts[script[0]] = "\n".join(script[1]) + "\n"
                script = None
            else:
                script[1].append(raw)
            continue
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        rest = rest.strip()
        if word == "kind":
            p = rest.split()
            if len(p) != 4 or kind:
                raise SpecError("%s: kind <name> <number> <GoName> <Java>, once" % where)
            kind = Kind(p[0], int(p[1]), p[2], p[3], where)
        elif kind is None:
            raise SpecError("%s: the file starts with kind" % where)
        elif word == "doc":
            (op.doc if op else kind.doc).append(rest)
        elif word == "state":
            if not re.fullmatch(r"[a-z_][a-z0-9_]*", rest):
                raise SpecError("%s: state <name>" % where)
            kind.state = rest
        elif word == "codec":
            kind.codec = rest
        elif word == "keys":
            kind.keys = rest.split()
            for k in kind.keys:
                if k != "%name" and not re.fullmatch(r"\{name\}\S+|[^{}\s]+\{name\}", k):
                    raise SpecError("%s: a key is %%name, {name}<suffix> or <prefix>{name}" % where)
            if kind.keys[0] != "%name":
                raise SpecError("%s: the first key is %%name" % where)
        elif word == "op":
            m = re.fullmatch(r"([a-z_][a-z0-9_]*)((?: +[^ >-][^ ]*)*?)(?: +-> +([a-z0-9:]+\??))?", rest)
            if not m:
                raise SpecError("%s: op <name> <arg>... [-> result]" % where)
            name, args, result = m.group(1), m.group(2).split(), m.group(3) or "none"
            if result not in RESULTS:
                raise SpecError("%s: unknown result %r" % (where, result))
            op = Op(kind, len(kind.ops), name, [Arg(a, where) for a in args], result, where)
            if any(a.list for a in op.args[:-1]):
                raise SpecError("%s: only the last argument may be a list" % where)
            if name in [o.name for o in kind.ops]:
                raise SpecError("%s: op %s twice" % (where, name))
            kind.ops.append(op)
        elif word in MODES:
            if not op or op.mode:
                raise SpecError("%s: one mode line per op" % where)
            op.mode, op.template = word, rest.replace("[", " [ ").replace("]", " ] ").split()
        elif word == "idiom":
            kind.idiom = True
        elif word == "include":
            if op:
                raise SpecError("%s: include comes before the ops" % where)
            include(kind, rest, where)
        elif word == "hand":
            if not op:
                raise SpecError("%s: hand belongs to an op" % where)
            op.hand = True
        elif word == "script":
            script = (rest, [])
        else:
            raise SpecError("%s: unknown line %r" % (where, word))
    if script is not None:
        raise SpecError("%s: script %s has no end" % (path, script[0]))
    if not kind:
        raise SpecError("%s: no kind" % path)
    return kind


def finish(kind):
    for o in kind.ops:
        if not o.mode:
            raise SpecError("%s: op %s has no mode line" % (o.where, o.name))
        check_template(kind, o)
        if o.mode == "mark" and o.template[0] != "custom":
            # (custom C keeps its own marker, as the script frame below)
            if o.template[0] != "eval":
                raise SpecError("%s: a mark op runs a script (eval) or custom C" % o.where)
            src = kind.scripts[o.template[1]]
            o.template[1] += "_marked"
            kind.scripts[o.template[1]] = MARK_HEAD + src + MARK_TAIL
    used = {o.template[1] for o in kind.ops if o.template[0] == "eval"}
    if any(o.template[0] == "custom" for o in kind.ops):
        # its own C runs scripts by name: those it names are kept too
        refs = c_script_refs()
        used |= {s for s in kind.scripts if "hl__script_%s_%s" % (kind.name, s) in refs}
    for sname in list(kind.scripts):
        if sname not in used:  # only its marked copy runs, or an included
            del kind.scripts[sname]  # kind's C runs its own copy
    return kind


_C_REFS = None


def c_script_refs():
    """The hl__script_* names the core's C (but gen_kinds.c) uses."""
    global _C_REFS
    if _C_REFS is None:
        _C_REFS = set()
        src = os.path.join(ROOT, "core", "src")
        for d, _, files in os.walk(src):
            for f in files:
                if f.endswith(".c") and f != "gen_kinds.c":
                    with open(os.path.join(d, f), encoding="utf-8") as fh:
                        _C_REFS.update(re.findall(r"\bhl__script_\w+", fh.read()))
    return _C_REFS


def check_template(kind, op):
    names = {a.name: i for i, a in enumerate(op.args)}
    t = op.template
    if t[0] == "custom":
        if len(t) != 2:
            raise SpecError("%s: custom <function>" % op.where)
        return
    body = t
    if t[0] == "eval":
        if len(t) < 2 or t[1] not in kind.scripts:
            raise SpecError("%s: eval of an unknown script" % op.where)
        body = t[2:]
    depth = 0
    for w in body:
        if w == "[":
            depth += 1
        elif w == "]":
            depth -= 1
        elif w[0] in "$?":
            nm = w[1:].rstrip("*")
            if nm not in names:
                raise SpecError("%s: %s is not an argument" % (op.where, w))
        elif w[0] == "%":
            if not w[1:].isdigit() or int(w[1:]) >= len(kind.keys):
                raise SpecError("%s: %s is not a key" % (op.where, w))
        if depth < 0 or depth > 1:
            raise SpecError("%s: [ ] unbalanced or nested" % op.where)
    if depth:
        raise SpecError("%s: [ without ]" % op.where)


def load():
    kinds = []
    for f in sorted(os.listdir(SPECS)):
        if f.endswith(".kind"):
            kinds.append(parse(os.path.join(SPECS, f)))
    kinds.sort(key=lambda k: k.number)
    nums = [k.number for k in kinds]
    if len(set(nums)) != len(nums):
        raise SpecError("two kinds share a number")
    return kinds


# ---- C ---------------------------------------------------------------------

HEADER = "/* Generated by tools/gridgen.py from core/grid/ (the .kind files): do not edit. */\n"


def c_comment(lines, indent=""):
    text = " ".join(lines).strip()
    words = text.split()
    out, cur = [], indent + "/*"
    for w in words:
        if len(cur) + 1 + len(w) > 76:
            out.append(cur)
            cur = indent + " *"
        cur += " " + w
    out.append(cur + " */")
    return "\n".join(out) + "\n"


def c_params(op):
    p = []
    for a in op.args:
        if a.type in ("bytes",):
            p.append("const void *%s, size_t %s_len" % (a.name, a.name))
        elif a.type == "bytes*":
            p.append("const void *const *%s, const size_t *%s_lens, size_t %s_count" % (a.name, a.name, a.name))
        elif a.type == "scored*":  # count pairs: a score and a member
            p.append("const double *%s_scores, const void *const *%s, const size_t *%s_lens, size_t %s_count" % (
                a.name, a.name, a.name, a.name))
        elif a.type in ("i64", "ms"):
            p.append("int64_t %s" % a.name)
        elif a.type in ("f64", "bound"):
            p.append("double %s" % a.name)
        elif a.type == "bool":
            p.append("int %s" % a.name)
    return p


C_OUT = {"none": None, "bool": "int *out", "i64": "int64_t *out", "f64": "double *out",
         "i64?": "int64_t *out, int *found", "f64?": "double *out, int *found"}
for _r in RESULTS - set(C_OUT):
    C_OUT[_r] = "hl_value **out"


def c_signature(op):
    params = []
    if C_OUT[op.result]:
        params.append(C_OUT[op.result])
    params.append("hl_object *obj")
    params += c_params(op)
    return "int hl_%s_%s(%s)" % (op.kind.name, op.name, ", ".join(params))


def c_arg_doc(op):
    notes = []
    for a in op.args:
        if a.optional and a.type == "bytes":
            notes.append("%s may be NULL (absent)" % a.name)
        elif a.optional and a.type == "ms":
            notes.append("%s -1 when not given" % a.name)
        elif a.type == "bound":
            notes.append("%s may be -INFINITY or INFINITY" % a.name)
    out = {"none": "", "bool": "*out = 1 or 0. ", "i64": "*out (may be NULL). ",
           "i64?": "*found = 1 and *out, or *found = 0 (nil) and *out = 0 (either may be NULL). ",
           "f64?": "*found = 1 and *out, or *found = 0 (nil) and *out = 0 (either may be NULL). ",
           "f64": "*out (may be NULL). ", "bytes": "*out = a new value (HL_VALUE_BYTES, or HL_VALUE_NIL), the caller's to free (out may be NULL unless it reads). ",
           "value": "*out = a new value, the caller's to free (out may be NULL unless it reads). ",
           "list": "*out = a new HL_VALUE_ARRAY of the values (HL_VALUE_BYTES, HL_VALUE_NIL), the caller's to free. ",
           "map": "*out = a new HL_VALUE_ARRAY of keys and values, alternating, the caller's to free. ",
           "scored": "*out = a new HL_VALUE_ARRAY of members (HL_VALUE_BYTES) and scores (HL_VALUE_DOUBLE), alternating, the caller's to free. ",
           "page:list": "*out = a new HL_VALUE_ARRAY: the next cursor (HL_VALUE_BYTES, \"0\" after the last page) and the page as for a list result, the caller's to free. ",
           "page:map": "*out = a new HL_VALUE_ARRAY: the next cursor (HL_VALUE_BYTES, \"0\" after the last page) and the page as for a map result, the caller's to free. ",
           "page:scored": "*out = a new HL_VALUE_ARRAY: the next cursor (HL_VALUE_BYTES, \"0\" after the last page) and the page as for a scored result, the caller's to free. "}[op.result]
    mode = {"read": "", "idem": "", "once": "HL_EINDOUBT if its reply was lost after it may have run. ",
            "mark": "Sent again after a lost reply with a request marker: it runs once and answers as it did. ",
            "local": "No round trip. "}[op.mode]
    return out + ("; ".join(notes) + ". " if notes else "") + mode


def gen_header(kinds):
    o = [HEADER, "#ifndef HILOCK_GRID_KINDS_H\n#define HILOCK_GRID_KINDS_H\n\n"]
    o.append("/* The kinds of objects (hl_object_new). */\nenum {\n")
    o.append(",\n".join("\tHL_KIND_%s = %d" % (k.name.upper(), k.number) for k in kinds))
    o.append("\n};\n\n/* The operations (hl_object_call): kind << 8 | index. */\nenum {\n")
    ops = [op for k in kinds for op in k.ops]
    o.append(",\n".join("\t%s = 0x%04x" % (op.cname, op.number) for op in ops))
    o.append("\n};\n")
    for k in kinds:
        o.append("\n/* ---- %s (%s) ---- */\n\n" % (k.name, k.java))
        o.append(c_comment(k.doc))
        if k.state == "delayed":
            o.append("/* A new %s object named name (hl_object_new): this client's mover of the\n"
                     " * name starts (or counts it) and subscribes in the background. */\n" % k.name)
        elif k.state:
            o.append("/* A new %s object named name (hl_object_new): it subscribes, and waits\n"
                     " * until Redis confirmed it (HL_ETIMEDOUT if not). */\n" % k.name)
        else:
            o.append("/* A new %s object named name (hl_object_new). */\n" % k.name)
        o.append("HL_EXTERN int hl_%s_new(hl_object **out, hl_client *client,\n\t\tconst void *name, size_t name_len);\n" % k.name)
        for op in k.ops:
            o.append(c_comment(op.doc + [c_arg_doc(op)]))
            o.append("HL_EXTERN %s;\n" % c_signature(op))
    o.append("\n#endif\n")
    return "".join(o)


def c_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n\"\n\t\"") + '"'


def c_tokens(kind, op, words):
    """Template words as hl_tok initialisers."""
    names = {a.name: i for i, a in enumerate(op.args)}
    toks = []
    for w in words:
        if w == "[":
            # the group's arguments: every $x inside
            toks.append(None)
        elif w == "]":
            toks.append("{HL_TOK_END, 0, NULL}")
        elif w[0] == "$" and w.endswith("*"):
            toks.append("{HL_TOK_LIST, %d, NULL}" % names[w[1:-1]])
        elif w[0] == "$":
            toks.append("{HL_TOK_ARG, %d, NULL}" % names[w[1:]])
        elif w[0] == "?":
            toks.append("{HL_TOK_PRESENT, %d, NULL}" % names[w[1:]])
        elif w[0] == "%":
            toks.append("{HL_TOK_KEY, %d, NULL}" % int(w[1:]))
        else:
            toks.append("{HL_TOK_LIT, %d, %s}" % (len(w), c_str(w)))
    # a group opens with the first argument inside it
    out = []
    for i, t in enumerate(toks):
        if t is None:
            j = i + 1
            while not words[j].startswith("$"):
                j += 1
            out.append("{HL_TOK_OPT, %d, NULL}" % names[words[j][1:]])
        else:
            out.append(t)
    return out


def has_custom(k):
    return any(op.template[0] == "custom" for op in k.ops)


def script_prefix(k):
    """Scripts of a kind with C of its own are shared with it (grid.h)."""
    return ("hl__script_" + k.name) if has_custom(k) else k.name + "_script"


def script_decl(k):
    return "const hl_script_def" if has_custom(k) else "static const hl_script_def"


def script_cname(k, sname):
    return "%s_%s" % (script_prefix(k), sname)


def c_key(key):
    """A key in the C table: NULL for the name, the suffix of
    {name}<suffix>, or <prefix>{name} as it is (Redisson's prefixName)."""
    if key == "%name":
        return "NULL"
    if key.endswith("{name}"):
        return c_str(key)
    return c_str(key[len("{name}"):])


def key_doc(key):
    return key.replace("%name", "name").replace("%client", "<client id>")


def gen_c(kinds):
    o = [HEADER, "#include <stdlib.h>\n\n#include \"grid/grid.h\"\n\n"]
    customs = sorted({op.template[1] for k in kinds for op in k.ops if op.template[0] == "custom"})
    for fn in customs:
        o.append("int %s(hl_gridcall *call);\n" % fn)
    if customs:
        o.append("\n")
    states = sorted({k.state for k in kinds if k.state})
    for st in states:
        o.append("extern const hl_kindhooks hl__hooks_%s;\n" % st)
    if states:
        o.append("\n")
    for k in kinds:
        o.append("/* ---- %s ---- */\n\n" % k.name)
        for sname, src in sorted(k.scripts.items()):
            sha = hashlib.sha1(src.encode()).hexdigest()
            o.append("%s %s_%s = {\n\t\"%s.%s\", \"%s\",\n\t%s};\n\n" % (
                script_decl(k), script_prefix(k), sname, k.name, sname, sha, c_str(src)))
        for op in k.ops:
            pre = "%s_%s" % (k.name, op.name)
            if op.args:
                o.append("static const hl_argdef %s_args[] = {\n" % pre)
                for a in op.args:
                    t = {"bytes": "HL_T_BYTES", "i64": "HL_T_I64", "f64": "HL_T_F64", "ms": "HL_T_MS",
                         "bool": "HL_T_BOOL", "bytes*": "HL_T_LIST", "bound": "HL_T_BOUND",
                         "scored*": "HL_T_SCORED"}[a.type]
                    d = a.default or "0"
                    o.append("\t{\"%s\", %s, %d, %d, %s},\n" % (a.name, t, int(a.optional), int(a.default is not None), d))
                o.append("};\n")
            t = op.template
            if t[0] == "custom":
                continue
            if t[0] == "eval":
                body = t[2:]
                if "--" in body:
                    keys, args = body[:body.index("--")], body[body.index("--") + 1:]
                else:
                    keys, args = body, []
                toks = c_tokens(k, op, keys) + c_tokens(k, op, args)
                o.append("static const hl_tok %s_toks[] = {\n\t%s};\n" % (pre, ",\n\t".join(toks)))
            else:
                toks = c_tokens(k, op, t)
                o.append("static const hl_tok %s_toks[] = {\n\t%s};\n" % (pre, ",\n\t".join(toks)))
        o.append("\nstatic const hl_opdef %s_ops[] = {\n" % k.name)
        for op in k.ops:
            pre = "%s_%s" % (k.name, op.name)
            t = op.template
            mode = "HL_MODE_" + op.mode.upper()
            res = c_result(op.result)
            args = "%s_args" % pre if op.args else "NULL"
            if t[0] == "custom":
                o.append("\t{%s, \"%s\", %s, %s, %d, %s, NULL, 0, NULL, 0, %s},\n" % (
                    op.cname, op.name, mode, res, len(op.args), args, t[1]))
                continue
            if t[0] == "eval":
                body = t[2:]
                nkeys = body.index("--") if "--" in body else len(body)
                ntoks = len(c_tokens(k, op, body[:nkeys])) + len(c_tokens(k, op, body[nkeys + 1:] if "--" in body else []))
                script = "&%s_%s" % (script_prefix(k), t[1])
            else:
                nkeys = 0
                ntoks = len(t)
                script = "NULL"
            o.append("\t{%s, \"%s\", %s, %s, %d, %s, %s, %d, %s_toks, %d, NULL},\n" % (
                op.cname, op.name, mode, res, len(op.args), args, script, nkeys, pre, ntoks))
        o.append("};\n\n")
        o.append("static const char *const %s_keys[] = {%s};\n\n" % (
            k.name, ", ".join(c_key(key) for key in k.keys)))
    o.append("const hl_kinddef hl__grid_kinds[] = {\n")
    for k in kinds:
        hooks = ", &hl__hooks_%s" % k.state if k.state else ", NULL"
        o.append("\t{HL_KIND_%s, \"%s\", %d, %s_keys, %d, %s_ops%s},\n" % (
            k.name.upper(), k.name, len(k.keys), k.name, len(k.ops), k.name, hooks))
    o.append("};\nconst size_t hl__grid_nkinds = %d;\n\n" % len(kinds))
    # typed calls
    for k in kinds:
        o.append("int hl_%s_new(hl_object **out, hl_client *client, const void *name,\n\t\tsize_t name_len)\n{\n"
                 "\treturn hl_object_new(out, client, HL_KIND_%s, name, name_len);\n}\n\n" % (k.name, k.name.upper()))
        for op in k.ops:
            o.append(c_signature(op) + "\n{\n")
            n = len(op.args)
            lst = op.args[-1] if op.args and op.args[-1].list else None
            if lst:
                n -= 1  # the fixed arguments; the list's items follow them
                if n:
                    o.append("\thl_arg f[%d], *a = NULL;\n\tint rc;\n" % n)
                else:
                    o.append("\thl_arg *a = NULL;\n\tint rc;\n")
            elif n:
                o.append("\thl_arg a[%d];\n" % n)
            arr = "f" if lst else "a"
            for i, a in enumerate(op.args[:n]):
                if a.type == "bytes":
                    if a.optional:
                        o.append("\t" + arr + "[%d] = %s ? hl__arg_bytes(%s, %s_len) : hl__arg_none();\n" % (i, a.name, a.name, a.name))
                    else:
                        o.append("\t" + arr + "[%d] = hl__arg_bytes(%s, %s_len);\n" % (i, a.name, a.name))
                elif a.type == "ms" and a.optional:
                    o.append("\t" + arr + "[%d] = %s < 0 ? hl__arg_none() : hl__arg_int(%s);\n" % (i, a.name, a.name))
                elif a.type in ("i64", "ms", "bool"):
                    o.append("\t" + arr + "[%d] = hl__arg_int(%s);\n" % (i, a.name))
                elif a.type in ("f64", "bound"):
                    o.append("\t" + arr + "[%d] = hl__arg_double(%s);\n" % (i, a.name))
            call = {"none": "hl__grid_none(obj", "bool": "hl__grid_bool(out, obj", "i64": "hl__grid_i64(out, obj",
                    "f64": "hl__grid_f64(out, obj", "i64?": "hl__grid_i64_opt(out, found, obj",
                    "f64?": "hl__grid_f64_opt(out, found, obj"}.get(op.result, "hl__grid_value(out, obj")
            if lst and lst.type == "scored*":
                o.append("\tif ((rc = hl__arg_scored(&a, %s, %d, %s_scores, %s, %s_lens, %s_count)) != HL_OK)\n"
                         "\t\treturn rc;\n" % ("f" if n else "NULL", n, lst.name, lst.name, lst.name, lst.name))
                o.append("\trc = %s, %s, a, %d + 2 * %s_count);\n\tfree(a);\n\treturn rc;\n}\n\n" % (
                    call, op.cname, n, lst.name))
                continue
            if lst:
                o.append("\tif ((rc = hl__arg_list(&a, %s, %d, %s, %s_lens, %s_count)) != HL_OK)\n"
                         "\t\treturn rc;\n" % ("f" if n else "NULL", n, lst.name, lst.name, lst.name))
                o.append("\trc = %s, %s, a, %d + %s_count);\n\tfree(a);\n\treturn rc;\n}\n\n" % (
                    call, op.cname, n, lst.name))
                continue
            o.append("\treturn %s, %s, %s, %d);\n}\n\n" % (call, op.cname, "a" if n else "NULL", n))
    return "".join(o)


# ---- docs ------------------------------------------------------------------

def py_type(a):
    return {"bytes": "bytes | str", "i64": "int", "f64": "float", "ms": "float (seconds)", "bound": "float",
            "bool": "bool", "bytes*": "list of bytes | str", "scored*": "pairs of member and score"}[a.type]


def gen_doc(kinds):
    o = ["<!-- Generated by tools/gridgen.py from core/grid/*.kind: do not edit. -->\n",
         "# The data grid: objects\n\n",
         "Objects shared with Redisson (Java) on the same keys, in C, Python, Lua and Go. Every object has\n"
         "`delete`, `exists`, `expire`, `clear_expire` and `ttl`; each kind adds the operations below.\n"
         "Numbers in the tables are the C operation numbers (`HL_OP_*`, for `hl_object_call`).\n\n",
         "**Lost replies.** An operation marked *once* is never sent twice: when its reply is lost after\n"
         "it may have reached Redis, the call fails with in-doubt (`HL_EINDOUBT`, Python\n"
         "`hilock.OutcomeUnknown`, Go `hilock.ErrInDoubt`, Lua `nil, msg, \"HL_EINDOUBT\"`): Redis applied it once or\n"
         "not at all, never twice. *mark* operations (those that take an element out, or answer with\n"
         "what they replaced) are sent again with a request marker: a key `hilock_request:{name}:<id>`\n"
         "where the first run leaves its answer for as long as a resend may come (25 s with the default\n"
         "options), so a resend answers the same and nothing is taken twice or lost. *read* and *idem*\n"
         "operations are sent again (running them twice leaves the same state and answers the same).\n"
         "*local* operations make no round trip.\n\n"
         "**Failovers.** A write is answered once the master applied it; the grid does not wait for\n"
         "replicas (`WAIT`), as Redisson's objects do not (the client's `wait_replicas` is the lock family's).\n"
         "Replication is asynchronous, so a failover (Sentinel, Cluster) that promotes a replica the\n"
         "write had not reached yet loses it, though the call answered. Calls made after the failover\n"
         "go to the new master; a blocking take waits again there (docs/grid-blocking-queue.md).\n\n"
         "**Results of many values.** *list*: values in order (C an array of bytes or nil); *map*: keys\n"
         "and values (C alternating; Python a `dict`, Go a `map[string][]byte`, Lua a table); *scored*:\n"
         "members with their scores (C alternating bytes and doubles; Python `(member, score)` tuples,\n"
         "Go `[]ScoredEntry`, Lua `{member, score}` pairs); *page:...*: one page of a cursor (the next\n"
         "cursor, `0` after the last, and the page's values). The bindings iterate over pages for you.\n\n",
         "**Names per language.** C `hl_<kind>_<op>(...)`; Python `client.<kind>(name).<op>(...)`;\n"
         "Lua `client:<kind>(name):<op>(...)`; Go `client.<Kind>(name).<Op>(ctx, ...)`. Durations are\n"
         "milliseconds in C, seconds in Python and Lua, `time.Duration` in Go.\n\n"]
    for k in kinds:
        o.append("## %s (`%s`)\n\n%s\n\n" % (k.name, k.java, " ".join(k.doc)))
        o.append("- Keys: %s\n" % ", ".join("`%s`" % key_doc(key) for key in k.keys))
        o.append("- Java side: %s\n" % k.codec)
        if k.state == "delayed":
            o.append("- State in the client: making one starts (or counts in) the client's mover of the name, which\n"
                     "  subscribes in the background. Free it when done (C `hl_object_free`, Go `Close`, Lua\n"
                     "  `close`, Python `destroy` or dropping it): the last one stops the mover.\n")
        elif k.state:
            o.append("- State in the client: making one subscribes and waits for Redis's confirmation, so it can\n"
                     "  fail (C `hl_%s_new`; Python `client.%s(name)` raises; Go `o, err := client.%s(name)`;\n"
                     "  Lua `client:%s(name)` may return nil, message, code). Free it when done (C `hl_object_free`,\n"
                     "  Go `Close`, Lua `close`, Python `destroy` or dropping it).\n" % (k.name, k.name, k.goname, k.name))
        o.append("\n")
        o.append("| op | arguments | result | mode | what |\n|---|---|---|---|---|\n")
        for op in k.ops:
            args = ", ".join("`%s`%s: %s" % (a.name, "?" if a.optional else "", a.type) for a in op.args) or "-"
            o.append("| `%s` (0x%04x) | %s | %s | %s | %s |\n" % (op.name, op.number, args, op.result, op.mode, " ".join(op.doc)))
        o.append("\n")
    return "".join(o)


OUTPUTS = {
    "core/include/hilock/grid_kinds.h": gen_header,
    "core/src/grid/gen_kinds.c": gen_c,
    "docs/grid.md": gen_doc,
}


def register(path, fn):
    OUTPUTS[path] = fn


def cost(kinds):
    """Lines per kind: its spec, its own C, and what each binding has for
    it (generated, and hand-written beyond the shared idiom)."""
    def lines(rel):
        path = os.path.join(ROOT, rel)
        return sum(1 for _ in open(path, encoding="utf-8")) if os.path.exists(path) else 0

    def block(rel, start, end_markers):
        path = os.path.join(ROOT, rel)
        text = open(path, encoding="utf-8").read().split("\n")
        n, on = 0, False
        for line in text:
            if line.startswith(start):
                on = True
            elif on and any(line.startswith(m) for m in end_markers):
                on = False
            if on:
                n += 1
        return n

    def own_c(k):
        n = 0
        for f in os.listdir(os.path.join(ROOT, "core/src/grid")):
            stem = f[:-2]
            if not f.endswith(".c") or f == "gen_kinds.c":
                continue
            if stem in k.name or k.name.startswith(stem) or (stem == "highwayhash" and k.name == "bloom_filter"):
                n += lines("core/src/grid/" + f)
        return n

    out = ["| kind | spec | own C | Python gen / hand | Go gen / hand | Lua gen |",
           "|---|---|---|---|---|---|"]
    for k in kinds:
        spec = lines("core/grid/%s.kind" % k.name)
        pyclass = k.goname + "Base" if k.idiom or any(op.hand for op in k.ops) else k.goname
        py = block("bindings/python/src/hilock/_grid_gen.py", "class %s(" % pyclass, ["class "]) or 0
        pyh = lines("bindings/python/src/hilock/_grid_%s.py" % k.name)
        go = block("bindings/go/grid_gen.go", "// %s is Redisson" % k.goname,
                   ["// %s is Redisson" % o.goname for o in kinds if o is not k])
        goh = lines("bindings/go/grid_%s.go" % k.name)
        lua = block("bindings/lua/hilock_grid.lua", "\t-- %s (Redisson" % k.name,
                    ["\t-- %s (Redisson" % o.name for o in kinds if o is not k] + ["end"])
        out.append("| %s | %d | %d | %d / %d | %d / %d | %d |" % (k.name, spec, own_c(k), py, pyh, go, goh, lua))
    shared = ["", "Shared, hand-written once for every kind: core/src/grid/object.c %d, value.c %d; "
              "Python _grid.py %d; Go grid.go %d; Lua: the grid section of hilock.lua and hilock.i." % (
                  lines("core/src/grid/object.c"), lines("core/src/grid/value.c"),
                  lines("bindings/python/src/hilock/_grid.py"), lines("bindings/go/grid.go"))]
    return "\n".join(out + shared) + "\n"


def main(argv):
    if "--cost" in argv:
        print(cost(load()), end="")
        return 0
    check = "--check" in argv
    try:
        kinds = load()
    except SpecError as e:
        print("gridgen: %s" % e, file=sys.stderr)
        return 2
    # the bindings' generators live beside this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gridgen_bindings
    gridgen_bindings.register_all(register)
    stale = []
    for rel, fn in sorted(OUTPUTS.items()):
        path = os.path.join(ROOT, rel)
        text = fn(kinds)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != text:
            stale.append(rel)
            if not check:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
    if check and stale:
        print("gridgen: stale (run `make gridgen`): %s" % ", ".join(stale), file=sys.stderr)
        return 1
    if not check:
        for rel in stale:
            print("gridgen: wrote %s" % rel)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
