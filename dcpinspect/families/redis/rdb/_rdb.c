/* RDB's inner loops in C: the CRC-64 (spec/rdb.md §7), LZF strings (§3.2) and the
 * ziplist and listpack layouts (§6.1, §6.2), for dcpinspect/families/redis/crc64.py,
 * lzf.py and layouts.py.
 *
 * Each function answers only for input the Python reading accepts, and gives exactly what
 * it gives (the same bytes, the same entries); for anything else it returns None and the
 * caller runs the Python reading, which says what is wrong and where. Declining is always
 * safe: an input this file accepts is one the Python reading accepts
 * (tests/test_rdb_fast.py checks both on valid and damaged blobs).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

/* x in decimal into num (as printf's %lld writes it), its length */
static int i64_text(char num[24], long long x) {
    char t[24], *w = t + 24;
    unsigned long long u = x < 0 ? 0 - (unsigned long long)x : (unsigned long long)x;
    do {
        *--w = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0)
        *--w = '-';
    int n = (int)(t + 24 - w);
    memcpy(num, w, (size_t)n);
    num[n] = 0;
    return n;
}

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

static int64_t le64s(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return (int64_t)v;
}

static int32_t int24(const uint8_t *p) {
    int32_t v = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16);
    return (v & 0x800000) ? v - (1 << 24) : v;
}

/* -- CRC-64 (§7) ----------------------------------------------------------------------- */

/* Jones' polynomial, reflected, 8 bytes at a time (slicing-by-8): table[k][b] is the CRC
 * of byte b followed by k zero bytes */
#define CRC64_POLY 0x95AC9329AC4BC9B5ULL
static uint64_t crc_table[8][256];

static void crc_init(void) {
    for (int n = 0; n < 256; n++) {
        uint64_t c = (uint64_t)n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC64_POLY : c >> 1;
        crc_table[0][n] = c;
    }
    for (int n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            crc_table[k][n] = (crc_table[k - 1][n] >> 8) ^ crc_table[0][crc_table[k - 1][n] & 0xFF];
}

static uint64_t crc_run(uint64_t crc, const uint8_t *p, size_t n) {
    while (n >= 8) {
        crc ^= (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
               (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
        crc = crc_table[7][crc & 0xFF] ^ crc_table[6][(crc >> 8) & 0xFF] ^ crc_table[5][(crc >> 16) & 0xFF] ^
              crc_table[4][(crc >> 24) & 0xFF] ^ crc_table[3][(crc >> 32) & 0xFF] ^
              crc_table[2][(crc >> 40) & 0xFF] ^ crc_table[1][(crc >> 48) & 0xFF] ^ crc_table[0][crc >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CRC_CLMUL 1

/* With carry-less multiplication (PCLMULQDQ), 64 bytes at a time: four 16-byte lanes
 * folded forward (a lane X becomes X * x^distance mod P, as two 64x64 products), then
 * folded into one, whose 16 bytes and the tail go through the table: the CRC of the folded
 * message is the CRC of the whole (the CRC is linear, and the folds keep it mod P). A lane
 * holds the message's bits as they come (bit 0 of byte 0 the highest power), the way the
 * reflected CRC reads them, in which a product comes out shifted by one: the constants
 * are x^(distance + 63) and x^(distance - 1) mod P. */
static int crc_has_clmul;
static __m128i crc_fold16, crc_fold64;

static uint64_t reflect64(uint64_t x) {
    uint64_t r = 0;
    for (int i = 0; i < 64; i++)
        if (x >> i & 1)
            r |= 1ULL << (63 - i);
    return r;
}

/* x^n mod P, reflected as a lane holds it */
static uint64_t crc_xpow(unsigned n) {
    uint64_t p = reflect64(CRC64_POLY), r = 1;
    for (unsigned i = 0; i < n; i++)
        r = (r << 1) ^ ((r >> 63) ? p : 0);
    return reflect64(r);
}

__attribute__((target("pclmul,sse2"))) static inline __m128i crc_fold(__m128i x, __m128i k) {
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target("pclmul,sse2"))) static uint64_t crc_clmul(uint64_t crc, const uint8_t *p, size_t n) {
    __m128i x0 = _mm_loadu_si128((const __m128i *)p), x1 = _mm_loadu_si128((const __m128i *)(p + 16)),
            x2 = _mm_loadu_si128((const __m128i *)(p + 32)), x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    x0 = _mm_xor_si128(x0, _mm_cvtsi64_si128((long long)crc));
    p += 64;
    n -= 64;
    while (n >= 64) {
        x0 = _mm_xor_si128(crc_fold(x0, crc_fold64), _mm_loadu_si128((const __m128i *)p));
        x1 = _mm_xor_si128(crc_fold(x1, crc_fold64), _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = _mm_xor_si128(crc_fold(x2, crc_fold64), _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = _mm_xor_si128(crc_fold(x3, crc_fold64), _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    x1 = _mm_xor_si128(crc_fold(x0, crc_fold16), x1);
    x2 = _mm_xor_si128(crc_fold(x1, crc_fold16), x2);
    x3 = _mm_xor_si128(crc_fold(x2, crc_fold16), x3);
    while (n >= 16) {
        x3 = _mm_xor_si128(crc_fold(x3, crc_fold16), _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    uint8_t last[16];
    _mm_storeu_si128((__m128i *)last, x3);
    return crc_run(crc_run(0, last, 16), p, n);
}
#endif

static uint64_t crc_any(uint64_t crc, const uint8_t *p, size_t n) {
#ifdef CRC_CLMUL
    if (crc_has_clmul && n >= 64)
        return crc_clmul(crc, p, n);
#endif
    return crc_run(crc, p, n);
}

static PyObject *crc64(PyObject *self, PyObject *args) {
    Py_buffer view;
    unsigned long long crc = 0;
    if (!PyArg_ParseTuple(args, "y*|K", &view, &crc))
        return NULL;
    uint64_t out;
    Py_BEGIN_ALLOW_THREADS
    out = crc_any((uint64_t)crc, view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(out);
}

static PyObject *crc64_table(PyObject *self, PyObject *args) {
    /* for tests: the table's CRC, eight bytes at a time */
    Py_buffer view;
    unsigned long long crc = 0;
    if (!PyArg_ParseTuple(args, "y*|K", &view, &crc))
        return NULL;
    uint64_t out = crc_run((uint64_t)crc, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(out);
}

/* -- LZF ------------------------------------------------------------------------------ */

/* Run the LZF tokens of in[0:n] that should make ulen bytes: 1 when they make exactly
 * ulen, 0 when lzf.decompress would raise. out == NULL: only check. slack: out has room
 * for ulen + 32 bytes, which takes whole 32-byte literal copies and 8-byte back-reference
 * copies (a reference at least 8 back reads only bytes already made): the same result,
 * faster. */
static int lzf_walk(const uint8_t *in, size_t n, uint8_t *out, size_t ulen, int slack) {
    size_t i = 0, o = 0;
    while (i < n) {
        unsigned c = in[i++];
        if (c < 32) {
            size_t run = c + 1;
            if (i + run > n || o + run > ulen)
                return 0;
            if (out && slack && i + 32 <= n) {
                memcpy(out + o, in + i, 16);
                memcpy(out + o + 16, in + i + 16, 16);
            } else if (out) {
                memcpy(out + o, in + i, run);
            }
            i += run;
            o += run;
            continue;
        }
        size_t len = c >> 5;
        if (len == 7) {
            if (i >= n)
                return 0;
            len += in[i++];
        }
        if (i >= n)
            return 0;
        size_t back = ((size_t)(c & 0x1f) << 8) + in[i++] + 1;
        len += 2;
        if (back > o || o + len > ulen)
            return 0;
        if (out) {
            uint8_t *dst = out + o;
            const uint8_t *src = dst - back;
            if (slack && back >= 8)
                for (size_t k = 0; k < len; k += 8)
                    memcpy(dst + k, src + k, 8);
            else if (!slack && back >= len)
                memcpy(dst, src, len);
            else
                for (size_t k = 0; k < len; k++)
                    dst[k] = src[k];
        }
        o += len;
    }
    return o == ulen;
}

static int lzf_run(const uint8_t *in, size_t n, uint8_t *out, size_t ulen) {
    return lzf_walk(in, n, out, ulen, 0);
}

/* lzf_run's decoding into out with room for ulen + 32 bytes (lzf_walk's slack) */
static int lzf_decode(const uint8_t *in, size_t n, uint8_t *out, size_t ulen) {
    return lzf_walk(in, n, out, ulen, 1);
}

static PyObject *lzf(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t ulen;
    if (!PyArg_ParseTuple(args, "y*n", &view, &ulen))
        return NULL;
    /* a token makes at most 264 bytes of 3 (a back-reference with a length byte): more
       than 88 times the input cannot come out, and is not allocated */
    if (ulen < 0 || (size_t)ulen > (size_t)view.len * 88) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, ulen);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = lzf_run(view.buf, (size_t)view.len, (uint8_t *)PyBytes_AS_STRING(out), (size_t)ulen);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (!ok) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}

static PyObject *lzf_fast(PyObject *self, PyObject *args) {
    /* for tests: lzf_decode's bytes (None where it gives 0) */
    Py_buffer view;
    Py_ssize_t ulen;
    if (!PyArg_ParseTuple(args, "y*n", &view, &ulen))
        return NULL;
    uint8_t *out = ulen >= 0 && (size_t)ulen <= (size_t)view.len * 88 ? PyMem_Malloc((size_t)ulen + 32) : NULL;
    int ok = out != NULL && lzf_decode(view.buf, (size_t)view.len, out, (size_t)ulen);
    PyBuffer_Release(&view);
    PyObject *r = ok ? PyBytes_FromStringAndSize((const char *)out, ulen) : Py_NewRef(Py_None);
    PyMem_Free(out);
    return r;
}

static PyObject *lzf_ok(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t ulen;
    if (!PyArg_ParseTuple(args, "y*n", &view, &ulen))
        return NULL;
    int ok = ulen >= 0 && lzf_run(view.buf, (size_t)view.len, NULL, (size_t)ulen);
    PyBuffer_Release(&view);
    return PyBool_FromLong(ok);
}

/* -- strings in a row (§3.2) ----------------------------------------------------------- */

/* Pass over up to n strings from buf[p], each followed by `tail` more bytes (a ZSET_2
 * score): plain ones and integer-encoded ones, none longer than cap. Stops before the first
 * one that is not whole in the buffer, that primitives.skip_string would not pass over
 * without a complaint (too long, an unknown encoding, a length that is no length), or that
 * is LZF (whose inflated bytes the Python reading charges to the input's budget): the
 * caller reads that one its own way. */
static PyObject *skip_strings(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t p, n, tail;
    unsigned long long cap;
    PyObject *items = Py_None; /* a list: each string is appended, as primitives.read_string reads it */
    if (!PyArg_ParseTuple(args, "y*nnKn|O", &view, &p, &n, &cap, &tail, &items))
        return NULL;
    if (items != Py_None && !PyList_Check(items)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "items: a list");
        return NULL;
    }
    int take = items != Py_None;
    const uint8_t *b = view.buf;
    size_t len = (size_t)view.len, at = p < 0 ? len : (size_t)p;
    Py_ssize_t done = 0;
    while (done < n && at < len) {
        unsigned c = b[at];
        size_t q = at + 1;
        uint64_t size;
        unsigned kind = c >> 6;
        if (kind == 0) {
            size = c;
        } else if (kind == 1) {
            if (q + 1 > len)
                break;
            size = (uint64_t)(c & 0x3F) << 8 | b[q];
            q += 1;
        } else if (c == 0x80) {
            if (q + 4 > len)
                break;
            size = be32(b + q);
            q += 4;
        } else if (c == 0x81) {
            if (q + 8 > len)
                break;
            size = (uint64_t)be32(b + q) << 32 | be32(b + q + 4);
            q += 8;
        } else if (c == 0xC0 || c == 0xC1 || c == 0xC2) {
            size = c == 0xC0 ? 1 : c == 0xC1 ? 2 : 4;
        } else {
            break; /* LZF among them: the Python reading charges what it inflates to (the input's budget) */
        }
        if (kind < 2 || c == 0x80 || c == 0x81) {
            if (size > cap)
                break;
        }
        if (size > len - q || (size_t)tail > len - q - size)
            break;
        if (take) {
            PyObject *v;
            if (kind == 3) { /* an integer, given back in decimal */
                long long x = c == 0xC0 ? (long long)(int8_t)b[q]
                              : c == 0xC1 ? (long long)(int16_t)(b[q] | b[q + 1] << 8)
                                          : (long long)(int32_t)le32(b + q);
                char num[24];
                int m = i64_text(num, x);
                v = PyBytes_FromStringAndSize(num, m);
            } else
                v = PyBytes_FromStringAndSize((const char *)b + q, (Py_ssize_t)size);
            if (v == NULL)
                goto fail;
            int bad = PyList_Append(items, v);
            Py_DECREF(v);
            if (bad < 0)
                goto fail;
        }
        at = q + (size_t)size + (size_t)tail;
        done++;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(nn)", (Py_ssize_t)at, done);
fail:
    PyBuffer_Release(&view);
    return NULL;
}

/* -- entries ---------------------------------------------------------------------------- */

/* append a string entry (keep != 0) */
static int put_bytes(PyObject *list, const uint8_t *p, size_t n) {
    PyObject *v = PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
    if (v == NULL)
        return -1;
    int r = PyList_Append(list, v);
    Py_DECREF(v);
    return r;
}

static int put_int(PyObject *list, int64_t n) {
    PyObject *v = PyLong_FromLongLong(n);
    if (v == NULL)
        return -1;
    int r = PyList_Append(list, v);
    Py_DECREF(v);
    return r;
}

/* Whether a score string is a plain decimal number (sign, digits, a point, an exponent):
 * float() takes every such string (and more, which the caller reads its own way). */
static int plain_float(const uint8_t *s, size_t n) {
    size_t i = 0, digits = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++, digits++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++, digits++;
    }
    if (!digits)
        return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t e = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++, e++;
        if (!e)
            return 0;
    }
    return i == n;
}

/* The members of one set, sorted set or hash (its fields) as 64-bit hashes of the text Redis
 * gives back (integers in decimal), for telling whether one repeats: the readers judge a
 * repeat (rdb-duplicate-member, rdb-duplicate-member-kept), so the lane only declines the
 * key when two hashes are equal, and a collision costs a reading in Python, never a finding. */
typedef struct {
    uint64_t *h;
    size_t n, room;
    unsigned step; /* every step-th entry is a member (2: field/value, member/score pairs) */
} Members;

static uint64_t member_hash(const uint8_t *s, size_t len) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ len, w; /* 8 bytes a step, then a final mix */
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 31;
    }
    w = 0;
    memcpy(&w, s + i, len - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

/* the members put so far, in order, for a few: no sort */
static int members_repeat_few(const uint64_t *h, size_t n) {
    for (size_t i = 1; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (h[i] == h[j])
                return 1;
    return 0;
}

static int members_put(Members *d, const uint8_t *s, size_t len) {
    if (d->n == d->room) {
        size_t room = d->room ? d->room * 2 : 64;
        uint64_t *h = PyMem_Realloc(d->h, room * sizeof(uint64_t));
        if (h == NULL)
            return -1; /* the key declined, no error raised */
        d->h = h;
        d->room = room;
    }
    d->h[d->n++] = member_hash(s, len);
    return 0;
}

static int members_put_int(Members *d, int64_t v) {
    char num[24];
    int k = i64_text(num, (long long)v);
    return members_put(d, (const uint8_t *)num, (size_t)k);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* the most members the table of members_repeat takes (512 KiB of it); more are sorted in
 * place, so that a huge collection costs no memory past its hashes */
#define MEMBERS_TABLED (1 << 15)

/* whether two of the members put since the last call hash alike (and none kept after):
 * up to MEMBERS_TABLED, each goes into an open-addressed table twice their number or more
 * (a hash of 0, which marks a free slot, said apart; a table that cannot be had counts as a
 * repeat, which declines the key to the readers); more are sorted */
static int members_repeat(Members *d) {
    size_t n = d->n;
    d->n = 0;
    if (n < 2)
        return 0;
    if (n <= 24)
        return members_repeat_few(d->h, n);
    if (n > MEMBERS_TABLED) {
        qsort(d->h, n, sizeof(uint64_t), cmp_u64);
        for (size_t i = 1; i < n; i++)
            if (d->h[i] == d->h[i - 1])
                return 1;
        return 0;
    }
    size_t slots = 64;
    while (slots < 2 * n)
        slots *= 2;
    uint64_t *t = PyMem_Calloc(slots, sizeof(uint64_t));
    if (t == NULL)
        return 1;
    int zero = 0, repeat = 0;
    for (size_t i = 0; i < n && !repeat; i++) {
        uint64_t h = d->h[i];
        if (h == 0) {
            repeat = zero;
            zero = 1;
            continue;
        }
        size_t j = (size_t)(h ^ h >> 29) & (slots - 1);
        while (t[j] != 0 && t[j] != h)
            j = (j + 1) & (slots - 1);
        repeat = t[j] == h;
        t[j] = h;
    }
    PyMem_Free(t);
    return repeat;
}

/* the entries of a listpack as C values, for the stream lane */
typedef struct {
    int64_t v;
    const uint8_t *s; /* NULL: an integer */
    size_t len;
} LpItem;

typedef struct {
    LpItem *items;
    size_t n, room;
} LpSink;

static int sink_put(LpSink *k, int64_t v, const uint8_t *s, size_t len) {
    if (k->n == k->room) {
        size_t room = k->room ? k->room * 2 : 256;
        LpItem *items = PyMem_Realloc(k->items, room * sizeof(LpItem));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        k->items = items;
        k->room = room;
    }
    k->items[k->n++] = (LpItem){v, s, len};
    return 0;
}

/* a string entry: appended to the list or the sink, or (scores) checked when it is a
 * score (every second entry); an integer entry: appended */
#define STRING_ENTRY(ptr, size)                                                                 \
    do {                                                                                       \
        if (mem && got % mem->step == 0 && members_put(mem, (ptr), (size)) < 0)                \
            return -1;                                                                         \
        if (list)                                                                              \
            r = put_bytes(list, (ptr), (size));                                                \
        else if (sink)                                                                         \
            r = sink_put(sink, 0, (ptr), (size));                                              \
        else if (scores && (got & 1) && !plain_float((ptr), (size)))                           \
            return 0;                                                                          \
    } while (0)
#define INT_ENTRY(x)                                                                            \
    (mem && got % mem->step == 0 && members_put_int(mem, (x)) < 0 ? -1                        \
     : list ? put_int(list, (x)) : sink ? sink_put(sink, (x), NULL, 0) : 0)

/* -- listpack (§6.2) -------------------------------------------------------------------- */

static int backlen_size(uint64_t size) {
    if (size <= 127)
        return 1;
    if (size < 16383)
        return 2;
    if (size < 2097151)
        return 3;
    if (size < 268435455)
        return 4;
    return 5;
}

/* 1: valid (entries appended to list, or only counted in *count when list is NULL);
 * 0: layouts.listpack would raise (or, with scores, a score is not plainly a number);
 * -1: a Python error. */
static int listpack_walk(const uint8_t *b, size_t n, PyObject *list, Py_ssize_t *count, int scores,
                         LpSink *sink, Members *mem) {
    if (n < 7 || le32(b) != n)
        return 0;
    unsigned declared = (unsigned)b[4] | (unsigned)b[5] << 8;
    size_t p = 6, end = n - 1;
    Py_ssize_t got = 0;
    while (p < end) {
        size_t at = p;
        unsigned c = b[p];
        int r = 0;
        if (c < 0x80) {
            r = INT_ENTRY(c);
            p += 1;
        } else if (c < 0xC0) {
            size_t size = c & 0x3F;
            if (p + 1 + size > n)
                return 0;
            STRING_ENTRY(b + p + 1, size);
            p += 1 + size;
        } else if (c < 0xE0) {
            if (p + 2 > n)
                return 0;
            int v = (int)((c & 0x1F) << 8 | b[p + 1]);
            r = INT_ENTRY((v & 0x1000) ? v - 8192 : v);
            p += 2;
        } else if (c < 0xF0) {
            if (p + 2 > n)
                return 0;
            size_t size = (size_t)(c & 0x0F) << 8 | b[p + 1];
            if (p + 2 + size > n)
                return 0;
            STRING_ENTRY(b + p + 2, size);
            p += 2 + size;
        } else if (c == 0xF0) {
            if (p + 5 > n)
                return 0;
            size_t size = le32(b + p + 1);
            if (p + 5 + size > n)
                return 0;
            STRING_ENTRY(b + p + 5, size);
            p += 5 + size;
        } else if (c == 0xF1) {
            if (p + 3 > n)
                return 0;
            r = INT_ENTRY((int16_t)((unsigned)b[p + 1] | (unsigned)b[p + 2] << 8));
            p += 3;
        } else if (c == 0xF2) {
            if (p + 4 > n)
                return 0;
            r = INT_ENTRY(int24(b + p + 1));
            p += 4;
        } else if (c == 0xF3) {
            if (p + 5 > n)
                return 0;
            r = INT_ENTRY((int32_t)le32(b + p + 1));
            p += 5;
        } else if (c == 0xF4) {
            if (p + 9 > n)
                return 0;
            r = INT_ENTRY(le64s(b + p + 1));
            p += 9;
        } else if (c == 0xFF) {
            break;
        } else {
            return 0;
        }
        if (r < 0)
            return -1;
        uint64_t size = p - at;
        int k = backlen_size(size);
        if (p + k > n)
            return 0;
        uint64_t v = 0;
        for (int i = 0; i < k; i++)
            v = v << 7 | (b[p + i] & 0x7F);
        if (v != size)
            return 0;
        p += k;
        got++;
    }
    if (p != end || b[end] != 0xFF)
        return 0;
    if (declared != 0xFFFF && declared != (unsigned long)got)
        return 0;
    if (count)
        *count = got;
    return 1;
}

static int listpack_run(const uint8_t *b, size_t n, PyObject *list, Py_ssize_t *count, int scores) {
    return listpack_walk(b, n, list, count, scores, NULL, NULL);
}

/* -- ziplist (§6.1) --------------------------------------------------------------------- */

static int ziplist_walk(const uint8_t *b, size_t n, PyObject *list, Py_ssize_t *count, int scores,
                        Members *mem, LpSink *sink) {
    if (n < 11 || le32(b) != n)
        return 0;
    uint32_t zltail = le32(b + 4);
    unsigned zllen = (unsigned)b[8] | (unsigned)b[9] << 8;
    size_t p = 10, prev = 0, last = 10, end = n - 1;
    Py_ssize_t got = 0;
    while (p < end) {
        size_t at = p;
        if (b[p] == 0xFF)
            break;
        size_t prevlen;
        if (b[p] < 0xFE) {
            prevlen = b[p];
            p += 1;
        } else {
            if (p + 5 > n)
                return 0;
            prevlen = le32(b + p + 1);
            p += 5;
        }
        if (prevlen != prev)
            return 0;
        if (p + 1 > n)
            return 0;
        unsigned enc = b[p];
        unsigned kind = enc >> 6;
        int r = 0;
        if (kind != 3) {
            size_t size;
            if (kind == 0) {
                size = enc & 0x3F;
                p += 1;
            } else if (kind == 1) {
                if (p + 2 > n)
                    return 0;
                size = (size_t)(enc & 0x3F) << 8 | b[p + 1];
                p += 2;
            } else if (enc == 0x80) {
                if (p + 5 > n)
                    return 0;
                size = be32(b + p + 1);
                p += 5;
            } else {
                return 0;
            }
            if (p + size > n)
                return 0;
            STRING_ENTRY(b + p, size);
            p += size;
        } else {
            p += 1;
            if (enc == 0xC0) {
                if (p + 2 > n)
                    return 0;
                r = INT_ENTRY((int16_t)((unsigned)b[p] | (unsigned)b[p + 1] << 8));
                p += 2;
            } else if (enc == 0xD0) {
                if (p + 4 > n)
                    return 0;
                r = INT_ENTRY((int32_t)le32(b + p));
                p += 4;
            } else if (enc == 0xE0) {
                if (p + 8 > n)
                    return 0;
                r = INT_ENTRY(le64s(b + p));
                p += 8;
            } else if (enc == 0xF0) {
                if (p + 3 > n)
                    return 0;
                r = INT_ENTRY(int24(b + p));
                p += 3;
            } else if (enc == 0xFE) {
                if (p + 1 > n)
                    return 0;
                r = INT_ENTRY((int8_t)b[p]);
                p += 1;
            } else if (enc >= 0xF1 && enc <= 0xFD) {
                r = INT_ENTRY((int)(enc & 0x0F) - 1);
            } else {
                return 0;
            }
        }
        if (r < 0)
            return -1;
        prev = p - at;
        last = at;
        got++;
    }
    if (p != end || b[end] != 0xFF)
        return 0;
    if (zllen != 0xFFFF && zllen != (unsigned long)got)
        return 0;
    if (got && zltail != last)
        return 0;
    if (count)
        *count = got;
    return 1;
}

static int ziplist_run(const uint8_t *b, size_t n, PyObject *list, Py_ssize_t *count, int scores) {
    return ziplist_walk(b, n, list, count, scores, NULL, NULL);
}

/* -- the keys seen: which key hashes a snapshot has serialised already --------------------- */

/* A set of 64-bit hashes (Python's hash() of each key's bytes), open addressing with linear
 * probing: 8 bytes a key where a Python set of ints takes some 80. add(h) is True when h
 * was not in it. The parser's rdb-duplicate-key rule uses it, from Python and from scan(). */
typedef struct {
    PyObject_HEAD
    uint64_t *slots; /* 0: empty (a hash of 0 is kept in has_zero) */
    size_t mask, count;
    int has_zero;
} Seen;

static int seen_grow(Seen *s) {
    size_t size = s->slots ? (s->mask + 1) * 2 : 1024;
    uint64_t *slots = PyMem_Calloc(size, sizeof(uint64_t));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (s->slots) {
        for (size_t i = 0; i <= s->mask; i++) {
            uint64_t h = s->slots[i];
            if (h) {
                size_t j = (size_t)(h ^ h >> 29) & (size - 1);
                while (slots[j])
                    j = (j + 1) & (size - 1);
                slots[j] = h;
            }
        }
        PyMem_Free(s->slots);
    }
    s->slots = slots;
    s->mask = size - 1;
    return 0;
}

/* 1: added, 0: there already, -1: no memory */
static int seen_add(Seen *s, uint64_t h) {
    if (h == 0) {
        int was = s->has_zero;
        s->has_zero = 1;
        s->count += !was;
        return !was;
    }
    if ((s->slots == NULL || (s->count + 1) * 4 > (s->mask + 1) * 3) && seen_grow(s) < 0)
        return -1;
    size_t j = (size_t)(h ^ h >> 29) & s->mask;
    while (s->slots[j]) {
        if (s->slots[j] == h)
            return 0;
        j = (j + 1) & s->mask;
    }
    s->slots[j] = h;
    s->count++;
    return 1;
}

static int seen_has(Seen *s, uint64_t h) {
    if (h == 0)
        return s->has_zero;
    if (s->slots == NULL)
        return 0;
    size_t j = (size_t)(h ^ h >> 29) & s->mask;
    while (s->slots[j]) {
        if (s->slots[j] == h)
            return 1;
        j = (j + 1) & s->mask;
    }
    return 0;
}

static void seen_dealloc(Seen *s) {
    PyMem_Free(s->slots);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *seen_add_py(Seen *s, PyObject *arg) {
    Py_hash_t h = PyLong_AsSsize_t(arg);
    if (h == -1 && PyErr_Occurred())
        return NULL;
    int r = seen_add(s, (uint64_t)h);
    if (r < 0)
        return NULL;
    return PyBool_FromLong(r);
}

static Py_ssize_t seen_len(Seen *s) { return (Py_ssize_t)s->count; }

static PyMethodDef seen_methods[] = {
    {"add", (PyCFunction)seen_add_py, METH_O, "add(h): True when the hash h was not in the set (it is now)."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods seen_sequence = {.sq_length = (lenfunc)seen_len};

static PyTypeObject SeenType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dcpinspect.families.redis.rdb._rdb.Seen",
    .tp_basicsize = sizeof(Seen),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The hashes of the keys a snapshot has serialised (8 bytes a key).",
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)seen_dealloc,
    .tp_methods = seen_methods,
    .tp_as_sequence = &seen_sequence,
};

/* -- records made in C ------------------------------------------------------------------ */

/* A Maker fills the slots of a slots dataclass (KeyRecord) straight, as its __init__
 * would: the fields scan() gives, in MADE order, and the others with their defaults (a
 * value, or a factory called for each record). Made from the class and its fields by
 * Python (rdb.py), which says which are which; it refuses a class whose slots those do
 * not cover exactly, so that no record is ever made half-filled. */
enum { M_DB, M_KEY, M_TYPE_ID, M_VTYPE, M_OFFSET, M_LENGTH, M_SIZE, M_ELEMENTS, M_ENCODING, M_EXPIRE, M_IDLE,
       M_FREQ, M_EXTRA, M_LINE, M_MADE };

typedef struct {
    PyObject_HEAD
    PyTypeObject *cls;
    Py_ssize_t made[M_MADE];
    Py_ssize_t nrest;
    Py_ssize_t *rest;       /* offsets */
    PyObject **rest_value;  /* the default, or the factory */
    char *rest_factory;
} Maker;

static Py_ssize_t slot_offset(PyTypeObject *cls, PyObject *name) {
    PyObject *d = PyDict_GetItemWithError(cls->tp_dict, name);
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "Maker: %R is no slot of %s", name, cls->tp_name);
        return -1;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    if (m->type != T_OBJECT_EX || (m->flags & READONLY)) {
        PyErr_Format(PyExc_TypeError, "Maker: %R is not a plain object slot", name);
        return -1;
    }
    return m->offset;
}

static void maker_dealloc(Maker *m) {
    for (Py_ssize_t i = 0; i < m->nrest; i++)
        Py_XDECREF(m->rest_value ? m->rest_value[i] : NULL);
    PyMem_Free(m->rest);
    PyMem_Free(m->rest_value);
    PyMem_Free(m->rest_factory);
    Py_XDECREF(m->cls);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

/* Maker(cls, made_names, rest): made_names the MADE fields' names in order, rest a sequence
 * of (name, default, is_factory) */
static PyObject *maker_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *cls, *names, *rest;
    if (!PyArg_ParseTuple(args, "O!OO", &PyType_Type, &cls, &names, &rest))
        return NULL;
    PyObject *slots = PyObject_GetAttrString(cls, "__slots__");
    if (slots == NULL)
        return NULL;
    PyObject *nseq = PySequence_Fast(names, "Maker: names");
    PyObject *rseq = nseq ? PySequence_Fast(rest, "Maker: rest") : NULL;
    Maker *m = rseq ? (Maker *)type->tp_alloc(type, 0) : NULL;
    if (m == NULL)
        goto fail;
    Py_INCREF(cls);
    m->cls = (PyTypeObject *)cls;
    Py_ssize_t nslots = PySequence_Size(slots);
    if (PySequence_Fast_GET_SIZE(nseq) != M_MADE || nslots != M_MADE + PySequence_Fast_GET_SIZE(rseq)) {
        PyErr_SetString(PyExc_TypeError, "Maker: the fields given are not the class's slots");
        goto fail;
    }
    for (Py_ssize_t i = 0; i < M_MADE; i++)
        if ((m->made[i] = slot_offset(m->cls, PySequence_Fast_GET_ITEM(nseq, i))) < 0)
            goto fail;
    m->nrest = PySequence_Fast_GET_SIZE(rseq);
    m->rest = PyMem_Calloc(m->nrest + 1, sizeof(Py_ssize_t));
    m->rest_value = PyMem_Calloc(m->nrest + 1, sizeof(PyObject *));
    m->rest_factory = PyMem_Calloc(m->nrest + 1, 1);
    if (!m->rest || !m->rest_value || !m->rest_factory) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < m->nrest; i++) {
        PyObject *name, *value;
        int factory;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(rseq, i), "OOp", &name, &value, &factory))
            goto fail;
        if ((m->rest[i] = slot_offset(m->cls, name)) < 0)
            goto fail;
        Py_INCREF(value);
        m->rest_value[i] = value;
        m->rest_factory[i] = (char)factory;
    }
    /* every slot once: no two fields at one offset */
    for (Py_ssize_t i = 0; i < M_MADE + m->nrest; i++)
        for (Py_ssize_t j = 0; j < i; j++) {
            Py_ssize_t a = i < M_MADE ? m->made[i] : m->rest[i - M_MADE];
            Py_ssize_t b = j < M_MADE ? m->made[j] : m->rest[j - M_MADE];
            if (a == b) {
                PyErr_SetString(PyExc_TypeError, "Maker: a field given twice");
                goto fail;
            }
        }
    Py_DECREF(slots);
    Py_DECREF(nseq);
    Py_DECREF(rseq);
    return (PyObject *)m;
fail:
    Py_XDECREF(slots);
    Py_XDECREF(nseq);
    Py_XDECREF(rseq);
    Py_XDECREF(m);
    return NULL;
}

static PyTypeObject MakerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dcpinspect.families.redis.rdb._rdb.Maker",
    .tp_basicsize = sizeof(Maker),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Fills a slots dataclass's slots as its __init__ would (see _rdb.c).",
    .tp_new = maker_new,
    .tp_dealloc = (destructor)maker_dealloc,
};

/* a record of m->cls with the MADE values given (references stolen, NULL: an error) */
static PyObject *maker_make(Maker *m, PyObject *made[M_MADE]) {
    PyObject *obj = NULL;
    for (int i = 0; i < M_MADE; i++)
        if (made[i] == NULL)
            goto fail;
    obj = m->cls->tp_alloc(m->cls, 0);
    if (obj == NULL)
        goto fail;
    for (int i = 0; i < M_MADE; i++) {
        *(PyObject **)((char *)obj + m->made[i]) = made[i];
        made[i] = NULL;
    }
    for (Py_ssize_t i = 0; i < m->nrest; i++) {
        PyObject *v = m->rest_factory[i] ? PyObject_CallNoArgs(m->rest_value[i]) : Py_NewRef(m->rest_value[i]);
        if (v == NULL) {
            Py_DECREF(obj);
            return NULL;
        }
        *(PyObject **)((char *)obj + m->rest[i]) = v;
    }
    return obj;
fail:
    for (int i = 0; i < M_MADE; i++)
        Py_XDECREF(made[i]);
    return NULL;
}

/* -- the record lane: whole key records straight from the buffer ------------------------ */

/* rdb.py's RdbParser calls scan() at a record boundary when values are not kept. scan()
 * goes record by record while each one is a key (with EXPIRETIME_MS, EXPIRETIME, IDLE and
 * FREQ before it) whose type the caller's table names, is whole in the buffer, and would
 * be read by the Python readers without a finding of their own: every string within the
 * cap, LZF that inflates to what it says, packed layouts undamaged, counts that divide.
 * It stops before the first other record (an opcode, a type it does not read, damage, the
 * end of the buffer), which the Python path reads; declining is always safe. For each key
 * it gives what the readers set: see the tuple below. It judges the keys as the parser's
 * _judge does, and leaves to it those it has something to say of: a key that expired
 * before the snapshot's ctime, a key whose hash is in `seen` already, and the key that
 * would fill the remembered keys (after `room` more). */

/* what the table gives a type byte: how its value is laid out (0: not read here) */
enum {
    L_STRING = 1, L_STRINGS, L_HASH, L_ZSET2, L_ZIPLIST, L_INTSET, L_ZIPLIST_ZSET, L_ZIPLIST_HASH,
    L_QUICKLIST, L_LISTPACK_HASH, L_LISTPACK_ZSET, L_QUICKLIST2, L_LISTPACK, L_STREAM1, L_STREAM2, L_STREAM3,
    L_STREAM4, L_SET_STRINGS
};

/* whether a packed layout is a ziplist (else a listpack) */
static int layout_ziplist(int code) { return code == L_ZIPLIST || code == L_ZIPLIST_ZSET || code == L_ZIPLIST_HASH; }

typedef struct {
    const uint8_t *b;
    size_t n;
    uint64_t cap;
    uint8_t *scratch;
    size_t room;
    Members mem; /* the members of the value being read (L_SET_STRINGS, L_HASH, L_ZSET2 and packed ones) */
    uint64_t lzf_left; /* the bytes LZF strings may still inflate to (the input's budget): past it, decline */
    int lines;         /* whole lines are written (_rdb_lines.h): an LZF string is inflated once, into scratch */
    size_t lzf_at;     /* where the LZF string whose bytes scratch holds starts (SIZE_MAX: none) */
    size_t need;       /* the buffer's end came inside a reading, which needs this many bytes of the buffer
                        * at least (0: none did): the record may be whole once more bytes come */
} Lane;

/* 0, having said that the buffer ends inside what is being read, which needs `need` bytes */
static int lane_short(Lane *L, uint64_t need) {
    if (L->need < need)
        L->need = need > SIZE_MAX ? SIZE_MAX : (size_t)need;
    return 0;
}

static int lane_len(Lane *L, size_t *q, uint64_t *out) {
    size_t i = *q;
    if (i >= L->n)
        return lane_short(L, i + 1);
    unsigned c = L->b[i];
    if (c >> 6 == 0) {
        *out = c;
        *q = i + 1;
    } else if (c >> 6 == 1) {
        if (i + 2 > L->n)
            return lane_short(L, i + 2);
        *out = (uint64_t)(c & 0x3F) << 8 | L->b[i + 1];
        *q = i + 2;
    } else if (c == 0x80) {
        if (i + 5 > L->n)
            return lane_short(L, i + 5);
        *out = be32(L->b + i + 1);
        *q = i + 5;
    } else if (c == 0x81) {
        if (i + 9 > L->n)
            return lane_short(L, i + 9);
        *out = (uint64_t)be32(L->b + i + 1) << 32 | be32(L->b + i + 5);
        *q = i + 9;
    } else {
        return 0;
    }
    return 1;
}

/* A count of things at least `per` bytes each (lane_len's reading): 0 also when the bytes
 * left in the buffer cannot hold that many, so that no count is taken on trust (the
 * readers, which go on as bytes come, are left to say what is wrong). */
static int lane_count(Lane *L, size_t *q, uint64_t *out, uint64_t per) {
    if (!lane_len(L, q, out))
        return 0;
    return *out <= (uint64_t)(L->n - *q) / per ? 1 : lane_short(L, *out > (UINT64_MAX - *q) / per ? UINT64_MAX : *q + *out * per);
}

/* kinds of string */
enum { S_RAW, S_INT, S_LZF };

/* The string at *q (primitives.read_string's reading): 1 and *q past it, or 0 to decline.
 * want 0: only its length as Redis gives it back (*len), LZF checked; want 1: its bytes
 * too (*data: in the buffer, or in L->scratch for LZF; integers as decimal text in num). */
static int lane_string(Lane *L, size_t *q, int want, const uint8_t **data, size_t *len, int *kind, char num[24]) {
    size_t i = *q;
    if (i >= L->n)
        return lane_short(L, i + 1);
    unsigned c = L->b[i];
    if (c >> 6 == 3) {
        unsigned enc = c & 0x3F;
        if (enc <= 2) {
            size_t w = enc == 0 ? 1 : enc == 1 ? 2 : 4;
            if (i + 1 + w > L->n)
                return lane_short(L, i + 1 + w);
            const uint8_t *v = L->b + i + 1;
            long long x = enc == 0 ? (long long)(int8_t)v[0]
                        : enc == 1 ? (long long)(int16_t)((unsigned)v[0] | (unsigned)v[1] << 8)
                                   : (long long)(int32_t)le32(v);
            int k = i64_text(num, x);
            *len = (size_t)k;
            *data = (const uint8_t *)num;
            *kind = S_INT;
            *q = i + 1 + w;
            return 1;
        }
        if (enc != 3)
            return 0;
        size_t r = i + 1;
        uint64_t clen, ulen;
        if (!lane_len(L, &r, &clen) || !lane_len(L, &r, &ulen))
            return 0;
        if (clen > L->cap || ulen > L->cap || ulen > L->lzf_left)
            return 0;
        if (clen > L->n - r)
            return lane_short(L, r + clen);
        L->lzf_left -= ulen;
        if (want && L->lzf_at == i) {
            /* inflated into scratch already (the lines read a value the lane has read) */
        } else if (want || L->lines) {
            if (ulen > clen * 88)
                return 0;
            if (ulen + 32 > L->room) {
                uint8_t *p = PyMem_Realloc(L->scratch, (size_t)ulen + 32);
                if (p == NULL)
                    return 0;
                L->scratch = p;
                L->room = (size_t)ulen + 32;
            }
            L->lzf_at = SIZE_MAX;
            if (!lzf_decode(L->b + r, (size_t)clen, L->scratch, (size_t)ulen))
                return 0;
            L->lzf_at = i;
        } else if (!lzf_run(L->b + r, (size_t)clen, NULL, (size_t)ulen)) {
            return 0;
        }
        *data = L->scratch;
        *len = (size_t)ulen;
        *kind = S_LZF;
        *q = r + (size_t)clen;
        return 1;
    }
    size_t r = i;
    uint64_t size;
    if (!lane_len(L, &r, &size) || size > L->cap)
        return 0;
    if (size > L->n - r)
        return lane_short(L, r + size);
    *data = L->b + r;
    *len = (size_t)size;
    *kind = S_RAW;
    *q = r + (size_t)size;
    return 1;
}

static int lane_skip(Lane *L, size_t *q) {
    const uint8_t *data;
    size_t len;
    int kind;
    char num[24];
    return lane_string(L, q, 0, &data, &len, &kind, num);
}

/* a packed layout's entries counted (scores: every second string plainly a number); its
 * bytes in *blen and where they are in *out (until the next string read) when asked; step >
 * 0: every step-th entry a member, 0 (declined) when one repeats */
static int lane_packed(Lane *L, size_t *q, int ziplist, int scores, Py_ssize_t *count, size_t *blen,
                       unsigned step, const uint8_t **out) {
    const uint8_t *data;
    size_t len;
    int kind;
    char num[24];
    if (!lane_string(L, q, 1, &data, &len, &kind, num) || kind == S_INT)
        return 0;
    if (blen)
        *blen = len;
    if (out)
        *out = data;
    Members *mem = step ? &L->mem : NULL;
    if (mem)
        mem->step = step;
    int r = ziplist ? ziplist_walk(data, len, NULL, count, scores, mem, NULL)
                    : listpack_walk(data, len, NULL, count, scores, NULL, mem);
    return r == 1 && !(mem && members_repeat(mem));
}

/* What the memory model (families/redis/memory.py) asks of each key when scan measures:
 * a table of allocations of an SDS string of each length under T, one of allocations of
 * each size under T, and a rule for each type byte (what to sum, and when to leave the
 * key to the readers, which keep its value): the model's facts stay in Python. */
enum { MR_DECLINE = 0, MR_ELEMENTS, MR_PACKED, MR_NODES, MR_STRING, MR_SET, MR_STREAM };
/* a type byte's rule (memory.py RULE_FIELDS): when to leave a key to the readers (mode, a,
 * b), and the sum of a key measured: base + slot x its dict's slots + node x its nodes + the
 * allocations summed + elem x its elements (the float, apart), rounded half to even as
 * Python's round(); enc: its encoding's index in the model's names */
typedef struct {
    int64_t mode, a, b, base, slot, node, enc, spare;
} Rule;
/* the model-wide figures (memory.py LANE_MODEL) */
enum { MD_KEY_ENTRY, MD_EMBSTR_REQUEST, MD_EMBSTR_MAX, MD_MIN_SLOTS, MD_STREAM_ID, MD_RAX_NODE, MD_STREAM_CG,
       MD_STREAM_NACK, MD_STREAM_CONSUMER, MD_ROBJ, MD_COUNT };
typedef struct {
    const uint32_t *sds, *alloc;
    size_t T;
    const Rule *rules; /* one a type byte */
    const double *elem; /* one a type byte */
    const int64_t *model;
    PyObject *encodings; /* a tuple of str */
} Measure;
typedef struct {
    uint64_t sum, largest, packed;
    int bad, numeric; /* numeric: every element so far is '-'/digits of at most 20 bytes */
} Measured;

/* whether an element might be a decimal integer (as_int in memory.py says whether it is) */
static int m_numeric(const uint8_t *d, size_t len, int kind) {
    if (kind == S_INT)
        return 1;
    if (kind != S_RAW || len == 0 || len > 20)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((d[i] >= '0' && d[i] <= '9') || (i == 0 && d[i] == '-')))
            return 0;
    return 1;
}

/* one element's SDS allocation (elements: the largest kept too) or one node's allocation */
static void m_add(const Measure *M, Measured *m, size_t len, int elements) {
    if (M == NULL)
        return;
    if (len >= M->T) {
        m->bad = 1;
        return;
    }
    m->sum += (elements ? M->sds : M->alloc)[len];
    if (elements && len > m->largest)
        m->largest = len;
}

/* whether a string's bytes are an integer as the server's string2ll reads them (memory.py
 * as_int): no sign but '-', no leading zero, no space, 64-bit */
static int m_as_int(const uint8_t *d, size_t len) {
    if (len == 0 || len > 20)
        return 0;
    if (len == 1 && d[0] == '0')
        return 1;
    size_t i = d[0] == '-' ? 1 : 0;
    if (i == len || d[i] == '0')
        return 0;
    uint64_t v = 0, limit = d[0] == '-' ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < len; i++) {
        if (d[i] < '0' || d[i] > '9')
            return 0;
        unsigned digit = d[i] - '0';
        if (v > (limit - digit) / 10)
            return 0;
        v = v * 10 + digit;
    }
    return 1;
}

/* the slots of a dict made for n elements (memory.py dict_slots) */
static uint64_t m_slots(const Measure *M, uint64_t n) {
    if (n == 0)
        return 0;
    uint64_t s = 1;
    while (s < n)
        s <<= 1;
    return s < (uint64_t)M->model[MD_MIN_SLOTS] ? (uint64_t)M->model[MD_MIN_SLOTS] : s;
}

/* x rounded half to even, as Python's round() (x >= 0) */
static int64_t m_round(double x) {
    int64_t f = (int64_t)x;
    double d = x - (double)f;
    return d > 0.5 ? f + 1 : d < 0.5 ? f : f + (f & 1);
}

/* The nodes of a rax holding n distinct 16-byte keys in ascending order (memory.py
 * rax_nodes: the root, each key, each point where keys part and the first node of each
 * side): each prefix marked at the first key that has it, then the distinct marked
 * prefixes of each length counted (keys of the same prefix are neighbours). -1: not in
 * ascending order, the readers' to count. */
static int64_t m_rax_nodes(const uint8_t *ids, uint64_t n, uint32_t *marks, uint8_t *lcp) {
    if (n == 0)
        return 1;
    for (uint64_t i = 0; i < n; i++)
        marks[i] = 1u << 16;
    marks[0] |= 1;
    lcp[0] = 0;
    for (uint64_t i = 1; i < n; i++) {
        const uint8_t *a = ids + 16 * (i - 1), *b = ids + 16 * i;
        unsigned c = 0;
        while (c < 16 && a[c] == b[c])
            c++;
        if (c == 16 || a[c] > b[c])
            return -1;
        lcp[i] = (uint8_t)c;
        marks[i - 1] |= 1u << c | 1u << (c + 1);
        marks[i] |= 1u << (c + 1);
    }
    int64_t count = 0;
    for (unsigned l = 0; l <= 16; l++) {
        int marked = 0;
        for (uint64_t i = 0; i < n; i++) {
            if (i && lcp[i] < l) {
                count += marked;
                marked = 0;
            }
            if (marks[i] >> l & 1)
                marked = 1;
        }
        count += marked;
    }
    return count;
}

/* the 16-byte IDs of a rax a stream measure gathers, and the room they need */
typedef struct {
    uint8_t *ids;
    uint32_t *marks;
    uint8_t *lcp;
    uint64_t n, room;
} Ids;

static int ids_add(Ids *x, const uint8_t *id) {
    if (x->n == x->room) {
        uint64_t room = x->room ? 2 * x->room : 64;
        uint8_t *ids = PyMem_Realloc(x->ids, (size_t)room * 16);
        if (ids == NULL)
            return -1;
        x->ids = ids;
        uint32_t *marks = PyMem_Realloc(x->marks, (size_t)room * sizeof(uint32_t));
        if (marks == NULL)
            return -1;
        x->marks = marks;
        uint8_t *lcp = PyMem_Realloc(x->lcp, (size_t)room);
        if (lcp == NULL)
            return -1;
        x->lcp = lcp;
        x->room = room;
    }
    memcpy(x->ids + 16 * x->n++, id, 16);
    return 0;
}

/* what a rax of the IDs gathered weighs (memory.py _rax_usage), into *sum; 0: the readers' */
static int ids_usage(const Measure *M, Ids *x, uint64_t *sum) {
    int64_t nodes = m_rax_nodes(x->ids, x->n, x->marks, x->lcp);
    if (nodes < 0)
        return 0;
    *sum += (uint64_t)M->model[MD_STREAM_ID] * x->n + (uint64_t)M->model[MD_RAX_NODE] * (uint64_t)nodes;
    x->n = 0;
    return 1;
}

/* the length of an integer as decimal text (what the readers make of it) */
static size_t int_len(int64_t x) {
    uint64_t u = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
    size_t n = x < 0 ? 2 : 1;
    for (; u >= 10; u /= 10)
        n++;
    return n;
}

/* the longest element of a listpack checked already (every `step`-th entry from the first:
 * 2 for a sorted set's members, 1 for all), as the readers give its length, into
 * m->largest: its entries walked by their encodings alone */
static void m_packed_largest(const Measure *M, Measured *m, const uint8_t *b, size_t n, int step) {
    if (M == NULL || n < 7)
        return;
    size_t p = 6, end = n - 1;
    for (int i = 0; p < end && b[p] != 0xFF; i++) {
        unsigned c = b[p];
        size_t at = p, len;
        int64_t v = 0;
        int str = 1;
        if (c < 0x80) {
            v = c, str = 0, p += 1;
        } else if (c < 0xC0) {
            len = c & 0x3F, p += 1 + len;
        } else if (c < 0xE0) {
            int x = (int)((c & 0x1F) << 8 | b[p + 1]);
            v = (x & 0x1000) ? x - 8192 : x, str = 0, p += 2;
        } else if (c < 0xF0) {
            len = (size_t)(c & 0x0F) << 8 | b[p + 1], p += 2 + len;
        } else if (c == 0xF0) {
            len = le32(b + p + 1), p += 5 + len;
        } else if (c == 0xF1) {
            v = (int16_t)((unsigned)b[p + 1] | (unsigned)b[p + 2] << 8), str = 0, p += 3;
        } else if (c == 0xF2) {
            v = int24(b + p + 1), str = 0, p += 4;
        } else if (c == 0xF3) {
            v = (int32_t)le32(b + p + 1), str = 0, p += 5;
        } else if (c == 0xF4) {
            v = le64s(b + p + 1), str = 0, p += 9;
        } else {
            return;
        }
        if (i % step == 0) {
            size_t l = str ? len : int_len(v);
            if (l > m->largest)
                m->largest = l;
        }
        p += (size_t)backlen_size(p - at);
    }
}

/* the i-th integer of an intset of `width`-byte integers (its 8-byte header at d) */
static int64_t intset_get(const uint8_t *d, uint32_t width, size_t i) {
    const uint8_t *v = d + 8 + i * width;
    return width == 2 ? (int64_t)(int16_t)((unsigned)v[0] | (unsigned)v[1] << 8)
         : width == 4 ? (int64_t)(int32_t)le32(v) : le64s(v);
}

/* the intset blob at *q: 1 with its bytes (*d, *len), its integers' width and number,
 * when its header holds (a width of 2, 4 or 8 and the bytes of that many), else 0 */
static int lane_intset_blob(Lane *L, size_t *q, const uint8_t **d, size_t *len, uint32_t *width, uint32_t *n) {
    int kind;
    char num[24];
    if (!lane_string(L, q, 1, d, len, &kind, num) || kind == S_INT || *len < 8)
        return 0;
    *width = le32(*d);
    *n = le32(*d + 4);
    return (*width == 2 || *width == 4 || *width == 8) && 8 + (uint64_t)*width * *n == *len;
}

/* an intset's integers counted: layouts.intset's checks */
static int lane_intset(Lane *L, size_t *q, Py_ssize_t *count, size_t *blen, uint64_t *largest) {
    const uint8_t *d;
    uint32_t width, n;
    if (!lane_intset_blob(L, q, &d, blen, &width, &n))
        return 0;
    int64_t prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        int64_t x = intset_get(d, width, i);
        if (i && x <= prev)
            return 0;
        prev = x;
    }
    *count = n;
    if (n && largest) { /* sorted: the longest text is the first's or the last's */
        size_t a = int_len(intset_get(d, width, 0)), b = int_len(prev);
        *largest = a > b ? a : b;
    }
    return 1;
}

/* The value of layout `code` at *q: 1 with its elements (and *extra: value_length for a
 * string, nodes for a quicklist; -1 for none, *kind the string's kind), or 0. */
static int lane_value(Lane *L, int code, size_t *q, uint64_t *elements, int64_t *extra, int *kind,
                      const Measure *M, Measured *m) {
    uint64_t n, i;
    Py_ssize_t count;
    size_t blen = 0;
    const uint8_t *data;
    size_t len;
    int k;
    char num[24];
    *extra = -1;
    *kind = -1;
    switch (code) {
    case L_STRING: {
        if (!lane_string(L, q, 0, &data, &len, kind, num))
            return 0;
        *elements = 1;
        *extra = (int64_t)len;
        return 1;
    }
    case L_STRINGS:
    case L_SET_STRINGS:
    case L_HASH:
    case L_ZSET2: {
        int members = code != L_STRINGS; /* a set's members, a hash's fields, a sorted set's members */
        L->mem.n = 0;
        if (!lane_count(L, q, &n, code == L_STRINGS || code == L_SET_STRINGS ? 1 : code == L_HASH ? 2 : 9))
            return 0;
        for (i = 0; i < n; i++) {
            if (!lane_string(L, q, members, &data, &len, &k, num))
                return 0;
            if (members && members_put(&L->mem, data, len) < 0)
                return 0;
            m_add(M, m, len, 1);
            if (M && m->numeric && !m_numeric(data, len, k))
                m->numeric = 0;
            if (code == L_HASH) {
                if (!lane_string(L, q, 0, &data, &len, &k, num))
                    return 0;
                m_add(M, m, len, 1);
            }
            if (code == L_ZSET2) {
                if (L->n - *q < 8)
                    return lane_short(L, *q + 8);
                *q += 8;
            }
        }
        if (members && members_repeat(&L->mem))
            return 0; /* a member twice: the readers' to judge */
        *elements = n;
        return 1;
    }
    case L_ZIPLIST:
    case L_LISTPACK:
        if (!lane_packed(L, q, code == L_ZIPLIST, 0, &count, &blen, code == L_LISTPACK, &data))
            return 0;
        *elements = (uint64_t)count;
        m->packed = blen;
        if (code == L_LISTPACK)
            m_packed_largest(M, m, data, blen, 1);
        return 1;
    case L_INTSET:
        if (!lane_intset(L, q, &count, &blen, M ? &m->largest : NULL))
            return 0;
        *elements = (uint64_t)count;
        m->packed = blen;
        return 1;
    case L_ZIPLIST_ZSET:
    case L_ZIPLIST_HASH:
    case L_LISTPACK_ZSET:
    case L_LISTPACK_HASH:
        if (!lane_packed(L, q, layout_ziplist(code),
                         code == L_ZIPLIST_ZSET || code == L_LISTPACK_ZSET, &count, &blen, 2, &data) || count % 2)
            return 0;
        *elements = (uint64_t)count / 2;
        m->packed = blen;
        if (code == L_LISTPACK_ZSET || code == L_LISTPACK_HASH)
            m_packed_largest(M, m, data, blen, code == L_LISTPACK_ZSET ? 2 : 1);
        return 1;
    case L_QUICKLIST:
    case L_QUICKLIST2: {
        uint64_t total = 0;
        if (!lane_count(L, q, &n, code == L_QUICKLIST ? 1 : 2))
            return 0;
        for (i = 0; i < n; i++) {
            if (code == L_QUICKLIST) {
                if (!lane_packed(L, q, 1, 0, &count, NULL, 0, NULL))
                    return 0;
                total += (uint64_t)count;
                continue;
            }
            uint64_t container;
            if (!lane_len(L, q, &container))
                return 0;
            if (container == 1) {
                if (!lane_string(L, q, 0, &data, &len, &k, num))
                    return 0;
                m_add(M, m, len, 0);
                if (M && len > m->largest)
                    m->largest = len;
                m->packed = UINT64_MAX;
                total += 1;
            } else if (container == 2) {
                const uint8_t *node;
                if (!lane_packed(L, q, 0, 0, &count, &blen, 0, &node))
                    return 0;
                m_add(M, m, blen, 0);
                m_packed_largest(M, m, node, blen, 1);
                m->packed = blen;
                total += (uint64_t)count;
            } else {
                return 0;
            }
        }
        if (n > INT64_MAX)
            return 0;
        *elements = total;
        *extra = (int64_t)n;
        return 1;
    }
    }
    return 0;
}

/* One stream node's listpack (§6.4) as values._stream_node reads it: 1 with its live
 * entries in *live, 0 where it would complain (or could index backwards: a negative
 * count, which the Python reading is left to say of). */
static int lane_stream_node(const LpItem *it, size_t len, uint64_t *live_out) {
#define NUM(i) ((i) < len && it[(i)].s == NULL)
    if (!NUM(0) || !NUM(1) || !NUM(2))
        return 0;
    int64_t count = it[0].v, deleted = it[1].v, nfields = it[2].v;
    if (nfields < 0 || (uint64_t)nfields + 3 >= len)
        return 0;
    size_t i = 3 + (size_t)nfields;
    if (!NUM(i) || it[i].v != 0)
        return 0;
    i += 1;
    int64_t live = 0, dead = 0;
    while (i < len) {
        if (!NUM(i) || !NUM(i + 1) || !NUM(i + 2))
            return 0;
        int64_t flags = it[i].v;
        i += 3;
        if (flags & 2) {
            i += (size_t)nfields;
        } else {
            if (!NUM(i) || it[i].v < 0)
                return 0;
            uint64_t n = (uint64_t)it[i].v;
            if (n && (n > len || i + 2 * n >= len))
                return 0;
            i += 1 + 2 * (size_t)n;
        }
        if (!NUM(i))
            return 0;
        i += 1;
        if (flags & 1)
            dead++;
        else
            live++;
    }
    if (live != count || dead != deleted)
        return 0;
    *live_out = (uint64_t)live;
    return 1;
#undef NUM
}

static int lane_ms(Lane *L, size_t *q, size_t n) {
    if (L->n - *q < n)
        return lane_short(L, *q + n);
    *q += n;
    return 1;
}

/* A stream of layout version 1–4 (values.stream, values not kept): 1 with its length,
 * nodes and consumer groups; 0 where the readers would make a finding (a damaged node, a
 * length its nodes do not hold) or stop. -1: a Python error. */
static int lane_stream(Lane *L, size_t *q, int version, LpSink *sink, uint64_t *length, uint64_t *nodes_out,
                       uint64_t *groups_out, const Measure *M, Measured *m, Ids *ids) {
    uint64_t nodes, live = 0, x;
    if (!lane_count(L, q, &nodes, 2 + 16))
        return 0;
    for (uint64_t k = 0; k < nodes; k++) {
        const uint8_t *d;
        size_t len;
        int kind;
        char num[24];
        if (!lane_string(L, q, 1, &d, &len, &kind, num) || len != 16)
            return 0; /* the node's key: a 16-byte stream ID */
        if (M && ids_add(ids, d) < 0)
            return -1;
        if (!lane_string(L, q, 1, &d, &len, &kind, num) || kind == S_INT)
            return 0;
        m_add(M, m, len, 0); /* the node's listpack, allocated */
        sink->n = 0;
        int r = listpack_walk(d, len, NULL, NULL, 0, sink, NULL);
        if (r <= 0)
            return r;
        uint64_t n;
        if (!lane_stream_node(sink->items, sink->n, &n))
            return 0;
        live += n;
    }
    if (!lane_len(L, q, length) || !lane_len(L, q, &x) || !lane_len(L, q, &x)) /* length, last_id */
        return 0;
    if (version >= 2)
        for (int i = 0; i < 5; i++) /* first_id, max_deleted_id, entries_added */
            if (!lane_len(L, q, &x))
                return 0;
    if (M && !ids_usage(M, ids, &m->sum))
        m->bad = 1;
    uint64_t groups;
    if (!lane_count(L, q, &groups, 3))
        return 0;
    for (uint64_t g = 0; g < groups; g++) {
        uint64_t npel, nconsumers;
        if (!lane_skip(L, q) || !lane_len(L, q, &x) || !lane_len(L, q, &x)) /* name, last_id */
            return 0;
        if (version >= 2 && !lane_len(L, q, &x)) /* entries_read */
            return 0;
        if (!lane_count(L, q, &npel, 16 + 8 + 1))
            return 0;
        for (uint64_t e = 0; e < npel; e++) { /* id, delivery time, delivery count */
            if (M && L->n - *q >= 16 && ids_add(ids, L->b + *q) < 0)
                return -1;
            if (!lane_ms(L, q, 16 + 8) || !lane_len(L, q, &x))
                return 0;
        }
        if (M) {
            m->sum += (uint64_t)(M->model[MD_STREAM_CG] + M->model[MD_STREAM_NACK] * (int64_t)npel);
            if (!ids_usage(M, ids, &m->sum))
                m->bad = 1;
        }
        if (!lane_count(L, q, &nconsumers, 1 + 8 + 1))
            return 0;
        for (uint64_t c = 0; c < nconsumers; c++) {
            uint64_t ncpel;
            const uint8_t *d;
            size_t len;
            int kind;
            char num[24];
            if (!lane_string(L, q, 0, &d, &len, &kind, num) || !lane_ms(L, q, version >= 3 ? 16 : 8) ||
                !lane_count(L, q, &ncpel, 16))
                return 0; /* name, seen (and active) time, PEL */
            for (uint64_t e = 0; e < ncpel; e++) {
                if (M && L->n - *q >= 16 && ids_add(ids, L->b + *q) < 0)
                    return -1;
                if (!lane_ms(L, q, 16))
                    return 0;
            }
            if (M) {
                m->sum += (uint64_t)M->model[MD_STREAM_CONSUMER] + len;
                if (!ids_usage(M, ids, &m->sum))
                    m->bad = 1;
            }
        }
    }
    if (version >= 4) {
        uint64_t producers;
        if (!lane_len(L, q, &x) || !lane_len(L, q, &x) || !lane_count(L, q, &producers, 2)) /* duration, max */
            return 0;
        for (uint64_t k = 0; k < producers; k++) {
            uint64_t iids;
            if (!lane_skip(L, q) || !lane_count(L, q, &iids, 3))
                return 0;
            for (uint64_t e = 0; e < iids; e++)
                if (!lane_skip(L, q) || !lane_len(L, q, &x) || !lane_len(L, q, &x))
                    return 0;
        }
        if (!lane_len(L, q, &x) || !lane_len(L, q, &x)) /* iids_added, iids_duplicates */
            return 0;
    }
    if (live != *length)
        return 0;
    *nodes_out = nodes;
    *groups_out = groups;
    return 1;
}

#include "_rdb_lines.h"
#include "_rdb_resp.h"

/* the names scan() gives the records' extra values, and a string value's kinds */
static PyObject *s_value_length, *s_nodes, *s_kinds[3], *s_stream, *s_length, *s_groups;
static PyObject *s_alloc, *s_largest, *s_packed, *s_head, *s_memory;

/* A measured key's memory as the model sums it (memory.py lane_rule): 1 with *usage (the
 * key's entry and name included) and *enc, 0 where the lane leaves the sum to the model in
 * Python (a size past its tables). `extra`: a string's length, or a quicklist's nodes. */
static int m_usage(const Measure *M, const Rule *rule, double elem, const Measured *m, size_t klen, int kind,
                   const uint8_t *head, size_t head_len, uint64_t elements, int64_t extra, int64_t *usage,
                   int64_t *enc) {
    if (klen >= M->T)
        return 0;
    int64_t key = M->model[MD_KEY_ENTRY] + (int64_t)M->sds[klen], v;
    *enc = rule->enc;
    switch (rule->mode) {
    case MR_STRING:
        if (kind == S_INT || (head != NULL && m_as_int(head, head_len))) {
            v = rule->base; /* int */
        } else if (extra <= M->model[MD_EMBSTR_MAX]) {
            v = (int64_t)M->alloc[M->model[MD_EMBSTR_REQUEST] + extra];
            *enc += 1; /* embstr */
        } else if ((uint64_t)extra < M->T) {
            v = rule->base + (int64_t)M->sds[extra];
            *enc += 2; /* raw */
        } else {
            return 0;
        }
        break;
    case MR_ELEMENTS:
    case MR_SET:
        v = m_round((double)(rule->base + rule->slot * (int64_t)m_slots(M, elements) + (int64_t)m->sum) +
                    (double)elements * elem);
        break;
    case MR_PACKED:
        if (m->packed >= M->T)
            return 0;
        v = rule->base + (int64_t)M->alloc[m->packed];
        break;
    case MR_NODES: /* (m->packed: the last node's listpack bytes, UINT64_MAX for a plain node) */
        if (extra == 1 && rule->a >= 0 && m->packed <= (uint64_t)rule->a && elements <= (uint64_t)rule->b) {
            if (m->packed >= M->T)
                return 0;
            v = M->model[MD_ROBJ] + (int64_t)M->alloc[m->packed]; /* a 7.2+ server's one-node list: its listpack */
            *enc = rule->spare;
            break;
        }
        v = rule->base + rule->node * extra + (int64_t)m->sum;
        break;
    case MR_STREAM:
        v = rule->base + (int64_t)m->sum;
        break;
    default:
        return 0;
    }
    *usage = key + v;
    return 1;
}

/* scan(buf, p, table, cap, seen, room, ctime_ms, maker, base, db, vtypes, salt[, want]) -> (index,
 * records, inflated, need): the index of the first record not read here, the KeyRecord of
 * each key before it, the bytes their LZF strings inflated to, and, when the buffer ends
 * inside that first record, the bytes of the buffer it needs at least (so that it may be
 * read here once more bytes come; else 0) (seen: the snapshot's Seen, which holds each key's hash XOR its db's salt, or
 * None when keys are no longer remembered; ctime_ms:
 * None when the snapshot has none; base: the input offset of buf[0]; vtypes: the value
 * type of each type byte the table names; want: None, or want(key, type byte, expiry ms
 * or None), true for a key whose value the caller keeps, before which scan stops;
 * measure: None, or (sds table, allocation table, rules) of a Measure: each key's extra
 * then has what the memory model needs of it, "alloc", "largest", "packed_bytes", "head",
 * and scan stops before a key its rule leaves to the readers). */
static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer view, table;
    Py_ssize_t p, room, base;
    unsigned long long cap;
    PyObject *seen_arg, *ctime_arg, *db, *vtypes, *want = Py_None, *measure = Py_None;
    Maker *maker;
    long long salt;
    unsigned long long lzf_left = UINT64_MAX;
    PyObject *lines = Py_None;
    int resp = 0;
    if (!PyArg_ParseTuple(args, "y*ny*KOnOO!nOO!L|OOKOp", &view, &p, &table, &cap, &seen_arg, &room, &ctime_arg,
                          &MakerType, &maker, &base, &db, &PyList_Type, &vtypes, &salt, &want, &measure, &lzf_left,
                          &lines, &resp))
        return NULL;
    Lines Jst, *J = NULL;
    long long dbn = 0;
    if (lines != Py_None) {
        PyObject *part;
        unsigned long long stripe = 0, mine = 0, ways = 1;
        if (!PyTuple_Check(lines) || (PyTuple_GET_SIZE(lines) != 2 && PyTuple_GET_SIZE(lines) != 5) ||
            !PyByteArray_Check(part = PyTuple_GET_ITEM(lines, 1)) || PyByteArray_GET_SIZE(part) != 20 ||
            ((dbn = PyLong_AsLongLong(db)) == -1 && PyErr_Occurred()) ||
            (PyTuple_GET_SIZE(lines) == 5 &&
             (((stripe = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(lines, 2))) == (unsigned long long)-1 ||
               (mine = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(lines, 3))) == (unsigned long long)-1 ||
               (ways = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(lines, 4))) == (unsigned long long)-1) ||
              stripe == 0 || ways == 0 || ways > 64))) {
            PyBuffer_Release(&view);
            PyBuffer_Release(&table);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "scan: lines is (g17, bytearray(20)[, stripe, mine (a bit each), ways (at most 64)])");
            return NULL;
        }
        memset(&Jst, 0, sizeof Jst);
        Jst.resp = resp;
        Jst.stripe = stripe;
        Jst.mine = mine;
        Jst.ways = ways;
        Jst.g17 = PyObject_IsTrue(PyTuple_GET_ITEM(lines, 0)) > 0;
        J = &Jst;
    }
    Measure Mst;
    const Measure *M = NULL;
    if (measure != Py_None) {
        PyObject *a, *b, *c, *d, *e, *f;
        if (!PyTuple_Check(measure) || PyTuple_GET_SIZE(measure) != 6 ||
            !PyBytes_Check(a = PyTuple_GET_ITEM(measure, 0)) || !PyBytes_Check(b = PyTuple_GET_ITEM(measure, 1)) ||
            !PyBytes_Check(c = PyTuple_GET_ITEM(measure, 2)) || !PyBytes_Check(d = PyTuple_GET_ITEM(measure, 3)) ||
            !PyBytes_Check(e = PyTuple_GET_ITEM(measure, 4)) || !PyTuple_Check(f = PyTuple_GET_ITEM(measure, 5)) ||
            PyBytes_GET_SIZE(a) != PyBytes_GET_SIZE(b) || PyBytes_GET_SIZE(a) % 4 ||
            PyBytes_GET_SIZE(a) <= 4 * 256 || PyBytes_GET_SIZE(c) != 256 * (Py_ssize_t)sizeof(Rule) ||
            PyBytes_GET_SIZE(d) != 256 * 8 || PyBytes_GET_SIZE(e) != MD_COUNT * 8) {
            PyBuffer_Release(&view);
            PyBuffer_Release(&table);
            PyErr_SetString(PyExc_ValueError, "scan: measure is (sds table, allocation table, 256 rules, "
                                              "256 element sums, the model's figures, encodings)");
            return NULL;
        }
        Mst.sds = (const uint32_t *)PyBytes_AS_STRING(a);
        Mst.alloc = (const uint32_t *)PyBytes_AS_STRING(b);
        Mst.T = (size_t)PyBytes_GET_SIZE(a) / 4;
        Mst.rules = (const Rule *)PyBytes_AS_STRING(c);
        Mst.elem = (const double *)PyBytes_AS_STRING(d);
        Mst.model = (const int64_t *)PyBytes_AS_STRING(e);
        Mst.encodings = f;
        int ok = Mst.model[MD_EMBSTR_REQUEST] >= 0 && Mst.model[MD_EMBSTR_MAX] >= 0 &&
                 (uint64_t)(Mst.model[MD_EMBSTR_REQUEST] + Mst.model[MD_EMBSTR_MAX]) < Mst.T;
        for (int i = 0; i < 256 && ok; i++) /* a string's three encodings, a list's two, another's one */
            ok = Mst.rules[i].enc >= 0 && Mst.rules[i].enc + (Mst.rules[i].mode == MR_STRING ? 2 : 0) <
                                              PyTuple_GET_SIZE(f) &&
                 (Mst.rules[i].mode != MR_NODES || (Mst.rules[i].spare >= 0 && Mst.rules[i].spare < PyTuple_GET_SIZE(f)));
        if (!ok) {
            PyBuffer_Release(&view);
            PyBuffer_Release(&table);
            PyErr_SetString(PyExc_ValueError, "scan: the measure's encodings or embstr figures do not fit");
            return NULL;
        }
        M = &Mst;
    }
    Ids ids = {NULL, NULL, NULL, 0, 0};
    if (PyList_GET_SIZE(vtypes) != 256) {
        PyBuffer_Release(&view);
        PyBuffer_Release(&table);
        PyErr_SetString(PyExc_ValueError, "scan: a value type for each of the 256 type bytes");
        return NULL;
    }
    Seen *seen = seen_arg == Py_None ? NULL : (Seen *)seen_arg;
    int has_ctime = ctime_arg != Py_None;
    long long ctime = has_ctime ? PyLong_AsLongLong(ctime_arg) : 0;
    if ((seen && !PyObject_TypeCheck(seen_arg, &SeenType)) || (has_ctime && ctime == -1 && PyErr_Occurred())) {
        PyBuffer_Release(&view);
        PyBuffer_Release(&table);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "scan: seen is a Seen or None");
        return NULL;
    }
    PyObject *records = PyList_New(0);
    if (records == NULL || table.len != 256 || p < 0) {
        PyBuffer_Release(&view);
        PyBuffer_Release(&table);
        if (records != NULL) {
            Py_DECREF(records);
            PyErr_SetString(PyExc_ValueError, "scan: a table of 256 layouts and an index in the buffer");
        }
        return NULL;
    }
    const uint8_t *codes = table.buf;
    Lane L = {view.buf, (size_t)view.len, cap, NULL, 0, {NULL, 0, 0, 1}, lzf_left, J != NULL, SIZE_MAX, 0};
    uint64_t committed = lzf_left; /* what is left after the keys made so far (a declined one's LZF uncharged) */
    LpSink sink = {NULL, 0, 0};
    size_t at = (size_t)p;
    while (at < L.n) {
        size_t q = at;
        /* whether this key's line is written here (LZF strings are then inflated once, for both readings) */
        int own = J != NULL && lines_own(J, (uint64_t)(base + (Py_ssize_t)at));
        L.lines = own;
        int has_expire = 0, has_idle = 0, has_freq = 0;
        int64_t expire = 0;
        uint64_t idle = 0;
        unsigned freq = 0, op;
        L.need = 0; /* (of the record at `at` only: the one scan stops before) */
        for (;;) {
            if (q >= L.n) {
                L.need = q + 1;
                goto done;
            }
            op = L.b[q];
            if (op == 252) { /* EXPIRETIME_MS */
                if (L.n - q < 9) {
                    L.need = q + 9;
                    goto done;
                }
                expire = le64s(L.b + q + 1);
                has_expire = 1;
                q += 9;
            } else if (op == 253) { /* EXPIRETIME, in seconds */
                if (L.n - q < 5) {
                    L.need = q + 5;
                    goto done;
                }
                expire = (int64_t)(int32_t)le32(L.b + q + 1) * 1000;
                has_expire = 1;
                q += 5;
            } else if (op == 248) { /* IDLE */
                q += 1;
                if (!lane_len(&L, &q, &idle))
                    goto done;
                has_idle = 1;
            } else if (op == 249) { /* FREQ */
                if (L.n - q < 2) {
                    L.need = q + 2;
                    goto done;
                }
                freq = L.b[q + 1];
                has_freq = 1;
                q += 2;
            } else {
                break;
            }
        }
        int code = codes[op];
        if (!code)
            break;
        q += 1;
        const uint8_t *kd;
        size_t klen;
        int kkind;
        char num[24];
        if (!lane_string(&L, &q, 1, &kd, &klen, &kkind, num))
            break;
        size_t vstart = q;
        uint64_t elements;
        int64_t extra;
        int kind;
        PyObject *key = PyBytes_FromStringAndSize((const char *)kd, (Py_ssize_t)klen);
        if (key == NULL)
            goto error;
        if (want != Py_None) { /* a key whose value is wanted is left to the readers */
            PyObject *exp = has_expire ? PyLong_FromLongLong(expire) : Py_NewRef(Py_None);
            PyObject *got = exp == NULL ? NULL : PyObject_CallFunction(want, "OIO", key, op, exp);
            Py_XDECREF(exp);
            int yes = got == NULL ? -1 : PyObject_IsTrue(got);
            Py_XDECREF(got);
            if (yes) {
                Py_DECREF(key);
                if (yes < 0)
                    goto error;
                break;
            }
        }
        uint64_t nodes = 0, groups = 0;
        Measured m = {0, 0, 0, 0, 1};
        const Rule *rule = M ? M->rules + op : NULL;
        if (rule && (rule->mode == MR_DECLINE || (rule->mode == MR_STREAM) != (code >= L_STREAM1 && code <= L_STREAM4))) {
            Py_DECREF(key);
            break;
        }
        if (code >= L_STREAM1 && code <= L_STREAM4) {
            ids.n = 0;
            int r = lane_stream(&L, &q, code - L_STREAM1 + 1, &sink, &elements, &nodes, &groups, M, &m, &ids);
            extra = -1;
            kind = -1;
            if (r <= 0) {
                Py_DECREF(key);
                if (r < 0)
                    goto error;
                break;
            }
        } else {
            int r = lane_value(&L, code, &q, &elements, &extra, &kind, M, &m);
            if (r <= 0 || (elements == 0 && code != L_STRING)) {
                Py_DECREF(key);
                if (r < 0)
                    goto error;
                break; /* an empty collection is the readers' to judge (rdb-empty-key, or an empty intset's rdb-corrupt) */
            }
        }
        const uint8_t *head = NULL;
        size_t head_len = 0;
        if (rule) { /* what the model's rule for this type says: left to the readers, or measured */
            int decline = m.bad;
            if (rule->mode == MR_ELEMENTS)
                decline |= (int64_t)elements <= rule->a && (int64_t)m.largest <= rule->b;
            else if (rule->mode == MR_SET)
                decline |= ((int64_t)elements <= rule->a && m.numeric) || (int64_t)elements <= rule->b;
            else if (rule->mode == MR_PACKED)
                decline |= (int64_t)elements > rule->a;
            else if (rule->mode == MR_NODES) /* a one-node list held as a listpack past the tables */
                decline |= extra == 1 && rule->a >= 0 && m.packed <= (uint64_t)rule->a && m.packed >= M->T;
            else if (rule->mode == MR_STRING && kind != S_INT && extra <= rule->a) {
                size_t r = vstart;
                int k2;
                char num2[24];
                if (kind != S_RAW || !lane_string(&L, &r, 0, &head, &head_len, &k2, num2))
                    decline = 1;
            }
            if (decline) {
                Py_DECREF(key);
                break;
            }
        }
        if (has_expire && has_ctime && expire < ctime) {
            Py_DECREF(key);
            break;
        }
        PyObject *line = NULL, *encoding = NULL;
        if (own) { /* the key's whole JSON line, or the readers' key */
            encoding = kind >= 0 ? Py_NewRef(s_kinds[kind]) : PyObject_GetAttrString(PyList_GET_ITEM(vtypes, op), "encoding");
            line = encoding == NULL ? NULL
                 : J->resp ? key_resp(J, &L, code, vstart, key, has_expire, expire)
                 : key_line(J, &L, code, vstart, key, dbn, PyList_GET_ITEM(vtypes, op), encoding, elements,
                            kind >= 0 ? extra : (int64_t)elements, q - vstart, has_expire, expire,
                            base + (Py_ssize_t)at, q - at);
            if (line == NULL) {
                Py_XDECREF(encoding);
                Py_DECREF(key);
                if (PyErr_Occurred())
                    goto error;
                break;
            }
        }
        if (seen) {
            Py_hash_t h = PyObject_Hash(key);
            if (h == -1 || room <= 0 || seen_has(seen, (uint64_t)h ^ (uint64_t)salt)) {
                Py_DECREF(key);
                Py_XDECREF(line);
                Py_XDECREF(encoding);
                if (h == -1)
                    goto error;
                break;
            }
            if (seen_add(seen, (uint64_t)h ^ (uint64_t)salt) < 0) {
                Py_DECREF(key);
                Py_XDECREF(line);
                Py_XDECREF(encoding);
                goto error;
            }
            room--;
        }
        PyObject *vtype = PyList_GET_ITEM(vtypes, op);
        PyObject *made[M_MADE];
        made[M_DB] = Py_NewRef(db);
        made[M_KEY] = key;
        made[M_TYPE_ID] = PyLong_FromLong((long)op);
        made[M_VTYPE] = Py_NewRef(vtype);
        made[M_OFFSET] = PyLong_FromSsize_t(base + (Py_ssize_t)at);
        made[M_LENGTH] = PyLong_FromSsize_t((Py_ssize_t)(q - at));
        made[M_SIZE] = PyLong_FromSsize_t((Py_ssize_t)(q - vstart));
        made[M_ELEMENTS] = PyLong_FromUnsignedLongLong(elements);
        made[M_ENCODING] = encoding ? encoding : kind >= 0 ? Py_NewRef(s_kinds[kind]) : PyObject_GetAttrString(vtype, "encoding");
        made[M_LINE] = line ? line : Py_NewRef(Py_None);
        made[M_EXPIRE] = has_expire ? PyLong_FromLongLong(expire) : Py_NewRef(Py_None);
        made[M_IDLE] = has_idle ? PyLong_FromUnsignedLongLong(idle) : Py_NewRef(Py_None);
        made[M_FREQ] = has_freq ? PyLong_FromLong((long)freq) : Py_NewRef(Py_None);
        made[M_EXTRA] = PyDict_New();
        if (made[M_EXTRA] != NULL && code >= L_STREAM1 && code <= L_STREAM4) { /* the stream's metadata, as values.stream sums it up */
            PyObject *meta = Py_BuildValue("{OKOKOK}", s_nodes, (unsigned long long)nodes, s_length,
                                           (unsigned long long)elements, s_groups, (unsigned long long)groups);
            if (meta == NULL || PyDict_SetItem(made[M_EXTRA], s_stream, meta) < 0)
                Py_CLEAR(made[M_EXTRA]);
            Py_XDECREF(meta);
        } else if (made[M_EXTRA] != NULL && extra >= 0) {
            PyObject *v = PyLong_FromLongLong(extra);
            if (v == NULL || PyDict_SetItem(made[M_EXTRA], kind >= 0 ? s_value_length : s_nodes, v) < 0)
                Py_CLEAR(made[M_EXTRA]);
            Py_XDECREF(v);
        }
        int64_t usage, enc;
        if (made[M_EXTRA] != NULL && rule &&
            m_usage(M, rule, M->elem[op], &m, klen, kind, head, head_len, elements, extra, &usage, &enc)) {
            /* (usage, encoding, largest): the sum memory.key_memory takes as it is */
            PyObject *v = rule->mode == MR_STREAM ? Py_BuildValue("(LOO)", (long long)usage,
                                                                  PyTuple_GET_ITEM(M->encodings, enc), Py_None)
                          : Py_BuildValue("(LOK)", (long long)usage, PyTuple_GET_ITEM(M->encodings, enc),
                                          (unsigned long long)(rule->mode == MR_STRING ? (uint64_t)extra : m.largest));
            if (v == NULL || PyDict_SetItem(made[M_EXTRA], s_memory, v) < 0)
                Py_CLEAR(made[M_EXTRA]);
            Py_XDECREF(v);
        } else if (made[M_EXTRA] != NULL && rule && rule->mode != MR_STREAM) {
            int r = 0;
            PyObject *v = NULL;
            if (rule->mode == MR_ELEMENTS || rule->mode == MR_NODES || rule->mode == MR_SET) {
                r = (v = PyLong_FromUnsignedLongLong(m.sum)) == NULL || PyDict_SetItem(made[M_EXTRA], s_alloc, v) < 0;
                Py_XDECREF(v);
            } else if (rule->mode == MR_PACKED) {
                r = (v = PyLong_FromUnsignedLongLong(m.packed)) == NULL ||
                    PyDict_SetItem(made[M_EXTRA], s_packed, v) < 0;
                Py_XDECREF(v);
            }
            if (!r && rule->mode != MR_STRING) { /* the longest element, as the readers give its length */
                r = (v = PyLong_FromUnsignedLongLong(m.largest)) == NULL ||
                    PyDict_SetItem(made[M_EXTRA], s_largest, v) < 0;
                Py_XDECREF(v);
            } else if (head != NULL) {
                r = (v = PyBytes_FromStringAndSize((const char *)head, (Py_ssize_t)head_len)) == NULL ||
                    PyDict_SetItem(made[M_EXTRA], s_head, v) < 0;
                Py_XDECREF(v);
            }
            if (r)
                Py_CLEAR(made[M_EXTRA]);
        }
        PyObject *rec = maker_make(maker, made);
        if (rec == NULL)
            goto error;
        int r = PyList_Append(records, rec);
        Py_DECREF(rec);
        if (r < 0)
            goto error;
        at = q;
        committed = L.lzf_left;
        if (own) {
            xor20(J->part, J->pending);
            J->commands += J->pending_commands;
        }
    }
done:
    if (J) {
        uint8_t *part = (uint8_t *)PyByteArray_AS_STRING(PyTuple_GET_ITEM(lines, 1));
        if (J->resp) { /* (the tally of commands written, in the place of the digest's part) */
            uint64_t before;
            memcpy(&before, part, 8);
            before += J->commands;
            memcpy(part, &before, 8);
        } else {
            xor20(part, J->part);
        }
        PyMem_Free(J->v.b);
        PyMem_Free(J->args.b);
        PyMem_Free(J->hs);
        Py_XDECREF(J->vtype);
        Py_XDECREF(J->tname);
        PyMem_Free(J->sink.items);
    }
    PyMem_Free(L.scratch);
    PyMem_Free(L.mem.h);
    PyMem_Free(sink.items);
    PyMem_Free(ids.ids);
    PyMem_Free(ids.marks);
    PyMem_Free(ids.lcp);
    PyBuffer_Release(&view);
    PyBuffer_Release(&table);
    return Py_BuildValue("(nNKK)", (Py_ssize_t)at, records, (unsigned long long)(lzf_left - committed),
                         (unsigned long long)(at < L.n ? L.need : 0));
error:
    if (J) {
        PyMem_Free(J->v.b);
        PyMem_Free(J->args.b);
        PyMem_Free(J->hs);
        Py_XDECREF(J->vtype);
        Py_XDECREF(J->tname);
        PyMem_Free(J->sink.items);
    }
    PyMem_Free(L.scratch);
    PyMem_Free(L.mem.h);
    PyMem_Free(sink.items);
    PyMem_Free(ids.ids);
    PyMem_Free(ids.marks);
    PyMem_Free(ids.lcp);
    PyBuffer_Release(&view);
    PyBuffer_Release(&table);
    Py_DECREF(records);
    return NULL;
}

/* double_text(d, g17): a score as the lines write it (data.redis_double), or as digests of
 * a server before 7.2 take it (data.g17): for tests */
static PyObject *double_text(PyObject *self, PyObject *args) {
    double d;
    int old;
    char t[64];
    if (!PyArg_ParseTuple(args, "dp", &d, &old))
        return NULL;
    int k = old ? double_g17(d, t, sizeof t) : double_redis(d, t, sizeof t);
    if (k < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "double_text: no room");
        return NULL;
    }
    return PyUnicode_FromStringAndSize(t, k);
}

/* -- the module ----------------------------------------------------------------------- */

typedef int (*layout_fn)(const uint8_t *, size_t, PyObject *, Py_ssize_t *, int);

static PyObject *entries(PyObject *arg, layout_fn run) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *list = PyList_New(0);
    if (list == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int r = run(view.buf, (size_t)view.len, list, NULL, 0);
    PyBuffer_Release(&view);
    if (r <= 0) {
        Py_DECREF(list);
        if (r < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    return list;
}

static PyObject *counted(PyObject *arg, layout_fn run) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t count = 0;
    int r = run(view.buf, (size_t)view.len, NULL, &count, 0);
    PyBuffer_Release(&view);
    if (r < 0)
        return NULL;
    if (r == 0)
        Py_RETURN_NONE;
    return PyLong_FromSsize_t(count);
}

/* packed_repeats(blob, ziplist, step): whether two of a packed value's members (every step-th
 * entry) hash alike, or None when the blob is damaged or too big to hash */
static PyObject *packed_repeats(PyObject *self, PyObject *args) {
    Py_buffer view;
    int zl;
    unsigned step;
    if (!PyArg_ParseTuple(args, "y*pI", &view, &zl, &step))
        return NULL;
    Members mem = {NULL, 0, 0, step ? step : 1};
    Py_ssize_t count = 0;
    int r = zl ? ziplist_walk(view.buf, (size_t)view.len, NULL, &count, 0, &mem, NULL)
               : listpack_walk(view.buf, (size_t)view.len, NULL, &count, 0, NULL, &mem);
    PyBuffer_Release(&view);
    int repeat = r == 1 && members_repeat(&mem);
    PyMem_Free(mem.h);
    if (r != 1)
        Py_RETURN_NONE;
    return PyBool_FromLong(repeat);
}

/* packed_scores(blob, ziplist): whether a packed value's every second entry is plainly a number */
static PyObject *packed_scores(PyObject *self, PyObject *args) {
    Py_buffer view;
    int zl;
    if (!PyArg_ParseTuple(args, "y*p", &view, &zl))
        return NULL;
    Py_ssize_t count = 0;
    int r = (zl ? ziplist_run : listpack_run)(view.buf, (size_t)view.len, NULL, &count, 1);
    PyBuffer_Release(&view);
    if (r < 0)
        return NULL;
    return PyBool_FromLong(r == 1);
}

static PyObject *listpack(PyObject *self, PyObject *arg) { return entries(arg, listpack_run); }
static PyObject *ziplist(PyObject *self, PyObject *arg) { return entries(arg, ziplist_run); }
static PyObject *listpack_count(PyObject *self, PyObject *arg) { return counted(arg, listpack_run); }
static PyObject *ziplist_count(PyObject *self, PyObject *arg) { return counted(arg, ziplist_run); }

/* -- digests (families/redis/digest.py) and values as JSON (families/redis/data.py) ------ */

/* SHA-1 (FIPS 180-4), for the server's DEBUG DIGEST mixing of many short elements: one
 * call per element without Python objects in between. */
static uint32_t rol32(uint32_t x, int n) { return x << n | x >> (32 - n); }

static void sha1_block(uint32_t h[5], const uint8_t *p) {
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = be32(p + 4 * i);
    for (int i = 16; i < 80; i++)
        w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20)
            f = (b & c) | (~b & d), k = 0x5A827999;
        else if (i < 40)
            f = b ^ c ^ d, k = 0x6ED9EBA1;
        else if (i < 60)
            f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
        else
            f = b ^ c ^ d, k = 0xCA62C1D6;
        uint32_t t = rol32(a, 5) + f + e + k + w[i];
        e = d, d = c, c = rol32(b, 30), b = a, a = t;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

#ifdef CRC_CLMUL
#include <cpuid.h>
/* With the SHA extensions (SHA-NI): four rounds an instruction. The message schedule in
 * groups of four words: W[i] = sha1msg2(sha1msg1(W[i-4], W[i-3]) ^ W[i-2], W[i-1]); the
 * fifth variable of a group from the A of the group before (sha1nexte). */
#define SHA1_ROUNDS(f) abcd = _mm_sha1rnds4_epu32(abcd, e, f)
__attribute__((target("sha,sse4.1,ssse3"))) static void sha1_block_ni(uint32_t h[5], const uint8_t *p) {
    const __m128i swap = _mm_set_epi64x(0x0001020304050607LL, 0x08090a0b0c0d0e0fLL);
    __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0x1B);
    __m128i e0 = _mm_set_epi32((int)h[4], 0, 0, 0), abcd0 = abcd, prev = abcd, e, w[4];
#pragma GCC unroll 20
    for (int i = 0; i < 20; i++) {
        __m128i wi;
        if (i < 4)
            wi = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), swap);
        else
            wi = _mm_sha1msg2_epu32(_mm_xor_si128(_mm_sha1msg1_epu32(w[i & 3], w[(i + 1) & 3]), w[(i + 2) & 3]),
                                    w[(i + 3) & 3]);
        w[i & 3] = wi;
        e = i == 0 ? _mm_add_epi32(e0, wi) : _mm_sha1nexte_epu32(prev, wi);
        prev = abcd;
        switch (i / 5) {
        case 0: SHA1_ROUNDS(0); break;
        case 1: SHA1_ROUNDS(1); break;
        case 2: SHA1_ROUNDS(2); break;
        default: SHA1_ROUNDS(3); break;
        }
    }
    e0 = _mm_sha1nexte_epu32(prev, e0);
    abcd = _mm_shuffle_epi32(_mm_add_epi32(abcd, abcd0), 0x1B);
    _mm_storeu_si128((__m128i *)h, abcd);
    h[4] = (uint32_t)_mm_extract_epi32(e0, 3);
}

/* Two blocks of two messages at once: the same rounds, interleaved, so that each one's
 * instructions fill the other's wait for its results (a round's result is the next one's
 * input: alone, the unit idles between them). */
#define SHA1_ROUNDS2(f) (x = _mm_sha1rnds4_epu32(x, ex, f), y = _mm_sha1rnds4_epu32(y, ey, f))
__attribute__((target("sha,sse4.1,ssse3"))) static void sha1_block_ni2(uint32_t hx[5], const uint8_t *px,
                                                                       uint32_t hy[5], const uint8_t *py) {
    const __m128i swap = _mm_set_epi64x(0x0001020304050607LL, 0x08090a0b0c0d0e0fLL);
    __m128i x = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)hx), 0x1B);
    __m128i y = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)hy), 0x1B);
    __m128i ex0 = _mm_set_epi32((int)hx[4], 0, 0, 0), ey0 = _mm_set_epi32((int)hy[4], 0, 0, 0);
    __m128i x0 = x, y0 = y, prevx = x, prevy = y, ex, ey, wx[4], wy[4];
#pragma GCC unroll 20
    for (int i = 0; i < 20; i++) {
        __m128i wix, wiy;
        if (i < 4) {
            wix = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(px + 16 * i)), swap);
            wiy = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(py + 16 * i)), swap);
        } else {
            wix = _mm_sha1msg2_epu32(_mm_xor_si128(_mm_sha1msg1_epu32(wx[i & 3], wx[(i + 1) & 3]), wx[(i + 2) & 3]),
                                     wx[(i + 3) & 3]);
            wiy = _mm_sha1msg2_epu32(_mm_xor_si128(_mm_sha1msg1_epu32(wy[i & 3], wy[(i + 1) & 3]), wy[(i + 2) & 3]),
                                     wy[(i + 3) & 3]);
        }
        wx[i & 3] = wix;
        wy[i & 3] = wiy;
        ex = i == 0 ? _mm_add_epi32(ex0, wix) : _mm_sha1nexte_epu32(prevx, wix);
        ey = i == 0 ? _mm_add_epi32(ey0, wiy) : _mm_sha1nexte_epu32(prevy, wiy);
        prevx = x;
        prevy = y;
        switch (i / 5) {
        case 0: SHA1_ROUNDS2(0); break;
        case 1: SHA1_ROUNDS2(1); break;
        case 2: SHA1_ROUNDS2(2); break;
        default: SHA1_ROUNDS2(3); break;
        }
    }
    ex0 = _mm_sha1nexte_epu32(prevx, ex0);
    ey0 = _mm_sha1nexte_epu32(prevy, ey0);
    x = _mm_shuffle_epi32(_mm_add_epi32(x, x0), 0x1B);
    y = _mm_shuffle_epi32(_mm_add_epi32(y, y0), 0x1B);
    _mm_storeu_si128((__m128i *)hx, x);
    _mm_storeu_si128((__m128i *)hy, y);
    hx[4] = (uint32_t)_mm_extract_epi32(ex0, 3);
    hy[4] = (uint32_t)_mm_extract_epi32(ey0, 3);
}

static int sha1_ni_checked, sha1_has_ni;

static int sha1_ni(void) {
    if (!sha1_ni_checked) {
        unsigned a, b, c, d;
        int sha = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29 & 1);
        int sse = __get_cpuid(1, &a, &b, &c, &d) && (c >> 19 & 1) && (c >> 9 & 1);
        sha1_has_ni = sha && sse;
        sha1_ni_checked = 1;
    }
    return sha1_has_ni;
}
#endif

/* the block function: SHA-NI's where the CPU has it, unless portable (for tests) */
static void (*sha1_pick(int portable))(uint32_t[5], const uint8_t *) {
#ifdef CRC_CLMUL
    if (!portable && sha1_ni())
        return sha1_block_ni;
#endif
    return sha1_block;
}

static int sha1_portable_only;

/* the block function: picked once (again when sha1_portable is asked) */
static void (*sha1_block_fn(void))(uint32_t[5], const uint8_t *) {
    static void (*block)(uint32_t[5], const uint8_t *);
    static int picked = -1;
    if (picked != sha1_portable_only) {
        block = sha1_pick(sha1_portable_only);
        picked = sha1_portable_only;
    }
    return block;
}

static const uint32_t SHA1_IV[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};

static void sha1_out(const uint32_t h[5], uint8_t out[20]) {
    for (int i = 0; i < 5; i++)
        out[4 * i] = (uint8_t)(h[i] >> 24), out[4 * i + 1] = (uint8_t)(h[i] >> 16),
        out[4 * i + 2] = (uint8_t)(h[i] >> 8), out[4 * i + 3] = (uint8_t)h[i];
}

/* the one block of a message of n < 56 bytes: the bytes, the 1 bit, the zeros, its length
 * in bits (big-endian) */
static void sha1_pad(uint8_t block[64], const uint8_t *m, size_t n) {
    memcpy(block, m, n);
    block[n] = 0x80;
    memset(block + n + 1, 0, 55 - n);
    uint64_t bits = __builtin_bswap64((uint64_t)n * 8);
    memcpy(block + 56, &bits, 8);
}

static void sha1(const uint8_t *p, size_t n, uint8_t out[20]) {
    void (*block)(uint32_t[5], const uint8_t *) = sha1_block_fn();
    uint32_t h[5];
    memcpy(h, SHA1_IV, sizeof h);
    uint64_t bits = (uint64_t)n * 8;
    for (; n >= 64; p += 64, n -= 64)
        block(h, p);
    uint8_t last[128];
    size_t end = n < 56 ? 64 : 128;
    memcpy(last, p, n);
    last[n] = 0x80;
    memset(last + n + 1, 0, end - 8 - n - 1);
    for (int i = 0; i < 8; i++)
        last[end - 1 - i] = (uint8_t)(bits >> (8 * i));
    block(h, last);
    if (end == 128)
        block(h, last + 64);
    sha1_out(h, out);
}

/* x = SHA-1(x), y = SHA-1(y), each 20 bytes: the two at once where SHA-NI is used */
static void sha1_20(uint8_t x[20]);

static void sha1_20x2(uint8_t x[20], uint8_t y[20]) {
#ifdef CRC_CLMUL
    if (sha1_block_fn() == sha1_block_ni) {
        uint8_t bx[64], by[64];
        uint32_t hx[5], hy[5];
        sha1_pad(bx, x, 20);
        sha1_pad(by, y, 20);
        memcpy(hx, SHA1_IV, sizeof hx);
        memcpy(hy, SHA1_IV, sizeof hy);
        sha1_block_ni2(hx, bx, hy, by);
        sha1_out(hx, x);
        sha1_out(hy, y);
        return;
    }
#endif
    sha1_20(x);
    sha1_20(y);
}

/* the SHA-1s of two messages: at once where both fit one block and SHA-NI is used */
static void sha1_two(const uint8_t *a, size_t na, uint8_t ha[20], const uint8_t *b, size_t nb, uint8_t hb[20]) {
#ifdef CRC_CLMUL
    if (na < 56 && nb < 56 && sha1_block_fn() == sha1_block_ni) {
        uint8_t bx[64], by[64];
        uint32_t hx[5], hy[5];
        sha1_pad(bx, a, na);
        sha1_pad(by, b, nb);
        memcpy(hx, SHA1_IV, sizeof hx);
        memcpy(hy, SHA1_IV, sizeof hy);
        sha1_block_ni2(hx, bx, hy, by);
        sha1_out(hx, ha);
        sha1_out(hy, hb);
        return;
    }
#endif
    sha1(a, na, ha);
    sha1(b, nb, hb);
}

/* The SHA-1 of an element as digest.py takes it: bytes as they are, a float through
 * ``score`` (when given; then every non-bytes element goes through it), anything else
 * as its str() in UTF-8. */
static int sha1_of(PyObject *x, PyObject *score, uint8_t out[20]) {
    if (PyBytes_Check(x)) {
        sha1((const uint8_t *)PyBytes_AS_STRING(x), (size_t)PyBytes_GET_SIZE(x), out);
        return 0;
    }
    if (PyByteArray_Check(x)) {
        sha1((const uint8_t *)PyByteArray_AS_STRING(x), (size_t)PyByteArray_GET_SIZE(x), out);
        return 0;
    }
    PyObject *s = score != NULL && score != Py_None ? PyObject_CallOneArg(score, x) : PyObject_Str(x);
    if (s == NULL)
        return -1;
    Py_ssize_t n;
    const char *t = PyUnicode_Check(s) ? PyUnicode_AsUTF8AndSize(s, &n) : NULL;
    if (t == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "an element's text is not a str");
        Py_DECREF(s);
        return -1;
    }
    sha1((const uint8_t *)t, (size_t)n, out);
    Py_DECREF(s);
    return 0;
}

/* x = SHA-1(x), of 20 bytes: one block */
static void sha1_20(uint8_t x[20]) {
    uint8_t b[64];
    uint32_t st[5];
    sha1_pad(b, x, 20);
    memcpy(st, SHA1_IV, sizeof st);
    sha1_block_fn()(st, b);
    sha1_out(st, x);
}

static void mix20(uint8_t d[20], const uint8_t h[20]) {
    for (int i = 0; i < 20; i++)
        d[i] ^= h[i];
    sha1_20(d);
}

/* mix20 of two digests at once */
static void mix20x2(uint8_t x[20], const uint8_t hx[20], uint8_t y[20], const uint8_t hy[20]) {
    for (int i = 0; i < 20; i++)
        x[i] ^= hx[i], y[i] ^= hy[i];
    sha1_20x2(x, y);
}

static PyObject *sha1_portable(PyObject *self, PyObject *arg) {
    /* for tests: whether the portable block function alone is used (set by arg), before */
    int was = sha1_portable_only;
    sha1_portable_only = PyObject_IsTrue(arg) > 0;
    return PyBool_FromLong(was);
}

static PyObject *sha1_each(PyObject *self, PyObject *items) {
    PyObject *seq = PySequence_Fast(items, "elements: a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **xs = PySequence_Fast_ITEMS(seq);
    PyObject *out = PyBytes_FromStringAndSize(NULL, 20 * n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++)
        if (sha1_of(xs[i], NULL, (uint8_t *)PyBytes_AS_STRING(out) + 20 * i) < 0)
            Py_CLEAR(out);
    Py_DECREF(seq);
    return out;
}

static PyObject *digest_mix(PyObject *self, PyObject *args) {
    Py_buffer d, hs;
    if (!PyArg_ParseTuple(args, "y*y*", &d, &hs))
        return NULL;
    PyObject *out = NULL;
    if (d.len != 20 || hs.len % 20 != 0)
        PyErr_SetString(PyExc_ValueError, "a digest is 20 bytes, and so is each SHA-1");
    else {
        uint8_t st[20];
        memcpy(st, d.buf, 20);
        for (Py_ssize_t i = 0; i < hs.len; i += 20)
            mix20(st, (const uint8_t *)hs.buf + i);
        out = PyBytes_FromStringAndSize((const char *)st, 20);
    }
    PyBuffer_Release(&d);
    PyBuffer_Release(&hs);
    return out;
}

static PyObject *digest_xor(PyObject *self, PyObject *args) {
    PyObject *items, *flag = Py_None, *score = Py_None;
    int pairs;
    if (!PyArg_ParseTuple(args, "Op|OO", &items, &pairs, &flag, &score))
        return NULL;
    uint8_t acc[20] = {0}, fl[20] = {0}, h[20], ed[20];
    if (flag != Py_None) {
        if (!PyBytes_Check(flag) || PyBytes_GET_SIZE(flag) != 20) {
            PyErr_SetString(PyExc_ValueError, "the flag is a 20-byte digest");
            return NULL;
        }
        memcpy(fl, PyBytes_AS_STRING(flag), 20);
    }
    PyObject *seq = PySequence_Fast(items, "elements: a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **xs = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = xs[i];
        int tuple = PyTuple_Check(e);
        if (!pairs) {
            if (sha1_of(tuple && PyTuple_GET_SIZE(e) ? PyTuple_GET_ITEM(e, 0) : e, NULL, h) < 0)
                goto bad;
        } else {
            if (!tuple || PyTuple_GET_SIZE(e) < 2) {
                PyErr_SetString(PyExc_TypeError, "a pair is a tuple of two or more");
                goto bad;
            }
            memset(ed, 0, 20);
            if (sha1_of(PyTuple_GET_ITEM(e, 0), NULL, h) < 0)
                goto bad;
            mix20(ed, h);
            if (sha1_of(PyTuple_GET_ITEM(e, 1), score, h) < 0)
                goto bad;
            mix20(ed, h);
            if (PyTuple_GET_SIZE(e) > 2 && PyTuple_GET_ITEM(e, 2) != Py_None)
                for (int j = 0; j < 20; j++)
                    ed[j] ^= fl[j];
            sha1(ed, 20, h);
        }
        for (int j = 0; j < 20; j++)
            acc[j] ^= h[j];
    }
    Py_DECREF(seq);
    return PyBytes_FromStringAndSize((const char *)acc, 20);
bad:
    Py_DECREF(seq);
    return NULL;
}

/* values.py's _texts: packed entries as Redis gives them back, integers in decimal. */
static PyObject *texts(PyObject *self, PyObject *items) {
    PyObject *seq = PySequence_Fast(items, "entries: a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **xs = PySequence_Fast_ITEMS(seq);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *v;
        if (PyLong_Check(xs[i])) {
            PyObject *s = PyObject_Str(xs[i]);
            v = s == NULL ? NULL : PyUnicode_AsUTF8String(s);
            Py_XDECREF(s);
            if (v == NULL) {
                Py_CLEAR(out);
                break;
            }
        } else
            v = Py_NewRef(xs[i]);
        PyList_SET_ITEM(out, i, v);
    }
    Py_DECREF(seq);
    return out;
}

/* An element as data.py's _item makes it: bytes that are UTF-8 as str, an int as it is,
 * anything else through ``item`` (bytes that are not UTF-8, floats, ...). */
static PyObject *json_item(PyObject *x, PyObject *item) {
    if (PyBytes_CheckExact(x)) {
        PyObject *s = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(x), PyBytes_GET_SIZE(x), NULL);
        if (s != NULL || !PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            return s;
        PyErr_Clear();
    } else if (PyLong_CheckExact(x))
        return Py_NewRef(x);
    return PyObject_CallOneArg(item, x);
}

static PyObject *json_items(PyObject *self, PyObject *args) {
    PyObject *items, *item;
    if (!PyArg_ParseTuple(args, "OO", &items, &item))
        return NULL;
    PyObject *seq = PySequence_Fast(items, "elements: a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **xs = PySequence_Fast_ITEMS(seq);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        goto bad;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = xs[i], *v;
        if (PyTuple_Check(e)) {
            Py_ssize_t m = PyTuple_GET_SIZE(e);
            v = PyList_New(m);
            for (Py_ssize_t j = 0; v != NULL && j < m; j++) {
                PyObject *y = json_item(PyTuple_GET_ITEM(e, j), item);
                if (y == NULL)
                    Py_CLEAR(v);
                else
                    PyList_SET_ITEM(v, j, y);
            }
        } else
            v = json_item(e, item);
        if (v == NULL)
            goto bad;
        PyList_SET_ITEM(out, i, v);
    }
    Py_DECREF(seq);
    return out;
bad:
    Py_XDECREF(out);
    Py_DECREF(seq);
    return NULL;
}


static PyMethodDef methods[] = {
    {"crc64", crc64, METH_VARARGS, "crc64(data, crc=0): Redis' CRC-64 of data, continuing from crc."},
    {"crc64_table", crc64_table, METH_VARARGS, "crc64_table(data, crc=0): crc64 by the table alone (for tests)."},
    {"lzf", lzf, METH_VARARGS, "lzf(data, ulen): exactly ulen bytes decompressed, or None."},
    {"lzf_ok", lzf_ok, METH_VARARGS, "lzf_ok(data, ulen): whether data decompresses to exactly ulen bytes."},
    {"lzf_fast", lzf_fast, METH_VARARGS, "lzf_fast(data, ulen): lzf() as the record lane decodes (for tests)."},
    {"scan", scan, METH_VARARGS,
     "scan(buf, p, table, cap, seen, room, ctime_ms, maker, base, db, vtypes, salt[, want]): (index, KeyRecords) read "
     "straight from the buffer."},
    {"skip_strings", skip_strings, METH_VARARGS,
     "skip_strings(buf, p, n, cap, tail[, items]): (index, count) after the strings in a row it could pass over "
     "(appended to the list items, as read_string reads them, when given)."},
    {"listpack", listpack, METH_O, "A listpack's entries (bytes and int), or None when it is damaged."},
    {"ziplist", ziplist, METH_O, "A ziplist's entries (bytes and int), or None when it is damaged."},
    {"listpack_count", listpack_count, METH_O, "How many entries an undamaged listpack holds, or None."},
    {"ziplist_count", ziplist_count, METH_O, "How many entries an undamaged ziplist holds, or None."},
    {"double_text", double_text, METH_VARARGS,
     "double_text(d, g17): d as data.redis_double writes it (g17: as data.g17), for tests."},
    {"sha1_portable", sha1_portable, METH_O,
     "sha1_portable(on): SHA-1 by the portable block function alone (for tests); what it was before."},
    {"sha1_each", sha1_each, METH_O, "sha1_each(elements): their SHA-1s, one after the other (20 bytes each)."},
    {"digest_mix", digest_mix, METH_VARARGS,
     "digest_mix(d, hashes): the 20-byte digest d with each 20-byte SHA-1 of hashes mixed in, in order "
     "(DEBUG DIGEST's mixDigest)."},
    {"digest_xor", digest_xor, METH_VARARGS,
     "digest_xor(elements, pairs, flag=None, score=None): the xor of the elements' SHA-1s (xorDigest); pairs: of each "
     "(a, b[, expiry])'s own digest, mix(mix(0, a), b), xored with flag when the expiry is not None."},
    {"texts", texts, METH_O, "texts(entries): the packed entries with each integer as its decimal bytes."},
    {"json_items", json_items, METH_VARARGS,
     "json_items(elements, item): the elements as data.value_json makes them (tuples as lists), item() for the others."},
    {"packed_scores", packed_scores, METH_VARARGS,
     "packed_scores(blob, ziplist): whether every second entry is plainly a number (False also when damaged)."},
    {"packed_repeats", packed_repeats, METH_VARARGS,
     "packed_repeats(blob, ziplist, step): whether two members (every step-th entry) hash alike, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "dcpinspect.families.redis.rdb._rdb", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__rdb(void) {
    crc_init();
#ifdef CRC_CLMUL
    __builtin_cpu_init();
    crc_has_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
    crc_fold16 = _mm_set_epi64x((long long)crc_xpow(127), (long long)crc_xpow(191));
    crc_fold64 = _mm_set_epi64x((long long)crc_xpow(511), (long long)crc_xpow(575));
#endif
    if (PyType_Ready(&SeenType) < 0 || PyType_Ready(&MakerType) < 0)
        return NULL;
    s_value_length = PyUnicode_InternFromString("value_length");
    s_nodes = PyUnicode_InternFromString("nodes");
    s_alloc = PyUnicode_InternFromString("alloc");
    s_largest = PyUnicode_InternFromString("largest");
    s_packed = PyUnicode_InternFromString("packed_bytes");
    s_head = PyUnicode_InternFromString("head");
    s_memory = PyUnicode_InternFromString("memory");
    if (!s_alloc || !s_largest || !s_packed || !s_head || !s_memory)
        return NULL;
    s_kinds[0] = PyUnicode_InternFromString("raw");
    s_kinds[1] = PyUnicode_InternFromString("int");
    s_kinds[2] = PyUnicode_InternFromString("lzf");
    s_stream = PyUnicode_InternFromString("stream");
    s_length = PyUnicode_InternFromString("length");
    s_groups = PyUnicode_InternFromString("groups");
    if (!s_value_length || !s_nodes || !s_kinds[0] || !s_kinds[1] || !s_kinds[2] || !s_stream || !s_length ||
        !s_groups)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Seen", (PyObject *)&SeenType) < 0 ||
        PyModule_AddObjectRef(m, "Maker", (PyObject *)&MakerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
