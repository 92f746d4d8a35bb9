/* The jsonl fast lane: runs of DCP items of one stream, straight from bytes to lines.
 *
 * dcpinspect.engines.lane calls scan() with a run of whole MCBP frames and the state of
 * the stream their opaque names. scan() goes frame by frame while every frame is a plain
 * DCP_MUTATION or DCP_DELETION of that stream, or a snapshot marker that opens the next
 * snapshot of it, that the Python path would decode without a problem and judge without a
 * finding (no frame rule, no stream rule), writes the jsonl
 * line the Python path writes for it, and stops at the first frame it cannot vouch for:
 * that frame, and everything after it, goes the ordinary way. Declining is always safe.
 * The lines come back as ASCII bytes, each ending in a newline.
 *
 * The extras layouts come from the layout tables (lane.py passes them in); the record
 * keys and their order are those of outputs/jsonl.frame_record. tests/test_lane.py checks
 * every line against the Python path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* -- a growable output buffer ------------------------------------------------------ */

typedef struct {
    char *p;
    size_t len, cap;
} Out;

/* What the statistics count of a frame scan() took (families/mcbp/stats.py's RUN_FRAME, native
 * order): its opcode, size and stream id (-1: none), and an item's seqno (a) or a
 * marker's start, end and snapshot type (a, b, c). */
typedef struct {
    uint64_t op, size;
    int64_t sid;
    uint64_t a, b, c;
} Counted;

static int out_grow(Out *o, size_t need) {
    if (o->len + need <= o->cap)
        return 0;
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + need)
        cap *= 2;
    char *p = PyMem_Realloc(o->p, cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->p = p;
    o->cap = cap;
    return 0;
}

static int out_put(Out *o, const char *s, size_t n) {
    if (out_grow(o, n) < 0)
        return -1;
    memcpy(o->p + o->len, s, n);
    o->len += n;
    return 0;
}

#define PUT_LIT(o, s) out_put((o), (s), sizeof(s) - 1)

static int out_u64(Out *o, uint64_t v) {
    char tmp[24];
    int i = 24;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return out_put(o, tmp + i, 24 - i);
}

static const char HEX[] = "0123456789abcdef";

/* ASCII text as a JSON string, as json.dumps(ensure_ascii=True) writes it */
static int out_json_ascii(Out *o, const uint8_t *s, size_t n) {
    if (out_grow(o, n * 6 + 2) < 0)
        return -1;
    char *w = o->p + o->len;
    *w++ = '"';
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            *w++ = (char)c;
            continue;
        }
        *w++ = '\\';
        switch (c) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '\n': *w++ = 'n'; break;
        case '\r': *w++ = 'r'; break;
        case '\t': *w++ = 't'; break;
        case '\b': *w++ = 'b'; break;
        case '\f': *w++ = 'f'; break;
        default:
            *w++ = 'u'; *w++ = '0'; *w++ = '0';
            *w++ = HEX[c >> 4]; *w++ = HEX[c & 15];
        }
    }
    *w++ = '"';
    o->len = (size_t)(w - o->p);
    return 0;
}

static int out_hex(Out *o, const uint8_t *s, size_t n) {
    if (out_grow(o, n * 2 + 2) < 0)
        return -1;
    char *w = o->p + o->len;
    *w++ = '"';
    for (size_t i = 0; i < n; i++) {
        *w++ = HEX[s[i] >> 4];
        *w++ = HEX[s[i] & 15];
    }
    *w++ = '"';
    o->len = (size_t)(w - o->p);
    return 0;
}

/* -- strict JSON, as values.json_text_ok judges ASCII text ---------------------------- */

enum { J_BAD = 0, J_OK = 1, J_DEEP = -1 };
#define MAX_DEPTH 64

typedef struct {
    const uint8_t *s;
    size_t n, i;
    int deep;
} J;

static void j_ws(J *j) {
    while (j->i < j->n) {
        uint8_t c = j->s[j->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        j->i++;
    }
}

static int is_hex(uint8_t c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int j_string(J *j) { /* at the opening quote */
    j->i++;
    while (j->i < j->n) {
        uint8_t c = j->s[j->i++];
        if (c == '"')
            return 1;
        if (c < 0x20)
            return 0;
        if (c == '\\') {
            if (j->i >= j->n)
                return 0;
            c = j->s[j->i++];
            if (c == 'u') {
                if (j->i + 4 > j->n)
                    return 0;
                for (int k = 0; k < 4; k++)
                    if (!is_hex(j->s[j->i + k]))
                        return 0;
                j->i += 4;
            } else if (!strchr("\"\\/bfnrt", c) || c == 0) {
                return 0;
            }
        }
    }
    return 0;
}

static int j_digits(J *j) {
    size_t start = j->i;
    while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9')
        j->i++;
    return j->i > start;
}

static int j_number(J *j) {
    if (j->s[j->i] == '-')
        j->i++;
    if (j->i >= j->n)
        return 0;
    size_t first = j->i;
    if (j->s[j->i] == '0')
        j->i++;
    else if (!j_digits(j))
        return 0;
    size_t digits = j->i - first;
    int fraction = 0;
    if (j->i + 1 < j->n && j->s[j->i] == '.' && j->s[j->i + 1] >= '0' && j->s[j->i + 1] <= '9') {
        j->i++;
        j_digits(j);
        fraction = 1;
    }
    if (j->i < j->n && (j->s[j->i] == 'e' || j->s[j->i] == 'E')) {
        size_t back = j->i;
        j->i++;
        if (j->i < j->n && (j->s[j->i] == '+' || j->s[j->i] == '-'))
            j->i++;
        if (!j_digits(j))
            j->i = back; /* not part of the number; what follows decides */
        else
            fraction = 1;
    }
    if (!fraction && digits > 4000) {
        j->deep = 1; /* int() of it may exceed sys.get_int_max_str_digits(): leave it to Python */
        return 0;
    }
    return 1;
}

static int j_value(J *j, int depth);

static int j_word(J *j, const char *w) {
    size_t n = strlen(w);
    if (j->i + n > j->n || memcmp(j->s + j->i, w, n) != 0)
        return 0;
    j->i += n;
    return 1;
}

/* an object (keyed: "name": value pairs) or an array, at its opening bracket */
static int j_container(J *j, int depth, uint8_t close, int keyed) {
    j->i++;
    j_ws(j);
    if (j->i < j->n && j->s[j->i] == close) {
        j->i++;
        return 1;
    }
    for (;;) {
        if (keyed) {
            if (j->i >= j->n || j->s[j->i] != '"' || !j_string(j))
                return 0;
            j_ws(j);
            if (j->i >= j->n || j->s[j->i] != ':')
                return 0;
            j->i++;
            j_ws(j);
        }
        if (!j_value(j, depth + 1))
            return 0;
        j_ws(j);
        if (j->i >= j->n)
            return 0;
        if (j->s[j->i] == close) {
            j->i++;
            return 1;
        }
        if (j->s[j->i] != ',')
            return 0;
        j->i++;
        j_ws(j);
    }
}

static int j_value(J *j, int depth) {
    if (j->i >= j->n)
        return 0;
    if (depth > MAX_DEPTH) {
        j->deep = 1;
        return 0;
    }
    uint8_t c = j->s[j->i];
    if (c == '"')
        return j_string(j);
    if (c == '{' || c == '[')
        return j_container(j, depth, c == '{' ? '}' : ']', c == '{');
    if (c == '-' || (c >= '0' && c <= '9'))
        return j_number(j);
    return j_word(j, "true") || j_word(j, "false") || j_word(j, "null");
}

static int json_valid(const uint8_t *s, size_t n) {
    J j = {s, n, 0, 0};
    j_ws(&j);
    int ok = j_value(&j, 0);
    if (j.deep)
        return J_DEEP;
    if (!ok)
        return J_BAD;
    j_ws(&j);
    return j.i == n ? J_OK : J_BAD;
}

/* -- raw snappy blocks, as codecs/snappy.inflate takes them ------------------------------ */

/* The uncompressed bytes of a raw snappy block into a new buffer (PyMem; *out), their
 * length; -1 for anything inflate() would refuse or this decoder does not vouch for. */
static Py_ssize_t snappy_inflate(const uint8_t *s, size_t n, size_t max, uint8_t **out) {
    uint64_t want = 0;
    size_t i = 0;
    for (;; i++) {
        if (i >= n || i >= 5)
            return -1;
        want |= (uint64_t)(s[i] & 0x7f) << (7 * i);
        if (!(s[i] & 0x80))
            break;
    }
    i++;
    if (want > 0xFFFFFFFFu || want > max)
        return -1;
    uint8_t *o = PyMem_Malloc(want ? (size_t)want : 1);
    if (o == NULL)
        return -1;
    size_t len = 0;
    while (i < n) {
        uint8_t tag = s[i++];
        size_t run, offset = 0;
        if ((tag & 3) == 0) { /* literal */
            run = (size_t)(tag >> 2);
            if (run >= 60) {
                size_t extra = run - 59;
                if (i + extra > n)
                    goto bad;
                run = 0;
                for (size_t k = 0; k < extra; k++)
                    run |= (size_t)s[i + k] << (8 * k);
                i += extra;
            }
            run += 1;
            if (i + run > n || len + run > want)
                goto bad;
            memcpy(o + len, s + i, run);
            i += run;
            len += run;
            continue;
        }
        if ((tag & 3) == 1) {
            if (i + 1 > n)
                goto bad;
            run = 4 + ((tag >> 2) & 7);
            offset = ((size_t)(tag >> 5) << 8) | s[i];
            i += 1;
        } else if ((tag & 3) == 2) {
            if (i + 2 > n)
                goto bad;
            run = (size_t)(tag >> 2) + 1;
            offset = (size_t)s[i] | ((size_t)s[i + 1] << 8);
            i += 2;
        } else {
            if (i + 4 > n)
                goto bad;
            run = (size_t)(tag >> 2) + 1;
            offset = (size_t)s[i] | ((size_t)s[i + 1] << 8) | ((size_t)s[i + 2] << 16) | ((size_t)s[i + 3] << 24);
            i += 4;
        }
        if (offset == 0 || offset > len || len + run > want)
            goto bad;
        for (size_t k = 0; k < run; k++, len++) /* may overlap itself: byte by byte */
            o[len] = o[len - offset];
    }
    if (len != want)
        goto bad;
    *out = o;
    return (Py_ssize_t)len;
bad:
    PyMem_Free(o);
    return -1;
}

/* -- frames ------------------------------------------------------------------------ */

static inline uint32_t be16(const uint8_t *p) { return ((uint32_t)p[0] << 8) | p[1]; }
static inline uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t beN(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* codecs/leb128.decode_uleb128: canonical, at most 5 bytes, a u32; 0: not a valid prefix */
static int leb128(const uint8_t *p, size_t n, uint64_t *value) {
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < 5; i++) {
        v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (p[i] & 0x80)
            continue;
        if ((p[i] == 0 && i > 0) || v > 0xFFFFFFFFu)
            return 0;
        *value = v;
        return (int)i + 1;
    }
    return 0;
}

#define MAX_FIELDS 8

typedef struct { /* one extras layout, from lane.py */
    int opcode, extras, nfields, seqno, zero; /* seqno, zero: field indexes (-1: none) */
    int key_required;                          /* the catalog requires a key */
    int sizes[MAX_FIELDS];
    PyObject *names[MAX_FIELDS]; /* '"by_seqno":' (ASCII, kept alive by Plans.keep) */
    PyObject *proto;              /* '"protocol":"dcp"' */
    PyObject *head;               /* ',"opcode":87,"opcode_name":"DCP_MUTATION"' */
} Plan;

#define MAX_PLANS 8
#define PLANS_CAPSULE "dcpinspect.families.mcbp._lane.plans"

typedef struct { /* the item layouts, read once (compile_plans) for every scan */
    int n;
    Plan plan[MAX_PLANS];
    PyObject *keep; /* the tuple the plans borrow from */
} Plans;

static void plans_free(PyObject *capsule) {
    Plans *p = PyCapsule_GetPointer(capsule, PLANS_CAPSULE);
    if (p != NULL) {
        Py_XDECREF(p->keep);
        PyMem_Free(p);
    }
}

static PyObject *compile_plans(PyObject *self, PyObject *seq) {
    /* (opcode, extras size, seqno index, nmeta index, key required, names, sizes, protocol
       member, opcode members) for each item layout, into what scan reads */
    if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) > MAX_PLANS) {
        PyErr_SetString(PyExc_TypeError, "plans: a tuple of at most 8 plans");
        return NULL;
    }
    Plans *ps = PyMem_Calloc(1, sizeof(Plans));
    if (ps == NULL)
        return PyErr_NoMemory();
    ps->n = (int)PyTuple_GET_SIZE(seq);
    for (int i = 0; i < ps->n; i++) {
        PyObject *t = PyTuple_GET_ITEM(seq, i), *names, *sizes;
        Plan *p = &ps->plan[i];
        if (!PyArg_ParseTuple(t, "iiiipO!O!UU", &p->opcode, &p->extras, &p->seqno, &p->zero, &p->key_required,
                              &PyTuple_Type, &names,
                              &PyTuple_Type, &sizes, &p->proto, &p->head))
            goto bad;
        p->nfields = (int)PyTuple_GET_SIZE(names);
        if (p->nfields > MAX_FIELDS || PyTuple_GET_SIZE(sizes) != p->nfields || p->seqno < 0 ||
            p->seqno >= p->nfields || p->zero >= p->nfields || !PyUnicode_IS_ASCII(p->proto) ||
            !PyUnicode_IS_ASCII(p->head)) {
            PyErr_SetString(PyExc_ValueError, "plan: bad field list");
            goto bad;
        }
        for (int k = 0; k < p->nfields; k++) {
            p->names[k] = PyTuple_GET_ITEM(names, k);
            p->sizes[k] = (int)PyLong_AsLong(PyTuple_GET_ITEM(sizes, k));
            if (!PyUnicode_Check(p->names[k]) || !PyUnicode_IS_ASCII(p->names[k]) || p->sizes[k] < 1 || p->sizes[k] > 8) {
                PyErr_SetString(PyExc_ValueError, "plan: bad field");
                goto bad;
            }
        }
    }
    Py_INCREF(seq);
    ps->keep = seq;
    PyObject *capsule = PyCapsule_New(ps, PLANS_CAPSULE, plans_free);
    if (capsule == NULL) {
        Py_DECREF(seq);
        PyMem_Free(ps);
    }
    return capsule;
bad:
    PyMem_Free(ps);
    return NULL;
}

static int put_str(Out *o, PyObject *ascii) {
    return out_put(o, (const char *)PyUnicode_DATA(ascii), (size_t)PyUnicode_GET_LENGTH(ascii));
}

enum { TEXT = 0, NOT_PRINTABLE = 1, NOT_ASCII = 2 };

/* TEXT: printable ASCII (tabs and line ends allowed), as values._printable_utf8 judges ASCII;
 * NOT_PRINTABLE: ASCII with other control bytes or DEL; NOT_ASCII: a byte of 0x80 or more.
 * One pass without early exits, which the compiler turns into vector code. */
static int text_class(const uint8_t *s, size_t n) {
    uint8_t any = 0, control = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        any |= c;
        control |= (uint8_t)((c < 0x20) & (c != '\t') & (c != '\n') & (c != '\r')) | (uint8_t)(c == 0x7f);
    }
    return (any & 0x80) ? NOT_ASCII : control ? NOT_PRINTABLE : TEXT;
}

/* ,"value":"…" (cut at max_text characters, then "…") for printable text, ,"value_hex":"…"
 * for other ASCII: what values._set_bytes puts in the fields (comma: not the first member). */
static int put_value(Out *o, const uint8_t *s, size_t n, int kind, Py_ssize_t max_text, int comma) {
    if (comma && PUT_LIT(o, ",") < 0)
        return -1;
    if (kind != TEXT)
        return PUT_LIT(o, "\"value_hex\":") < 0 ? -1 : out_hex(o, s, n);
    size_t shown = n > (size_t)max_text ? (size_t)max_text : n;
    if (PUT_LIT(o, "\"value\":") < 0 || out_json_ascii(o, s, shown) < 0)
        return -1;
    if (shown < n) { /* "…" before the closing quote */
        o->len--;
        return PUT_LIT(o, "\\u2026\"");
    }
    return 0;
}

/* hash((False, cid or None, logical key)): the digest rules/stream.py keeps per snapshot */
static Py_hash_t key_digest(int prefixed, uint64_t cid, const uint8_t *key, size_t n) {
    PyObject *k = PyBytes_FromStringAndSize((const char *)key, (Py_ssize_t)n);
    if (k == NULL)
        return -1;
    PyObject *c;
    if (prefixed) {
        c = PyLong_FromUnsignedLongLong(cid);
        if (c == NULL) {
            Py_DECREF(k);
            return -1;
        }
    } else {
        c = Py_None;
        Py_INCREF(c);
    }
    Py_INCREF(Py_False);
    PyObject *t = PyTuple_Pack(3, Py_False, c, k);
    Py_DECREF(Py_False);
    Py_DECREF(c);
    Py_DECREF(k);
    if (t == NULL)
        return -1;
    Py_hash_t h = PyObject_Hash(t);
    Py_DECREF(t);
    return h;
}

/* dict[key] into *found (borrowed), taking the reference to key (which may be NULL after a
 * failed allocation): 1 found, 0 missing, -1 error. */
static int lookup(PyObject *dict, PyObject *key, PyObject **found) {
    if (key == NULL)
        return -1;
    *found = PyDict_GetItemWithError(dict, key);
    Py_DECREF(key);
    if (*found == NULL)
        return PyErr_Occurred() ? -1 : 0;
    return 1;
}

/* One frame's header, as the line shows it. */
typedef struct {
    long long offset; /* stream offset of the frame */
    Py_ssize_t size;
    int magic, flex, dt, sid; /* sid: -1 without a stream-id frame info */
    uint32_t vb, opaque;
    uint64_t cas;
} Head;

/* A frame's line from the prefix to the opened "fields" object (with the stream id in it):
 * outputs/jsonl.frame_record's keys, in its order, as dumps writes them (proto: the
 * "protocol" member; op_head: the opcode's members, and a response's status ones). The
 * fields object holds the stream id, if any: what follows it starts with a comma then. */
static int put_head(Out *o, PyObject *prefix, const Head *f, PyObject *proto, PyObject *magic_name,
                    PyObject *op_head, int with_vbucket, const uint8_t *key, size_t klen, int prefixed, uint64_t cid) {
    if (put_str(o, prefix) < 0 || put_str(o, proto) < 0 || PUT_LIT(o, ",\"offset\":") < 0 ||
        out_u64(o, (uint64_t)f->offset) < 0 || PUT_LIT(o, ",\"length\":") < 0 || out_u64(o, (uint64_t)f->size) < 0 ||
        PUT_LIT(o, ",\"magic\":") < 0 || out_u64(o, (uint64_t)f->magic) < 0 || PUT_LIT(o, ",\"magic_name\":") < 0 ||
        put_str(o, magic_name) < 0 || put_str(o, op_head) < 0)
        return -1;
    if (with_vbucket && (PUT_LIT(o, ",\"vbucket\":") < 0 || out_u64(o, f->vb) < 0))
        return -1;
    if (PUT_LIT(o, ",\"opaque\":") < 0 ||
        out_u64(o, f->opaque) < 0 || PUT_LIT(o, ",\"cas\":") < 0 || out_u64(o, f->cas) < 0 ||
        PUT_LIT(o, ",\"datatype\":") < 0 || out_u64(o, (uint64_t)f->dt) < 0 || PUT_LIT(o, ",\"key\":") < 0 ||
        out_json_ascii(o, key, klen) < 0)
        return -1;
    if (prefixed && (PUT_LIT(o, ",\"collection_id\":") < 0 || out_u64(o, cid) < 0))
        return -1;
    if (f->sid >= 0 && (PUT_LIT(o, ",\"stream_id\":") < 0 || out_u64(o, (uint64_t)f->sid) < 0 ||
                        PUT_LIT(o, ",\"frame_infos\":[{\"id\":2,\"name\":\"dcp_stream_id\",\"value\":") < 0 ||
                        out_u64(o, (uint64_t)f->sid) < 0 || PUT_LIT(o, "}]") < 0))
        return -1;
    if (PUT_LIT(o, ",\"truncated\":false,\"fields\":{") < 0)
        return -1;
    if (f->sid >= 0 && (PUT_LIT(o, "\"stream_id\":") < 0 || out_u64(o, (uint64_t)f->sid) < 0))
        return -1;
    return 0;
}

/* The stream id of a request with one stream-id frame info and nothing else (-1: none;
 * -2: other framing, which the lane leaves alone). */
static int stream_id_of(const uint8_t *h, int flex, uint32_t framing) {
    if (!flex)
        return -1;
    if (framing != 3 || h[24] != 0x22)
        return -2;
    int sid = (int)be16(h + 25);
    return sid ? sid : -2;
}

static int fixed_line(Out *o, const uint8_t *h, Py_ssize_t size, long long offset, int sid, PyObject *prefix,
                      PyObject *magic_name, PyObject *candidates, Py_ssize_t max_text, int *index, uint64_t *vals,
                      int *n_vals);

/* A snapshot as the scan follows it: the one the caller's stream is in, then each marker's. */
typedef struct {
    uint64_t start, end, flags, mvs, hcs, hps;
    int has_mvs, has_hcs, has_hps, complete;
    PyObject *keys; /* the digests of its keys (None: not checked); a new one owned */
} Snap;

#define SNAP_DECLINED 0x38u /* ack, history, may-duplicate: what the scan does not keep for the session */

/* -- the rules' conditions, as programs (rules/conditions.py) ---------------------------
 *
 * Each check a frame of a lane opcode could meet is a program over numbered facts: the
 * facts below, read from each frame or carried through the run (their names in FACTS,
 * by which lane.py numbers them), then the connection's, which lane.py reads with the
 * rules' own getters as the run starts. The scan declines a frame as soon as one program
 * of its opcode says true; it restates no rule. */

enum {
    F_SEQNO, F_NMETA, F_EXTRAS_LENGTH, F_DATATYPE, F_KEY_LENGTH, F_LOGICAL_KEY_LENGTH, F_PREFIXED, F_COLLECTION_ID,
    F_HAS_SID, F_KEY_REQUIRED, F_MARKER_START, F_MARKER_END, F_SNAPSHOT_TYPE, F_MARKER_VERSION, F_HAS_MVS, F_MVS,
    F_HAS_HCS, F_HCS, F_HAS_HPS, F_HPS, F_LAST_SEQNO, F_HAS_SNAPSHOT, F_SNAP_START, F_SNAP_END, F_SNAP_TYPE,
    F_SNAP_COMPLETE, F_KEY_SEEN, F_UNACKED, N_FACTS
};
static const char *FACT_NAMES[N_FACTS] = {
    "seqno", "nmeta", "extras_length", "datatype", "key_length", "logical_key_length", "prefixed", "collection_id",
    "has_sid", "key_required", "marker_start", "marker_end", "snapshot_type", "marker_version", "has_mvs", "mvs",
    "has_hcs", "hcs", "has_hps", "hps", "last_seqno", "has_snapshot", "snap_start", "snap_end", "snap_type",
    "snap_complete", "key_seen", "unacked"};

/* instructions, as rules/conditions.py numbers them; END closes one check's program */
enum { P_END = 0, P_FACT, P_CONST, P_LT, P_LE, P_GT, P_GE, P_EQ, P_NE, P_AND, P_OR, P_NOT, P_BITS };
#define MAX_CONNECTION_FACTS 32
#define MAX_SLOTS (N_FACTS + MAX_CONNECTION_FACTS)
#define PROGRAM_DEPTH 32
#define MAX_CHECKS 64 /* of one opcode */
#define RULES_CAPSULE "dcpinspect.families.mcbp._lane.rules"
#define LANE_OPS 3 /* snapshot marker, mutation, deletion: 0x56 + i */

#include "_lane_rules.h" /* generated_activate, generated_any: the same checks as C */

typedef struct {
    int slots;                        /* facts numbered, the connection's included */
    int native;                       /* the programs are those _lane_rules.h was made from */
    Py_ssize_t len[LANE_OPS];         /* -1: a check of this opcode is beyond the lane */
    uint64_t *code[LANE_OPS];
} Rules;

static void rules_free(PyObject *capsule) {
    Rules *r = PyCapsule_GetPointer(capsule, RULES_CAPSULE);
    if (r != NULL) {
        for (int i = 0; i < LANE_OPS; i++)
            PyMem_Free(r->code[i]);
        PyMem_Free(r);
    }
}

static PyObject *compile_rules(PyObject *self, PyObject *args) {
    /* (programs of 0x56, 0x57, 0x58: flat tuples of (instruction, argument) pairs, or None),
     * number of slots, whether they are the programs the generated C was made from (then it
     * runs them): checked for depth and slot numbers once, kept for every scan */
    PyObject *progs;
    int slots, native = 0;
    if (!PyArg_ParseTuple(args, "O!i|p", &PyTuple_Type, &progs, &slots, &native))
        return NULL;
    if (PyTuple_GET_SIZE(progs) != LANE_OPS || slots < N_FACTS || slots > MAX_SLOTS) {
        PyErr_SetString(PyExc_ValueError, "rules: three programs, and at most 32 connection facts");
        return NULL;
    }
    Rules *r = PyMem_Calloc(1, sizeof(Rules));
    if (r == NULL)
        return PyErr_NoMemory();
    r->slots = slots;
    r->native = native;
    for (int i = 0; i < LANE_OPS; i++) {
        PyObject *t = PyTuple_GET_ITEM(progs, i);
        if (t == Py_None) {
            r->len[i] = -1;
            continue;
        }
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) % 2) {
            PyErr_SetString(PyExc_ValueError, "rules: a program is a tuple of pairs");
            goto bad;
        }
        Py_ssize_t n = PyTuple_GET_SIZE(t);
        r->code[i] = PyMem_Calloc((size_t)n + 1, sizeof(uint64_t));
        if (r->code[i] == NULL) {
            PyErr_NoMemory();
            goto bad;
        }
        r->len[i] = n;
        int depth = 0, programs = 0;
        for (Py_ssize_t k = 0; k < n; k++) {
            uint64_t v = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(t, k));
            if (v == (uint64_t)-1 && PyErr_Occurred())
                goto bad;
            r->code[i][k] = v;
            if (k % 2)
                continue;
            uint64_t arg = 0;
            if (k + 1 < n) {
                arg = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(t, k + 1));
                if (arg == (uint64_t)-1 && PyErr_Occurred())
                    goto bad;
            }
            int ok;
            if (v == P_FACT || v == P_CONST)
                ok = (v == P_CONST || arg < (uint64_t)slots) && ++depth <= PROGRAM_DEPTH;
            else if (v == P_NOT || v == P_BITS)
                ok = depth >= 1;
            else if (v >= P_LT && v <= P_OR)
                ok = depth-- >= 2;
            else if (v == P_END)
                ok = depth-- == 1 && ++programs <= 2 * MAX_CHECKS;
            else
                ok = 0;
            if (!ok) {
                PyErr_SetString(PyExc_ValueError, "rules: a malformed program");
                goto bad;
            }
        }
        if (depth != 0 || programs % 2) {
            PyErr_SetString(PyExc_ValueError, "rules: a program not closed by END, or a check without both parts");
            goto bad;
        }
    }
    PyObject *capsule = PyCapsule_New(r, RULES_CAPSULE, rules_free);
    if (capsule == NULL)
        goto bad;
    return capsule;
bad:
    for (int i = 0; i < LANE_OPS; i++)
        PyMem_Free(r->code[i]);
    PyMem_Free(r);
    return NULL;
}

/* The value of the program at code[*k] over the fact values F; *k is left after its END. */
static uint64_t run_program(const uint64_t *code, Py_ssize_t *k, const uint64_t *F) {
    uint64_t st[PROGRAM_DEPTH], b;
    int sp = 0;
    for (;; *k += 2) {
        uint64_t op = code[*k], arg = code[*k + 1];
        switch (op) {
        case P_END: *k += 2; return st[0];
        case P_FACT: st[sp++] = F[arg]; break;
        case P_CONST: st[sp++] = arg; break;
        case P_NOT: st[sp - 1] = !st[sp - 1]; break;
        case P_BITS: st[sp - 1] = (st[sp - 1] & arg) != 0; break;
        default:
            b = st[--sp];
            switch (op) {
            case P_LT: st[sp - 1] = st[sp - 1] < b; break;
            case P_LE: st[sp - 1] = st[sp - 1] <= b; break;
            case P_GT: st[sp - 1] = st[sp - 1] > b; break;
            case P_GE: st[sp - 1] = st[sp - 1] >= b; break;
            case P_EQ: st[sp - 1] = st[sp - 1] == b; break;
            case P_NE: st[sp - 1] = st[sp - 1] != b; break;
            case P_AND: st[sp - 1] = st[sp - 1] && b; break;
            default: st[sp - 1] = st[sp - 1] || b; break; /* P_OR */
            }
        }
    }
}

/* Each check is two programs: the part over connection facts, judged once a scan, and
 * the rest, judged each frame (both must say true). */
typedef struct {
    int ready, n;
    uint64_t mask;                /* bit j: check j's connection part said true */
    Py_ssize_t start[MAX_CHECKS]; /* the frame parts of those checks */
} Active;

/* The checks of opcode i whose connection part says true over F; or, with F NULL, those
 * whose bit is set in mask (what an earlier scan of the same facts found). */
static void activate(const Rules *r, int i, const uint64_t *F, uint64_t mask, Active *a) {
    Py_ssize_t k = 0;
    a->n = 0;
    a->ready = 1;
    if (r->native) { /* the generated C: the mask is all it needs */
        a->mask = F != NULL ? generated_activate(i, F) : mask;
        return;
    }
    a->mask = 0;
    for (int j = 0; k < r->len[i]; j++) { /* compile_rules keeps j within MAX_CHECKS */
        int on;
        if (F != NULL)
            on = run_program(r->code[i], &k, F) != 0;
        else {
            on = (mask >> j) & 1;
            while (r->code[i][k] != P_END) /* the connection part, passed over */
                k += 2;
            k += 2;
        }
        if (on) {
            a->mask |= (uint64_t)1 << j;
            a->start[a->n++] = k;
        }
        while (r->code[i][k] != P_END) /* the frame part, passed over */
            k += 2;
        k += 2;
    }
}

/* Whether a check whose connection part said true says true of this frame. */
static int any_check(const Rules *r, int i, const Active *a, const uint64_t *F) {
    if (r->native)
        return generated_any(i, a->mask, F);
    for (int j = 0; j < a->n; j++) {
        Py_ssize_t k = a->start[j];
        if (run_program(r->code[i], &k, F))
            return 1;
    }
    return 0;
}

static PyObject *check_facts(PyObject *self, PyObject *args) {
    /* (rules capsule, opcode, fact values): whether a check of that opcode says true (the
     * evaluator on its own, for the tests) */
    PyObject *capsule, *values;
    int op;
    if (!PyArg_ParseTuple(args, "OiO!", &capsule, &op, &PyTuple_Type, &values))
        return NULL;
    Rules *rules = PyCapsule_GetPointer(capsule, RULES_CAPSULE);
    if (rules == NULL)
        return NULL;
    if (op < 0x56 || op >= 0x56 + LANE_OPS || PyTuple_GET_SIZE(values) != rules->slots) {
        PyErr_SetString(PyExc_ValueError, "check_facts: a lane opcode and one value a slot");
        return NULL;
    }
    uint64_t F[MAX_SLOTS];
    for (int k = 0; k < rules->slots; k++) {
        F[k] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(values, k));
        if (F[k] == (uint64_t)-1 && PyErr_Occurred())
            return NULL;
    }
    Py_ssize_t n = rules->len[op - 0x56];
    if (n < 0)
        Py_RETURN_NONE;
    Active a;
    activate(rules, op - 0x56, F, 0, &a);
    return PyBool_FromLong(any_check(rules, op - 0x56, &a, F));
}

static PyObject *snap_info(const Snap *s) {
    /* (start, end, snapshot type, max visible, high completed, high prepared, keys, complete) */
    PyObject *mvs = s->has_mvs ? PyLong_FromUnsignedLongLong(s->mvs) : (Py_INCREF(Py_None), Py_None);
    PyObject *hcs = s->has_hcs ? PyLong_FromUnsignedLongLong(s->hcs) : (Py_INCREF(Py_None), Py_None);
    PyObject *hps = s->has_hps ? PyLong_FromUnsignedLongLong(s->hps) : (Py_INCREF(Py_None), Py_None);
    if (mvs == NULL || hcs == NULL || hps == NULL) {
        Py_XDECREF(mvs);
        Py_XDECREF(hcs);
        Py_XDECREF(hps);
        return NULL;
    }
    return Py_BuildValue("(KKKNNNOO)", s->start, s->end, s->flags, mvs, hcs, hps, s->keys,
                         s->complete ? Py_True : Py_False);
}

/* the run facts of the snapshot the stream is in */
static void snap_facts(uint64_t *F, const Snap *s) {
    F[F_HAS_SNAPSHOT] = 1;
    F[F_SNAP_START] = s->start;
    F[F_SNAP_END] = s->end;
    F[F_SNAP_TYPE] = s->flags;
    F[F_SNAP_COMPLETE] = (uint64_t)s->complete;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    /* Runs of a stream's DCP_MUTATION and DCP_DELETION frames, and the snapshot markers
     * between them (read by fixed_line with the caller's marker shapes), in which no check
     * of the rules says true; see the top of this file and lane.py's Run for the
     * arguments, Scanned for what comes back. */
    Py_buffer view;
    Py_ssize_t pos, stop;
    long long base;
    unsigned int want_opaque;
    int want_vb, want_sid, collections, complete;
    Py_ssize_t max_text, max_keys, max_inflate;
    uint8_t *inflated = NULL;
    unsigned long long last_seqno, snap_start, snap_end, snap_flags, end_seqno;
    long long unacked, limit;
    PyObject *keys, *prefix, *capsule, *rules_capsule, *magic_names, *marker_shapes, *marker_fields, *connection,
        *masks;
    if (!PyArg_ParseTuple(args, "y*nnL(IiiinnKKKKpOnLLKUO!O!O!O)OOO!", &view, &pos, &stop, &base, &want_opaque,
                          &want_vb, &want_sid, &collections, &max_text, &max_inflate, &last_seqno, &snap_start,
                          &snap_end, &snap_flags, &complete, &keys, &max_keys, &unacked, &limit, &end_seqno, &prefix,
                          &PyTuple_Type, &connection, &PyTuple_Type, &marker_shapes, &PyTuple_Type, &marker_fields,
                          &masks, &capsule, &rules_capsule, &PyTuple_Type, &magic_names))
        return NULL;
    const uint8_t *d = view.buf;
    PyObject *result = NULL;
    Out o = {NULL, 0, 0}, counted = {NULL, 0, 0};
    Snap cur = {snap_start, snap_end, snap_flags, 0, 0, 0, 0, 0, 0, complete, keys}, older = cur;
    int first_complete = complete;
    Py_ssize_t markers = 0;
    Plans *compiled = PyCapsule_GetPointer(capsule, PLANS_CAPSULE);
    Rules *rules = compiled == NULL ? NULL : PyCapsule_GetPointer(rules_capsule, RULES_CAPSULE);
    if (rules == NULL)
        goto done;
    const Plan *plans = compiled->plan;
    int nplans = compiled->n;
    if (keys != Py_None && !PySet_Check(keys)) {
        PyErr_SetString(PyExc_TypeError, "keys: a set or None");
        goto done;
    }
    if (!PyUnicode_IS_ASCII(prefix) || PyTuple_GET_SIZE(magic_names) != 2 || PyTuple_GET_SIZE(marker_shapes) != 2) {
        PyErr_SetString(PyExc_ValueError, "prefix must be ASCII, magic_names and marker_shapes pairs");
        goto done;
    }
    if (PyTuple_GET_SIZE(connection) != rules->slots - N_FACTS) {
        PyErr_SetString(PyExc_ValueError, "scan: one connection fact a slot beyond the lane's own");
        goto done;
    }
    uint64_t F[MAX_SLOTS] = {0};
    for (int k = N_FACTS; k < rules->slots; k++) {
        F[k] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(connection, k - N_FACTS));
        if (F[k] == (uint64_t)-1 && PyErr_Occurred())
            goto done;
    }
    if (stop > view.len)
        stop = view.len;
    if (pos < 0 || pos > stop) {
        PyErr_SetString(PyExc_ValueError, "scan: position outside the buffer");
        goto done;
    }
    Py_ssize_t counts[2] = {0, 0}, last_key_at = -1, last_key_len = 0;
    long long total = 0;
    Active active[LANE_OPS] = {{0}}; /* each opcode's: given by masks, or made at its first frame */
    if (masks != Py_None) {
        if (!PyTuple_Check(masks) || PyTuple_GET_SIZE(masks) != LANE_OPS) {
            PyErr_SetString(PyExc_ValueError, "scan: masks, None or one a lane opcode");
            goto done;
        }
        for (int i = 0; i < LANE_OPS; i++) {
            PyObject *m = PyTuple_GET_ITEM(masks, i);
            if (m == Py_None || rules->len[i] < 0)
                continue;
            uint64_t bits = PyLong_AsUnsignedLongLong(m);
            if (bits == (uint64_t)-1 && PyErr_Occurred())
                goto done;
            activate(rules, i, NULL, bits, &active[i]);
        }
    }
    int last_op = -1, last_sid = -1;
    while (pos >= 0 && pos + 24 <= stop) {
        const uint8_t *h = d + pos;
        int magic = h[0], op = h[1], flex = magic == 0x08;
        if ((magic != 0x80 && !flex) || op < 0x56 || op >= 0x56 + LANE_OPS || rules->len[op - 0x56] < 0)
            break;
        Active *checks = &active[op - 0x56];
        uint32_t bodylen = be32(h + 8);
        Py_ssize_t size = 24 + (Py_ssize_t)bodylen;
        if (pos + size > stop)
            break;
        uint32_t framing = flex ? h[2] : 0, keylen = flex ? h[3] : be16(h + 2), extlen = h[4];
        int dt = h[5];
        uint32_t vb = be16(h + 6), opaque = be32(h + 12);
        uint64_t cas = beN(h + 16, 8);
        if (opaque != want_opaque || (int)vb != want_vb || framing + extlen + keylen > bodylen)
            break; /* another stream's, or no frame the lane reads */
        int sid = stream_id_of(h, flex, framing);
        if (sid == -2 || (sid >= 0 && sid != want_sid))
            break;
        /* the facts every frame has, and the run's */
        memset(F, 0, sizeof(uint64_t) * F_LAST_SEQNO);
        F[F_EXTRAS_LENGTH] = extlen;
        F[F_DATATYPE] = (uint64_t)dt;
        F[F_KEY_LENGTH] = keylen;
        F[F_HAS_SID] = sid >= 0;
        F[F_LAST_SEQNO] = last_seqno;
        snap_facts(F, &cur);
        F[F_KEY_SEEN] = 0;
        F[F_UNACKED] = (uint64_t)unacked;
        if (op == 0x56) {
            /* a marker: its shape (named flags only) from the layouts, then the checks */
            int index, n_vals;
            uint64_t vals[MAX_FIELDS];
            size_t mark = o.len;
            if (dt || (sid >= 0 && collections < 0)) /* datatype; a stream id deciding collections */
                break;
            int got = fixed_line(&o, h, size, base + pos, sid, prefix, PyTuple_GET_ITEM(magic_names, flex),
                                 PyTuple_GET_ITEM(marker_shapes, flex), max_text, &index, vals, &n_vals);
            if (got < 0)
                goto done;
            if (!got)
                break;
            PyObject *where = index >= 0 && index < PyTuple_GET_SIZE(marker_fields)
                                  ? PyTuple_GET_ITEM(marker_fields, index) : Py_None;
            int at[7];
            if (where == Py_None ||
                !PyArg_ParseTuple(where, "iiiiiii", &at[0], &at[1], &at[2], &at[3], &at[4], &at[5], &at[6])) {
                if (PyErr_Occurred())
                    goto done;
                o.len = mark;
                break;
            }
            for (int k = 0; k < 6; k++)
                if (at[k] >= n_vals || (k < 3 && at[k] < 0)) {
                    PyErr_SetString(PyExc_ValueError, "scan: a marker field outside its shape");
                    goto done;
                }
            Snap s = {vals[at[0]], vals[at[1]], vals[at[2]], 0, 0, 0, at[3] >= 0, at[4] >= 0, at[5] >= 0, 0, NULL};
            if (s.has_mvs)
                s.mvs = vals[at[3]];
            if (s.has_hcs)
                s.hcs = vals[at[4]];
            if (s.has_hps)
                s.hps = vals[at[5]];
            F[F_MARKER_START] = s.start;
            F[F_MARKER_END] = s.end;
            F[F_SNAPSHOT_TYPE] = s.flags;
            F[F_MARKER_VERSION] = at[6] ? 2 : 0;
            F[F_HAS_MVS] = (uint64_t)s.has_mvs;
            F[F_MVS] = s.mvs;
            F[F_HAS_HCS] = (uint64_t)s.has_hcs;
            F[F_HCS] = s.hcs;
            F[F_HAS_HPS] = (uint64_t)s.has_hps;
            F[F_HPS] = s.hps;
            if (!checks->ready)
                activate(rules, op - 0x56, F, 0, checks);
            if ((s.flags & SNAP_DECLINED) || any_check(rules, op - 0x56, checks, F)) {
                o.len = mark;
                break;
            }
            s.keys = PySet_New(NULL);
            if (s.keys == NULL)
                goto done;
            if (markers)
                Py_XDECREF(older.keys);
            else
                first_complete = cur.complete;
            older = cur;
            if (!markers)
                older.keys = NULL; /* the caller's own snapshot's: not ours to release */
            cur = s;
            markers++;
            Counted m = {(uint64_t)op, (uint64_t)size, sid, s.start, s.end, s.flags};
            if (out_put(&counted, (const char *)&m, sizeof m) < 0)
                goto done;
            if (limit)
                unacked += size;
            total += size;
            last_op = op;
            last_key_at = -1;
            last_sid = sid;
            pos += size;
            continue;
        }
        /* an item: its extras from the layouts, its key and value as the decoder reads them */
        const Plan *plan = NULL;
        for (int i = 0; i < nplans; i++)
            if (plans[i].opcode == op && (uint32_t)plans[i].extras == extlen)
                plan = &plans[i];
        if (plan == NULL || dt > 3 || (op == 0x58 && dt != 0)) /* xattrs, deletion values: the decoder's */
            break;
        const uint8_t *ex = h + 24 + framing;
        uint64_t vals[MAX_FIELDS];
        for (int k = 0, off = 0; k < plan->nfields; off += plan->sizes[k], k++)
            vals[k] = beN(ex + off, plan->sizes[k]);
        uint64_t seqno = vals[plan->seqno];
        F[F_SEQNO] = seqno;
        F[F_NMETA] = plan->zero >= 0 ? vals[plan->zero] : 0;
        F[F_KEY_REQUIRED] = (uint64_t)plan->key_required;
        const uint8_t *key = ex + extlen, *value = key + keylen, *end = h + size;
        size_t vlen = (size_t)(end - value);
        int prefixed = collections == 1;
        uint64_t cid = 0;
        const uint8_t *logical = key;
        size_t llen = keylen;
        if (keylen) {
            if (collections < 0 && !(key[0] >= 0x20 && key[0] < 0x7f)) { /* keys._looks_prefixed */
                int used = leb128(key, keylen, &cid);
                prefixed = used && !(cid >= RESERVED_COLLECTION_FIRST && cid <= RESERVED_COLLECTION_LAST) &&
                           (uint32_t)used < keylen;
            }
            if (prefixed) {
                int used = leb128(key, keylen, &cid);
                if (!used)
                    break;
                logical = key + used;
                llen = keylen - (size_t)used;
            }
            if (text_class(logical, llen) == NOT_ASCII)
                break;
        } else
            prefixed = 0;
        F[F_PREFIXED] = (uint64_t)prefixed;
        F[F_COLLECTION_ID] = cid;
        F[F_LOGICAL_KEY_LENGTH] = llen;
        /* the document: the value, inflated when snappy (values._document_lean) */
        const uint8_t *doc = value;
        Py_ssize_t dlen = (Py_ssize_t)vlen;
        PyMem_Free(inflated);
        inflated = NULL;
        if ((dt & 2) && vlen) {
            dlen = snappy_inflate(value, vlen, (size_t)max_inflate, &inflated);
            if (dlen < 0)
                break;
            doc = inflated;
        }
        int kind = text_class(doc, (size_t)dlen);
        if (kind == NOT_ASCII)
            break;
        if ((dt & 1) && dlen && json_valid(doc, (size_t)dlen) != J_OK)
            break;
        PyObject *hk = NULL;
        if (cur.keys != Py_None && keylen) {
            Py_hash_t hv = key_digest(prefixed, cid, logical, llen);
            if (hv == -1 && PyErr_Occurred())
                goto done;
            hk = PyLong_FromSsize_t(hv);
            if (hk == NULL)
                goto done;
            int seen = PySet_Contains(cur.keys, hk);
            if (seen < 0) {
                Py_DECREF(hk);
                goto done;
            }
            F[F_KEY_SEEN] = (uint64_t)seen;
        }
        if (!checks->ready)
            activate(rules, op - 0x56, F, 0, checks);
        if (any_check(rules, op - 0x56, checks, F)) {
            Py_XDECREF(hk);
            break;
        }
        if (hk != NULL) { /* the session remembers the key */
            int added = PySet_GET_SIZE(cur.keys) < max_keys ? PySet_Add(cur.keys, hk) : 0;
            Py_DECREF(hk);
            if (added < 0)
                goto done;
        }
        Head f = {base + pos, size, magic, flex, dt, sid, vb, opaque, cas};
        if (put_head(&o, prefix, &f, plan->proto, PyTuple_GET_ITEM(magic_names, flex), plan->head, 1, logical, llen,
                     prefixed, cid) < 0)
            goto done;
        for (int k = 0; k < plan->nfields; k++) {
            if (((k || sid >= 0) && PUT_LIT(&o, ",") < 0) || put_str(&o, plan->names[k]) < 0 ||
                out_u64(&o, vals[k]) < 0)
                goto done;
        }
        if (prefixed && (PUT_LIT(&o, ",\"collection_id\":") < 0 || out_u64(&o, cid) < 0))
            goto done;
        if (vlen && (dt & 2) && (PUT_LIT(&o, ",\"value_inflated_length\":") < 0 || out_u64(&o, (uint64_t)dlen) < 0))
            goto done;
        if (vlen && put_value(&o, doc, (size_t)dlen, kind, max_text, 1) < 0)
            goto done;
        if (PUT_LIT(&o, "},\"findings\":[]}\n") < 0)
            goto done;
        Counted item = {(uint64_t)op, (uint64_t)size, sid, seqno, 0, 0};
        if (out_put(&counted, (const char *)&item, sizeof item) < 0)
            goto done;
        if (limit)
            unacked += size;
        total += size;
        last_seqno = seqno;
        counts[op - 0x57]++;
        last_op = op;
        last_key_at = logical - d;
        last_key_len = (Py_ssize_t)llen;
        last_sid = sid;
        pos += size;
        if (seqno >= cur.end) { /* the snapshot is complete */
            cur.complete = 1;
            if (cur.end >= end_seqno || seqno >= end_seqno)
                break; /* and holds the stream's end seqno: the caller says so */
        }
    }
    PyObject *lines = PyBytes_FromStringAndSize(o.p ? o.p : "", (Py_ssize_t)o.len);
    if (lines == NULL)
        goto done;
    PyObject *frames = PyBytes_FromStringAndSize(counted.p ? counted.p : "", (Py_ssize_t)counted.len);
    if (frames == NULL) {
        Py_DECREF(lines);
        goto done;
    }
    PyObject *key_obj = last_key_at >= 0 ? PyUnicode_DecodeASCII((const char *)d + last_key_at, last_key_len, NULL)
                                         : (Py_INCREF(Py_None), Py_None);
    PyObject *newest = markers ? snap_info(&cur) : (Py_INCREF(Py_None), Py_None);
    PyObject *before = markers > 1 ? snap_info(&older) : (Py_INCREF(Py_None), Py_None);
    PyObject *found = PyTuple_New(LANE_OPS); /* the masks, for the next scan of the same facts */
    for (int i = 0; found != NULL && i < LANE_OPS; i++) {
        PyObject *m = active[i].ready ? PyLong_FromUnsignedLongLong(active[i].mask) : (Py_INCREF(Py_None), Py_None);
        if (m == NULL)
            Py_CLEAR(found);
        else
            PyTuple_SET_ITEM(found, i, m);
    }
    if (key_obj != NULL && newest != NULL && before != NULL && found != NULL)
        result = Py_BuildValue("(nnnKLLNiiNnONNNN)", pos, counts[0], counts[1], last_seqno, total, unacked, lines,
                               last_op, last_sid, key_obj, markers, first_complete ? Py_True : Py_False, before, newest,
                               found, frames);
    else {
        Py_XDECREF(found);
        Py_DECREF(lines);
        Py_DECREF(frames);
        Py_XDECREF(key_obj);
        Py_XDECREF(newest);
        Py_XDECREF(before);
    }
done:
    if (markers) {
        Py_XDECREF(cur.keys);
        if (markers > 1)
            Py_XDECREF(older.keys);
    }
    PyMem_Free(inflated);
    PyMem_Free(o.p);
    PyMem_Free(counted.p);
    PyBuffer_Release(&view);
    return result;
}

/* Whether a list value of vlen bytes splits into whole entries of listed's layout:
 * (name, codes dict) takes u16 codes; (name, field names, field sizes) repeated entries. */
static int list_fits(PyObject *listed, size_t vlen) {
    Py_ssize_t n = PyTuple_GET_SIZE(listed);
    if (n == 2)
        return vlen % 2 == 0;
    if (n != 3)
        return 0;
    PyObject *sizes = PyTuple_GET_ITEM(listed, 2);
    if (!PyTuple_Check(sizes))
        return 0;
    size_t entry = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(sizes); k++)
        entry += (size_t)PyLong_AsLong(PyTuple_GET_ITEM(sizes, k));
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return entry > 0 && vlen % entry == 0;
}

/* ,"name":[...] of a list value (see list_fits): 1 written, 0 a code the dict does not
 * name (the caller drops the line), -1 error. */
static int put_list(Out *o, PyObject *listed, const uint8_t *v, size_t vlen, int comma) {
    PyObject *name = PyTuple_GET_ITEM(listed, 0);
    if (!PyUnicode_Check(name) || !PyUnicode_IS_ASCII(name)) {
        PyErr_SetString(PyExc_ValueError, "fixed: a list's name must be ASCII");
        return -1;
    }
    if ((comma && PUT_LIT(o, ",") < 0) || put_str(o, name) < 0 || PUT_LIT(o, "[") < 0)
        return -1;
    if (PyTuple_GET_SIZE(listed) == 2) {
        PyObject *codes = PyTuple_GET_ITEM(listed, 1);
        if (!PyDict_Check(codes)) {
            PyErr_SetString(PyExc_TypeError, "fixed: list codes are a dict");
            return -1;
        }
        for (size_t at = 0; at < vlen; at += 2) {
            PyObject *code = PyLong_FromUnsignedLong(be16(v + at)), *text;
            if (code == NULL)
                return -1;
            text = PyDict_GetItemWithError(codes, code);
            Py_DECREF(code);
            if (text == NULL)
                return PyErr_Occurred() ? -1 : 0;
            if (!PyUnicode_Check(text) || !PyUnicode_IS_ASCII(text)) {
                PyErr_SetString(PyExc_ValueError, "fixed: list codes name ASCII text");
                return -1;
            }
            if ((at && PUT_LIT(o, ",") < 0) || put_str(o, text) < 0)
                return -1;
        }
    } else {
        PyObject *names = PyTuple_GET_ITEM(listed, 1), *sizes = PyTuple_GET_ITEM(listed, 2);
        Py_ssize_t nf = PyTuple_Check(names) ? PyTuple_GET_SIZE(names) : -1;
        if (nf < 1 || PyTuple_GET_SIZE(sizes) != nf) {
            PyErr_SetString(PyExc_ValueError, "fixed: an entry's names and sizes differ");
            return -1;
        }
        size_t at = 0;
        while (at < vlen) {
            if ((at && PUT_LIT(o, ",") < 0) || PUT_LIT(o, "{") < 0)
                return -1;
            for (Py_ssize_t k = 0; k < nf; k++) {
                long width = PyLong_AsLong(PyTuple_GET_ITEM(sizes, k));
                PyObject *field = PyTuple_GET_ITEM(names, k);
                if (width < 1 || width > 8 || at + (size_t)width > vlen || !PyUnicode_Check(field) ||
                    !PyUnicode_IS_ASCII(field)) {
                    if (!PyErr_Occurred())
                        PyErr_SetString(PyExc_ValueError, "fixed: bad entry field");
                    return -1;
                }
                if ((k && PUT_LIT(o, ",") < 0) || put_str(o, field) < 0 || out_u64(o, beN(v + at, (int)width)) < 0)
                    return -1;
                at += (size_t)width;
            }
            if (PUT_LIT(o, "}") < 0)
                return -1;
        }
    }
    return PUT_LIT(o, "]") < 0 ? -1 : 1;
}

/* The line of the frame at h (size bytes, at stream offset offset, stream id sid or -1) if
 * one of candidates (see fixed) fits it: 1 written to o, with the shape's index in *index
 * and its fields' values in vals (n_vals of them, at most MAX_FIELDS); 0 none fits or a
 * field has a value the tables do not name (o as it was); -1 error. */
static int fixed_line(Out *o, const uint8_t *h, Py_ssize_t size, long long offset, int sid, PyObject *prefix,
                      PyObject *magic_name, PyObject *candidates, Py_ssize_t max_text, int *index, uint64_t *vals,
                      int *n_vals) {
    int magic = h[0], flex = magic == 0x08;
    uint32_t framing = flex ? h[2] : 0, keylen = flex ? h[3] : be16(h + 2), extlen = h[4];
    const uint8_t *ex = h + 24 + framing, *key = ex + extlen, *value = key + keylen;
    size_t vlen = (size_t)size - 24 - framing - extlen - keylen, mark = o->len;
    if (!PyTuple_Check(candidates)) {
        PyErr_SetString(PyExc_TypeError, "fixed: shapes map to tuples");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(candidates); i++) {
        int extras, version, with_vbucket;
        Py_ssize_t value_len;
        PyObject *names, *sizes, *renderers, *proto, *head, *listed = NULL;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(candidates, i), "iinO!O!O!UUpi|O!", &extras, &version, &value_len,
                              &PyTuple_Type, &names, &PyTuple_Type, &sizes, &PyTuple_Type, &renderers, &proto, &head,
                              &with_vbucket, index, &PyTuple_Type, &listed))
            return -1;
        /* value_len -1: a text key and a text value (values.bytes_field's way); -2: a text key
         * and no value; -3: a text key and a value that is a list (listed: its member name, and
         * a dict of each u16 code's JSON text, or the names and sizes of a repeated entry's
         * fields) */
        int text = value_len < 0, list = value_len == -3;
        if ((uint32_t)extras != extlen || (version >= 0 && (extlen < 1 || ex[0] != version)) ||
            (text ? text_class(key, keylen) == NOT_ASCII || (value_len == -2 && vlen) || (list && !vlen)
                  : keylen != 0 || (size_t)value_len != vlen))
            continue;
        int value_kind = text && vlen && !list ? text_class(value, vlen) : TEXT;
        if (value_kind == NOT_ASCII)
            return 0;
        if (list && (listed == NULL || !list_fits(listed, vlen)))
            return 0;
        Py_ssize_t n = PyTuple_GET_SIZE(names);
        if (PyTuple_GET_SIZE(sizes) != n || PyTuple_GET_SIZE(renderers) != n || !PyUnicode_IS_ASCII(proto) ||
            !PyUnicode_IS_ASCII(head) || n > MAX_FIELDS) {
            PyErr_SetString(PyExc_ValueError, "fixed: a shape's lists differ in length, are too long or not ASCII");
            return -1;
        }
        Head f = {offset, size, magic, flex, 0, sid, be16(h + 6), be32(h + 12), beN(h + 16, 8)};
        if (put_head(o, prefix, &f, proto, magic_name, head, with_vbucket, key, keylen, 0, 0) < 0)
            return -1;
        size_t off = 0, span = text ? extlen : extlen + vlen; /* without a key, the fields run on into the value */
        for (Py_ssize_t k = 0; k < n; k++) {
            long width = PyLong_AsLong(PyTuple_GET_ITEM(sizes, k));
            PyObject *name = PyTuple_GET_ITEM(names, k), *render = PyTuple_GET_ITEM(renderers, k);
            if (width < 1 || width > 8 || off + (size_t)width > span || !PyUnicode_Check(name) ||
                !PyUnicode_IS_ASCII(name)) {
                PyErr_SetString(PyExc_ValueError, "fixed: bad field");
                return -1;
            }
            uint64_t v = vals[k] = beN(ex + off, (int)width);
            off += (size_t)width;
            if (((k || sid >= 0) && PUT_LIT(o, ",") < 0) || put_str(o, name) < 0)
                return -1;
            if (render == Py_None) {
                if (out_u64(o, v) < 0)
                    return -1;
                continue;
            }
            PyObject *number = PyLong_FromUnsignedLongLong(v);
            if (number == NULL)
                return -1;
            PyObject *fragment = PyDict_Check(render) ? PyDict_GetItemWithError(render, number) : NULL;
            Py_DECREF(number);
            if (fragment == NULL) {
                if (PyErr_Occurred())
                    return -1;
                o->len = mark;
                return 0; /* a value the tables do not name: the rules will say so */
            }
            if (!PyUnicode_Check(fragment) || !PyUnicode_IS_ASCII(fragment) || put_str(o, fragment) < 0) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "fixed: fragments must be ASCII strings");
                return -1;
            }
        }
        if (off != span) {
            o->len = mark;
            return 0;
        }
        if (list) {
            int got = put_list(o, listed, value, vlen, n > 0 || sid >= 0);
            if (got <= 0) {
                if (got == 0)
                    o->len = mark;
                return got;
            }
        } else if (text && vlen && put_value(o, value, vlen, value_kind, max_text, n > 0 || sid >= 0) < 0)
            return -1;
        if (PUT_LIT(o, "},\"findings\":[]}\n") < 0)
            return -1;
        *n_vals = (int)n;
        return 1;
    }
    return 0;
}

/* Whether the 24-byte header at h (of a frame whose size bytes are all there) is one
 * fixed_line may take: a request (or a response with status 0) without datatype, its
 * lengths within the body; *sid its stream id (-1: none; -2: other framing). */
static int fixed_header(const uint8_t *h, Py_ssize_t size, int *sid) {
    int magic = h[0], flex = magic == 0x08, response = magic == 0x81;
    uint32_t framing = flex ? h[2] : 0, keylen = flex ? h[3] : be16(h + 2), extlen = h[4];
    if ((magic != 0x80 && !flex && !response) || h[5] || 24 + framing + extlen + keylen > (uint32_t)size ||
        (response && be16(h + 6)))
        return 0;
    *sid = stream_id_of(h, flex, framing);
    return *sid != -2;
}

static PyObject *fixed(PyObject *self, PyObject *args) {
    /* One frame at pos made of fixed fields only (from the layout tables) and no key, or of
     * a text key and a text value (value size -1), none (-2) or a list (-3, see fixed_line);
     * no datatype, no framing but a request's stream id; a response only with status 0.
     * shapes maps magic << 8 | opcode to the shapes that frame may have, each
     * (extras size, version byte or -1, value size, field names, sizes, renderers, protocol
     * member, opcode members, whether the line has a vbucket, shape index). Returns
     * (end, shape index, stream id or -1, line bytes), or None. Whether the frame draws a
     * finding is for the rules, which the caller runs. */
    Py_buffer view;
    Py_ssize_t pos, stop;
    long long base;
    Py_ssize_t max_text;
    PyObject *prefix, *magic_name, *shapes, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*nnLUUO!n", &view, &pos, &stop, &base, &prefix, &magic_name, &PyDict_Type,
                          &shapes, &max_text))
        return NULL;
    Out o = {NULL, 0, 0};
    const uint8_t *d = view.buf, *h = d + pos;
    if (stop > view.len)
        stop = view.len;
    if (pos < 0 || pos > stop) {
        PyErr_SetString(PyExc_ValueError, "fixed: position outside the buffer");
        goto done;
    }
    if (!PyUnicode_IS_ASCII(prefix) || !PyUnicode_IS_ASCII(magic_name)) {
        PyErr_SetString(PyExc_ValueError, "fixed: prefix and magic name must be ASCII");
        goto done;
    }
    if (pos + 24 > stop)
        goto none;
    Py_ssize_t size = 24 + (Py_ssize_t)be32(h + 8);
    int sid, index, n_vals;
    if (pos + size > stop || !fixed_header(h, size, &sid))
        goto none;
    PyObject *candidates;
    int found = lookup(shapes, PyLong_FromLong(h[0] << 8 | h[1]), &candidates);
    if (found < 0)
        goto done;
    if (!found)
        goto none;
    uint64_t vals[MAX_FIELDS];
    int got = fixed_line(&o, h, size, base + pos, sid, prefix, magic_name, candidates, max_text, &index, vals, &n_vals);
    if (got < 0)
        goto done;
    if (got) {
        result = Py_BuildValue("(niiy#)", pos + size, index, sid, o.p, (Py_ssize_t)o.len);
        goto done;
    }
none:
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(o.p);
    PyBuffer_Release(&view);
    return result;
}

static PyObject *cut(PyObject *self, PyObject *args) {
    /* framing.mcbp.FrameSplitter._frames without the frames: the end of the whole frames
       from pos whose magic is known and body length sane */
    Py_buffer view, magics;
    Py_ssize_t pos, n;
    unsigned long long max_body;
    if (!PyArg_ParseTuple(args, "y*nny*K", &view, &pos, &n, &magics, &max_body))
        return NULL;
    const uint8_t *d = view.buf;
    uint8_t known[256] = {0};
    for (Py_ssize_t i = 0; i < magics.len; i++)
        known[((const uint8_t *)magics.buf)[i]] = 1;
    if (n > view.len)
        n = view.len;
    if (pos < 0 || pos > n) {
        PyBuffer_Release(&view);
        PyBuffer_Release(&magics);
        PyErr_SetString(PyExc_ValueError, "cut: position outside the buffer");
        return NULL;
    }
    Py_ssize_t count = 0;
    while (n - pos >= 24) {
        uint32_t bodylen = be32(d + pos + 8);
        if (!known[d[pos]] || bodylen > max_body || pos + 24 + (Py_ssize_t)bodylen > n)
            break;
        pos += 24 + (Py_ssize_t)bodylen;
        count++;
    }
    PyBuffer_Release(&view);
    PyBuffer_Release(&magics);
    return Py_BuildValue("(nn)", pos, count);
}

static PyObject *valid_json(PyObject *self, PyObject *arg) {
    /* for tests: 1 valid, 0 not, -1 too deep to say */
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int r = json_valid(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromLong(r);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "Lines for a run of plain DCP items of one stream."},
    {"fixed", fixed, METH_VARARGS, "The line of a frame of fixed fields only, and which shape it has."},
    {"compile_plans", compile_plans, METH_O, "The item layouts, read once for scan."},
    {"compile_rules", compile_rules, METH_VARARGS, "The checks of the lane's opcodes as programs, read once for scan."},
    {"check_facts", check_facts, METH_VARARGS, "Whether a check of an opcode says true over fact values."},
    {"cut", cut, METH_VARARGS, "End and count of the whole frames from a position."},
    {"valid_json", valid_json, METH_O, "Strict JSON check of ASCII bytes: 1, 0, or -1 (too deep)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "dcpinspect.families.mcbp._lane", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__lane(void) {
    PyObject *m = PyModule_Create(&module), *names = PyTuple_New(N_FACTS);
    if (m == NULL || names == NULL)
        goto bad;
    for (int i = 0; i < N_FACTS; i++) {
        PyObject *name = PyUnicode_FromString(FACT_NAMES[i]);
        if (name == NULL)
            goto bad;
        PyTuple_SET_ITEM(names, i, name);
    }
    if (PyModule_AddObject(m, "FACTS", names) < 0)
        goto bad;
    names = NULL;
    if (PyModule_AddStringConstant(m, "GENERATED", GENERATED_FINGERPRINT) < 0)
        goto bad;
    return m;
bad:
    Py_XDECREF(names);
    Py_XDECREF(m);
    return NULL;
}
