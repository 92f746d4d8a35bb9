/* The prefix report's table in C: memory, keys and elements by (db, prefix), at most `cap`
 * rows, exactly as usage.PrefixTable keeps them (the Python table is the reference; the
 * tests hold the two to the same rows, byte for byte):
 *
 *   - a key is cut into its prefixes as usage.prefixes() cuts it: at the earliest of the
 *     separators from where the last cut ended (the first separator given, of those that
 *     start there), up to `depth` levels, each prefix ending with its separator;
 *   - a prefix not in the table when it holds `cap` rows first prunes it: the cap // 2
 *     heaviest rows stay, heaviest first, rows of equal memory in the order they were
 *     (heapq.nlargest's order), and the rows dropped are counted in `pruned`; the new row
 *     then comes last.
 *
 * The rows live in one array in their order (a Python dict's), found by an open-addressed
 * index of their hashes; a prefix is hashed as it grows (FNV-1a), so that a key's levels
 * cost one pass over its bytes, and a prefix's bytes are copied only for a new row.
 *
 * Sums are int64: a key whose figures could take the table's running totals past that
 * raises OverflowError before the table changes, and usage.py carries on in Python. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    int64_t db, memory, keys, elements;
    uint64_t hash;
    Py_ssize_t len;
    char *bytes;
} Row;

typedef struct {
    PyObject_HEAD
    Py_ssize_t cap, depth, nseps;
    PyObject *seps;          /* a tuple of non-empty bytes */
    long long pruned;
    Row *rows;               /* in their order */
    Py_ssize_t n, room;
    uint64_t *slots;         /* the row's hash's top 32 bits, then its index + 1; 0: empty */
    size_t mask;
    int64_t memory_in, elements_in, keys_in;  /* what all rows' sums are bounded by */
} Table;

#define FNV_START 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static inline uint64_t fnv(uint64_t h, const char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * FNV_PRIME;
    return h;
}

static inline uint64_t finish(uint64_t h, int64_t db) {
    h ^= (uint64_t)db * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

/* A slot: the hash's top half (compared before the row is looked at), the row's index + 1. */
static inline uint64_t slot_of(uint64_t h, Py_ssize_t i) { return (h & 0xffffffff00000000ULL) | (uint64_t)(i + 1); }

static int index_rows(Table *t) {
    size_t size = 8;
    while (size < (size_t)t->n * 2 + 2 || size < (size_t)t->room * 2)
        size <<= 1;
    if (t->slots == NULL || size != t->mask + 1) {
        uint64_t *slots = PyMem_Calloc(size, sizeof(uint64_t));
        if (slots == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        PyMem_Free(t->slots);
        t->slots = slots;
        t->mask = size - 1;
    } else {
        memset(t->slots, 0, size * sizeof(uint64_t));
    }
    for (Py_ssize_t i = 0; i < t->n; i++) {
        size_t j = t->rows[i].hash & t->mask;
        while (t->slots[j])
            j = (j + 1) & t->mask;
        t->slots[j] = slot_of(t->rows[i].hash, i);
    }
    return 0;
}

/* The slot of (db, p[:n]) of this hash: its row's index + 1 there, or 0 (free). */
static inline size_t find(Table *t, int64_t db, const char *p, Py_ssize_t n, uint64_t h) {
    size_t j = h & t->mask;
    uint64_t tag = h & 0xffffffff00000000ULL;
    for (;;) {
        uint64_t s = t->slots[j];
        if (s == 0)
            return j;
        if ((s & 0xffffffff00000000ULL) == tag) {
            Row *r = &t->rows[(s & 0xffffffffULL) - 1];
            if (r->hash == h && r->len == n && r->db == db && memcmp(r->bytes, p, (size_t)n) == 0)
                return j;
        }
        j = (j + 1) & t->mask;
    }
}

typedef struct {
    int64_t memory;
    Py_ssize_t at;
} Order;

static int heavier_first(const void *a, const void *b) {
    const Order *x = a, *y = b;
    if (x->memory != y->memory)
        return x->memory > y->memory ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

static inline void swap(Order *a, Order *b) {
    Order x = *a;
    *a = *b;
    *b = x;
}

/* o[0:n] rearranged so that its `k` first are the heaviest (in no order): a quickselect
 * on the median of three, which sorts what is left after 2 log2(n) rounds (so that no
 * order of figures makes it quadratic). */
static void select_heaviest(Order *o, Py_ssize_t n, Py_ssize_t k) {
    Py_ssize_t lo = 0, hi = n - 1, rounds = 0;
    for (Py_ssize_t m = n; m > 1; m >>= 1)
        rounds += 2;
    while (hi > lo) {
        if (rounds-- <= 0) {
            qsort(o + lo, (size_t)(hi - lo + 1), sizeof(Order), heavier_first);
            return;
        }
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (heavier_first(&o[mid], &o[lo]) < 0)
            swap(&o[mid], &o[lo]);
        if (heavier_first(&o[hi], &o[lo]) < 0)
            swap(&o[hi], &o[lo]);
        if (heavier_first(&o[hi], &o[mid]) < 0)
            swap(&o[hi], &o[mid]);
        swap(&o[mid], &o[hi]); /* the median, as the pivot, at hi */
        Py_ssize_t store = lo;
        for (Py_ssize_t i = lo; i < hi; i++)
            if (heavier_first(&o[i], &o[hi]) < 0)
                swap(&o[i], &o[store++]);
        swap(&o[store], &o[hi]);
        if (store == k || store == k - 1)
            return; /* o[0:store+1] are the store+1 heaviest, o[0:store] the store heaviest */
        if (store < k)
            lo = store + 1;
        else
            hi = store - 1;
    }
}

/* The `k` heaviest rows (all when k >= n), heaviest first (equal memory: in their order);
 * Order[k] (of n allocated) or NULL. */
static Order *ordered(Table *t, Py_ssize_t k) {
    Order *o = PyMem_Malloc((size_t)(t->n ? t->n : 1) * sizeof(Order));
    if (o == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < t->n; i++) {
        o[i].memory = t->rows[i].memory;
        o[i].at = i;
    }
    if (k < t->n)
        select_heaviest(o, t->n, k);
    else
        k = t->n;
    qsort(o, (size_t)k, sizeof(Order), heavier_first);
    return o;
}

static int prune(Table *t) {
    Py_ssize_t keep = t->cap / 2;
    if (keep > t->n)
        keep = t->n;
    Order *o = ordered(t, keep);
    if (o == NULL)
        return -1;
    Row *rows = PyMem_Malloc((size_t)(t->room ? t->room : 1) * sizeof(Row));
    if (rows == NULL) {
        PyMem_Free(o);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < keep; i++)
        rows[i] = t->rows[o[i].at];
    for (Py_ssize_t i = keep; i < t->n; i++)
        PyMem_Free(t->rows[o[i].at].bytes);
    PyMem_Free(o);
    PyMem_Free(t->rows);
    t->rows = rows;
    t->pruned += t->n - keep;
    t->n = keep;
    return index_rows(t);
}

/* A new row for (db, p[:n]) of hash h; 0, or -1 with an exception set. */
static int insert(Table *t, int64_t db, const char *p, Py_ssize_t n, uint64_t h, int64_t memory,
                  int64_t elements) {
    if (t->n >= t->cap && prune(t) < 0)
        return -1;
    if (t->n >= t->room) {
        Py_ssize_t room = t->room ? t->room * 2 : 1024;
        if (room > t->cap + 1)
            room = t->cap + 1;
        if (room <= t->n)
            room = t->n + 1;
        Row *rows = PyMem_Realloc(t->rows, (size_t)room * sizeof(Row));
        if (rows == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->rows = rows;
        t->room = room;
        if (index_rows(t) < 0)
            return -1;
    }
    char *bytes = PyMem_Malloc(n ? (size_t)n : 1);
    if (bytes == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(bytes, p, (size_t)n);
    Row *r = &t->rows[t->n];
    r->db = db;
    r->memory = memory;
    r->keys = 1;
    r->elements = elements;
    r->hash = h;
    r->len = n;
    r->bytes = bytes;
    t->n++;
    t->slots[find(t, db, p, n, h)] = slot_of(h, t->n - 1);
    return 0;
}

static int add_one(Table *t, int64_t db, const char *p, Py_ssize_t n, uint64_t h, int64_t memory,
                   int64_t elements) {
    uint64_t s = t->slots[find(t, db, p, n, h)];
    if (s == 0)
        return insert(t, db, p, n, h, memory, elements);
    Row *r = &t->rows[(s & 0xffffffffULL) - 1];
    r->memory += memory;
    r->keys += 1;
    r->elements += elements;
    return 0;
}

/* The int64 figures of one call, after checking that the table's running totals stay
 * within int64 when they come `times` times more (so that no row's sum can overflow). */
static int figures(Table *t, PyObject *const fig[3], int64_t *db, int64_t *memory, int64_t *elements,
                   Py_ssize_t times) {
    long long v[3];
    for (int i = 0; i < 3; i++) {
        v[i] = PyLong_AsLongLong(fig[i]);
        if (v[i] == -1 && PyErr_Occurred())
            return -1;
    }
    if (v[1] < 0 || v[2] < 0) {
        PyErr_SetString(PyExc_OverflowError, "PrefixTable: negative figures");
        return -1;
    }
    int64_t m, e, k;
    if (__builtin_mul_overflow((int64_t)v[1], (int64_t)times, &m) || __builtin_add_overflow(m, t->memory_in, &m) ||
        __builtin_mul_overflow((int64_t)v[2], (int64_t)times, &e) || __builtin_add_overflow(e, t->elements_in, &e) ||
        __builtin_add_overflow((int64_t)times, t->keys_in, &k)) {
        PyErr_SetString(PyExc_OverflowError, "PrefixTable: sums past int64");
        return -1;
    }
    t->memory_in = m;
    t->elements_in = e;
    t->keys_in = k;
    *db = v[0];
    *memory = v[1];
    *elements = v[2];
    return 0;
}

/* add_key(db, key, memory, elements): a key's memory and elements under each of its prefixes. */
static PyObject *table_add_key(Table *t, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "add_key(db, key, memory, elements)");
        return NULL;
    }
    PyObject *key = args[1];
    if (!PyBytes_Check(key)) {
        PyErr_SetString(PyExc_TypeError, "add_key: the key must be bytes");
        return NULL;
    }
    const char *k = PyBytes_AS_STRING(key);
    Py_ssize_t klen = PyBytes_GET_SIZE(key);
    /* the ends of its prefixes */
    Py_ssize_t ends[64], *end = ends;
    Py_ssize_t depth = t->depth, count = 0, at = 0;
    if (depth > 64) {
        end = PyMem_Malloc((size_t)depth * sizeof(Py_ssize_t));
        if (end == NULL)
            return PyErr_NoMemory();
    }
    while (count < depth) {
        Py_ssize_t cut = -1, step = 0;
        for (Py_ssize_t s = 0; s < t->nseps; s++) {
            PyObject *sep = PyTuple_GET_ITEM(t->seps, s);
            Py_ssize_t n = PyBytes_GET_SIZE(sep);
            const char *sp = PyBytes_AS_STRING(sep);
            Py_ssize_t limit = cut >= 0 ? cut + 1 : klen;  /* an earlier one only, or the first at cut */
            if (limit > klen - n + 1)
                limit = klen - n + 1;
            for (Py_ssize_t i = at; i < limit; i++) {
                const char *hit = memchr(k + i, sp[0], (size_t)(limit - i));
                if (hit == NULL)
                    break;
                i = hit - k;
                if (memcmp(hit, sp, (size_t)n) == 0) {
                    if (cut < 0 || i < cut) {
                        cut = i;
                        step = n;
                    }
                    break;
                }
            }
        }
        if (cut < 0)
            break;
        at = cut + step;
        end[count++] = at;
    }
    int64_t db, memory, elements;
    PyObject *const fig[3] = {args[0], args[2], args[3]};
    if (count == 0 || figures(t, fig, &db, &memory, &elements, count) < 0) {
        if (end != ends)
            PyMem_Free(end);
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    uint64_t h = FNV_START;
    Py_ssize_t from = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        h = fnv(h, k + from, end[i] - from);
        from = end[i];
        if (add_one(t, db, k, end[i], finish(h, db), memory, elements) < 0) {
            if (end != ends)
                PyMem_Free(end);
            return NULL;
        }
    }
    if (end != ends)
        PyMem_Free(end);
    Py_RETURN_NONE;
}

/* add(db, prefix, memory, elements): a memory and elements under one prefix. */
static PyObject *table_add(Table *t, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "add(db, prefix: bytes, memory, elements)");
        return NULL;
    }
    int64_t db, memory, elements;
    PyObject *const fig[3] = {args[0], args[2], args[3]};
    if (figures(t, fig, &db, &memory, &elements, 1) < 0)
        return NULL;
    const char *p = PyBytes_AS_STRING(args[1]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[1]);
    if (add_one(t, db, p, n, finish(fnv(FNV_START, p, n), db), memory, elements) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *row_item(Row *r) {
    return Py_BuildValue("((Ly#)[LLL])", (long long)r->db, r->bytes, r->len, (long long)r->memory,
                         (long long)r->keys, (long long)r->elements);
}

/* heaviest(n=None): the n heaviest rows (all when n is None or 0), heaviest first, as
 * ((db, prefix), [memory, keys, elements]) */
static PyObject *table_heaviest(Table *t, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t n = t->n;
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "heaviest(n=None)");
        return NULL;
    }
    if (nargs == 1 && args[0] != Py_None) {
        Py_ssize_t want = PyLong_AsSsize_t(args[0]);
        if (want == -1 && PyErr_Occurred())
            return NULL;
        if (want > 0 && want < n)
            n = want;
        if (want < 0)
            n = 0;
    }
    Order *o = ordered(t, n);
    if (o == NULL)
        return NULL;
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *item = row_item(&t->rows[o[i].at]);
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, item);
    }
    PyMem_Free(o);
    return out;
}

/* rows(): every row in its order, as heaviest() gives them (to carry on in Python) */
static PyObject *table_rows(Table *t, PyObject *unused) {
    PyObject *out = PyList_New(t->n);
    for (Py_ssize_t i = 0; out != NULL && i < t->n; i++) {
        PyObject *item = row_item(&t->rows[i]);
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static PyObject *table_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *names[] = {"cap", "seps", "depth", NULL};
    Py_ssize_t cap, depth;
    PyObject *seps;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "nO!n", names, &cap, &PyTuple_Type, &seps, &depth))
        return NULL;
    if (cap < 0 || cap >= 0x7fffffff || depth < 0 || PyTuple_GET_SIZE(seps) == 0) {
        PyErr_SetString(PyExc_ValueError, "PrefixTable: a cap under 2**31, a depth of 0 or more, and a separator");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seps); i++) {
        PyObject *s = PyTuple_GET_ITEM(seps, i);
        if (!PyBytes_CheckExact(s) || PyBytes_GET_SIZE(s) == 0) {
            PyErr_SetString(PyExc_ValueError, "PrefixTable: each separator non-empty bytes");
            return NULL;
        }
    }
    Table *t = (Table *)type->tp_alloc(type, 0);
    if (t == NULL)
        return NULL;
    t->cap = cap;
    t->depth = depth;
    t->nseps = PyTuple_GET_SIZE(seps);
    Py_INCREF(seps);
    t->seps = seps;
    if (index_rows(t) < 0) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static void table_dealloc(Table *t) {
    for (Py_ssize_t i = 0; i < t->n; i++)
        PyMem_Free(t->rows[i].bytes);
    PyMem_Free(t->rows);
    PyMem_Free(t->slots);
    Py_XDECREF(t->seps);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static Py_ssize_t table_len(Table *t) { return t->n; }

static PyObject *get_pruned(Table *t, void *unused) { return PyLong_FromLongLong(t->pruned); }
static PyObject *get_cap(Table *t, void *unused) { return PyLong_FromSsize_t(t->cap); }
static PyObject *get_depth(Table *t, void *unused) { return PyLong_FromSsize_t(t->depth); }
static PyObject *get_seps(Table *t, void *unused) { return Py_NewRef(t->seps); }

static PyGetSetDef table_getset[] = {
    {"pruned", (getter)get_pruned, NULL, "the rows dropped by prunings", NULL},
    {"cap", (getter)get_cap, NULL, "the most rows held", NULL},
    {"depth", (getter)get_depth, NULL, "the most prefixes cut from a key", NULL},
    {"seps", (getter)get_seps, NULL, "the separators a key is cut at", NULL},
    {NULL},
};

static PyMethodDef table_methods[] = {
    {"add_key", (PyCFunction)(void (*)(void))table_add_key, METH_FASTCALL,
     "add_key(db, key, memory, elements): under each of the key's prefixes."},
    {"add", (PyCFunction)(void (*)(void))table_add, METH_FASTCALL,
     "add(db, prefix, memory, elements): under this one prefix."},
    {"heaviest", (PyCFunction)(void (*)(void))table_heaviest, METH_FASTCALL,
     "heaviest(n=None): the n heaviest rows, ((db, prefix), [memory, keys, elements])."},
    {"rows", (PyCFunction)table_rows, METH_NOARGS, "rows(): every row, in the table's order."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods table_sequence = {.sq_length = (lenfunc)table_len};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dcpinspect.families.redis.reports._prefixes.PrefixTable",
    .tp_basicsize = sizeof(Table),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "PrefixTable(cap, seps, depth): usage.PrefixTable's rows, kept in C.",
    .tp_new = table_new,
    .tp_dealloc = (destructor)table_dealloc,
    .tp_methods = table_methods,
    .tp_getset = table_getset,
    .tp_as_sequence = &table_sequence,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_prefixes",
    .m_doc = "The prefix report's table in C (usage.PrefixTable's rows).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__prefixes(void) {
    if (PyType_Ready(&TableType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&TableType);
    if (PyModule_AddObject(m, "PrefixTable", (PyObject *)&TableType) < 0) {
        Py_DECREF(&TableType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
