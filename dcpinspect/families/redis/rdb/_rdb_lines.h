/* Whole key lines for `rdb --format jsonl --values`, included by _rdb.c: scan() makes each
 * key's JSON Lines object itself (report.key_json's fields, in its order, as
 * outputs/jsonl.dumps_line writes them: json.dumps's compact ASCII), its value in
 * data.value_json's shape and its digest as digest.digests computes it, from the bytes the
 * lane has just vouched for. A key it cannot write so (a name that is not UTF-8, a
 * score it does not read the way float() does, a stream ID past 64 bits) is declined like any other, and
 * the Python readers and report.key_json make it. */

static void sha1(const uint8_t *p, size_t n, uint8_t out[20]);
static void mix20(uint8_t d[20], const uint8_t h[20]);
static void mix20x2(uint8_t x[20], const uint8_t hx[20], uint8_t y[20], const uint8_t hy[20]);
static void sha1_20x2(uint8_t x[20], uint8_t y[20]);
static void sha1_two(const uint8_t *a, size_t na, uint8_t ha[20], const uint8_t *b, size_t nb, uint8_t hb[20]);

/* -- a growing byte buffer -- */

typedef struct {
    char *b;
    size_t n, room;
    int bad; /* out of memory: the key is declined */
} Out;

static int out_room(Out *o, size_t more) {
    if (o->n + more <= o->room)
        return 1;
    size_t room = o->room ? o->room : 4096;
    while (room < o->n + more)
        room *= 2;
    char *b = PyMem_Realloc(o->b, room);
    if (b == NULL) {
        o->bad = 1;
        return 0;
    }
    o->b = b;
    o->room = room;
    return 1;
}

static void out_raw(Out *o, const void *s, size_t n) {
    if (out_room(o, n)) {
        memcpy(o->b + o->n, s, n);
        o->n += n;
    }
}

#define OUT_LIT(o, s) out_raw((o), ("" s), sizeof(s) - 1) /* a literal only */

/* v in decimal at the end of t[24]: where it starts */
static char *dec_u64(char t[24], uint64_t v) {
    char *w = t + 24;
    do {
        *--w = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return w;
}

static char *dec_i64(char t[24], int64_t v) {
    char *w = dec_u64(t, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
    if (v < 0)
        *--w = '-';
    return w;
}

static void out_i64(Out *o, int64_t v) {
    char t[24], *w = dec_i64(t, v);
    out_raw(o, w, (size_t)(t + 24 - w));
}

static const char HEXDIGITS[] = "0123456789abcdef";

static void out_u16(Out *o, unsigned u) {
    char t[6] = {'\\', 'u', HEXDIGITS[u >> 12 & 15], HEXDIGITS[u >> 8 & 15], HEXDIGITS[u >> 4 & 15],
                 HEXDIGITS[u & 15]};
    out_raw(o, t, 6);
}

/* the length of the UTF-8 character at s[i] as Python's strict decoder takes it (its code
 * point in *cp), 0 when the bytes there are not one */
static size_t utf8_char(const uint8_t *s, size_t n, size_t i, uint32_t *cp) {
    uint8_t c = s[i];
    if (c >= 0xC2 && c <= 0xDF) {
        if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80)
            return 0;
        *cp = (uint32_t)(c & 0x1F) << 6 | (s[i + 1] & 0x3F);
        return 2;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (i + 2 >= n)
            return 0;
        uint8_t lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        if (s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0) != 0x80)
            return 0;
        *cp = (uint32_t)(c & 0x0F) << 12 | (uint32_t)(s[i + 1] & 0x3F) << 6 | (s[i + 2] & 0x3F);
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (i + 3 >= n)
            return 0;
        uint8_t lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        if (s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
            return 0;
        *cp = (uint32_t)(c & 0x07) << 18 | (uint32_t)(s[i + 1] & 0x3F) << 12 | (uint32_t)(s[i + 2] & 0x3F) << 6 |
              (s[i + 3] & 0x3F);
        return 4;
    }
    return 0;
}

/* the index of the first byte from i that json.dumps(ensure_ascii=True) does not write as
 * it is (below 0x20, '"', '\\', 0x7F and up), or n */
static size_t json_plain_run(const uint8_t *s, size_t n, size_t i) {
#ifdef __SSE2__
    const __m128i space = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'),
                  del = _mm_set1_epi8(0x7F);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
        /* (a signed compare: the bytes of 0x80 and up are below 0x20 too) */
        __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmplt_epi8(v, space), _mm_cmpeq_epi8(v, quote)),
                                       _mm_or_si128(_mm_cmpeq_epi8(v, slash), _mm_cmpeq_epi8(v, del)));
        unsigned mask = (unsigned)_mm_movemask_epi8(special);
        if (mask)
            return i + (size_t)__builtin_ctz(mask);
    }
#endif
    for (; i < n; i++) {
        uint8_t c = s[i];
        if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\')
            return i;
    }
    return n;
}

/* s as json.dumps(ensure_ascii=True) writes it when it is valid UTF-8 (1); 0 and nothing
 * written when it is not */
static int out_utf8(Out *o, const uint8_t *s, size_t n) {
    size_t start = o->n, run = 0, i = 0;
    OUT_LIT(o, "\"");
    while ((i = json_plain_run(s, n, i)) < n) {
        uint8_t c = s[i];
        out_raw(o, s + run, i - run);
        if (c < 0x80) {
            const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
            if (e)
                out_raw(o, e, 2);
            else
                out_u16(o, c);
            i++;
        } else {
            uint32_t cp;
            size_t k = utf8_char(s, n, i, &cp);
            if (!k) {
                o->n = start;
                return 0;
            }
            if (cp >= 0x10000) {
                cp -= 0x10000;
                out_u16(o, 0xD800 | cp >> 10);
                out_u16(o, 0xDC00 | (cp & 0x3FF));
            } else {
                out_u16(o, cp);
            }
            i += k;
        }
        run = i;
    }
    out_raw(o, s + run, n - run);
    OUT_LIT(o, "\"");
    return 1;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* data.text: a JSON string when s is UTF-8, else {"base64": "..."} */
static void out_text(Out *o, const uint8_t *s, size_t n) {
    if (out_utf8(o, s, n))
        return;
    OUT_LIT(o, "{\"base64\":\"");
    if (!out_room(o, (n + 2) / 3 * 4 + 2))
        return;
    char *w = o->b + o->n;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *w++ = B64[v >> 18];
        *w++ = B64[v >> 12 & 63];
        *w++ = B64[v >> 6 & 63];
        *w++ = B64[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        *w++ = B64[v >> 18];
        *w++ = B64[v >> 12 & 63];
        *w++ = '=';
        *w++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
        *w++ = B64[v >> 18];
        *w++ = B64[v >> 12 & 63];
        *w++ = B64[v >> 6 & 63];
        *w++ = '=';
    }
    o->n = (size_t)(w - o->b);
    OUT_LIT(o, "\"}");
}

/* -- doubles as the server writes them (data.redis_double, data.g17) -- */

/* -- a double's decimal digits exactly, by 128-bit integers where they fit --
 *
 * A double d = m * 2^-s (2^52 <= m < 2^53, 1 <= s <= 70: from about 3.8e-6 up to 2^53,
 * the scores files hold) times 10^k (k <= 22, so that the products stay under 2^128) is
 * exact as N = m * 10^k in units of 2^-s: its digits are N's, rounded as the bits below
 * them say. What falls outside (integers from 2^53, tiny and huge numbers, subnormals)
 * is Python's to write, as before. tests/test_rdb_lines.py checks both forms against
 * Python's on random and edge values. */

typedef unsigned __int128 u128;

static const uint64_t POW10[20] = {1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
                                   100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL,
                                   1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
                                   1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
                                   1000000000000000000ULL, 10000000000000000000ULL};

static u128 pow10_128(int k) {
    return k > 19 ? (u128)POW10[19] * POW10[k - 19] : (u128)POW10[k];
}

/* d (> 0) as m * 2^-s and the k for which m * 10^k / 2^s has 17 digits before the point
 * (its floor in [10^16, 10^17)); 0 when d is outside the range above */
static int exact_parts(double d, uint64_t *m, int *s, int *k) {
    uint64_t b;
    memcpy(&b, &d, 8);
    int be = (int)(b >> 52 & 0x7ff);
    if (be == 0 || be == 0x7ff)
        return 0;
    int e = be - 1075;
    if (e >= 0 || e < -70)
        return 0;
    *m = (b & ((1ULL << 52) - 1)) | (1ULL << 52);
    *s = -e;
    int kk = 16 - (int)floor(log10(d));
    for (int tries = 0; tries < 3; tries++) {
        if (kk < 0 || kk > 22)
            return 0;
        uint64_t q = (uint64_t)(((u128)*m * pow10_128(kk)) >> *s);
        if (q >= POW10[17])
            kk--;
        else if (q < POW10[16])
            kk++;
        else {
            *k = kk;
            return 1;
        }
    }
    return 0;
}

/* the digits of c (> 0) without its trailing zeros into t: how many; *zeros: those dropped */
static int digits_of(uint64_t c, char t[24], int *zeros) {
    int z = 0;
    while (c % 10 == 0) {
        c /= 10;
        z++;
    }
    char tmp[24];
    int n = 0;
    while (c) {
        tmp[n++] = (char)('0' + c % 10);
        c /= 10;
    }
    for (int i = 0; i < n; i++)
        t[i] = tmp[n - 1 - i];
    *zeros = z;
    return n;
}

/* an exponent as Python writes it: e, the sign, at least two digits */
static int exp_text(char *t, int x) {
    int k = 0;
    t[k++] = 'e';
    t[k++] = x < 0 ? '-' : '+';
    if (x < 0)
        x = -x;
    if (x < 10)
        t[k++] = '0';
    char num[24];
    int n = i64_text(num, x);
    memcpy(t + k, num, (size_t)n);
    return k + n;
}

/* '%.17g' % d for d > 0 in range into t (room >= 40): its length, or -1 outside the range */
static int g17_exact(double d, char *t) {
    uint64_t m;
    int s, k;
    if (!exact_parts(d, &m, &s, &k))
        return -1;
    u128 n = (u128)m * pow10_128(k);
    uint64_t q = (uint64_t)(n >> s);
    u128 rest = n & (((u128)1 << s) - 1), half = (u128)1 << (s - 1);
    if (rest > half || (rest == half && (q & 1)))
        q++;
    int x = 16 - k; /* the exponent of the first digit */
    if (q == POW10[17]) {
        q = POW10[16];
        x++;
    }
    char dg[24] = {0};
    int zeros, nd = digits_of(q, dg, &zeros);
    int w = 0;
    if (x < -4 || x >= 17) {
        t[w++] = dg[0];
        if (nd > 1) {
            t[w++] = '.';
            memcpy(t + w, dg + 1, (size_t)(nd - 1));
            w += nd - 1;
        }
        return w + exp_text(t + w, x);
    }
    if (x < 0) {
        t[w++] = '0';
        t[w++] = '.';
        for (int i = 0; i < -x - 1; i++)
            t[w++] = '0';
        memcpy(t + w, dg, (size_t)nd);
        return w + nd;
    }
    /* x + 1 digits before the point */
    for (int i = 0; i <= x; i++)
        t[w++] = i < nd ? dg[i] : '0';
    if (nd > x + 1) {
        t[w++] = '.';
        memcpy(t + w, dg + x + 1, (size_t)(nd - x - 1));
        w += nd - x - 1;
    }
    return w;
}

/* The shortest digits of d > 0 in range (and not a power of two, whose lower neighbour
 * is nearer), as repr() finds them: the fewest that read back as d, of those the nearest
 * to d; into dg (no zero at either end): how many, and *decpt: the point after that many
 * of them; -1 outside the range */
static int shortest_exact(double d, char dg[24], int *decpt) {
    uint64_t m;
    int s, k;
    if (!exact_parts(d, &m, &s, &k) || m == 1ULL << 52)
        return -1;
    u128 p = pow10_128(k);
    /* the numbers that read back as d, in units of 2^-(s+1): from (2m - 1) * p to (2m + 1) * p,
     * the ends with them when m is even (a tie reads to the even one) */
    u128 lo = (u128)(2 * m - 1) * p, hi = (u128)(2 * m + 1) * p;
    int sh = s + 1, both = (m & 1) == 0;
    u128 mask = ((u128)1 << sh) - 1;
    uint64_t xmin = (uint64_t)(lo >> sh), xmax = (uint64_t)(hi >> sh);
    if (!(both && (lo & mask) == 0))
        xmin++;
    if (!both && (hi & mask) == 0)
        xmax--;
    /* the fewest digits n (of 17) with a multiple of 10^(17-n) in [xmin, xmax]: found by halves */
    int a = 1, b = 17;
    while (a < b) {
        int mid = (a + b) / 2;
        uint64_t u = POW10[17 - mid];
        if ((xmin + u - 1) / u <= xmax / u)
            b = mid;
        else
            a = mid + 1;
    }
    uint64_t u = POW10[17 - a];
    uint64_t cmin = (xmin + u - 1) / u, cmax = xmax / u;
    if (cmin > cmax)
        return -1;
    u128 n = (u128)m * p;
    uint64_t cf = (uint64_t)(n >> s) / u;
    u128 rest = n - ((u128)(cf * u) << s), unit = (u128)u << s;
    uint64_t c = cf;
    if (2 * rest > unit || (2 * rest == unit && (cf & 1)))
        c = cf + 1;
    if (c < cmin)
        c = cmin;
    if (c > cmax)
        c = cmax;
    int zeros, nd = digits_of(c, dg, &zeros);
    /* c * 10^(17 - a - k): the point after decpt of the digits */
    *decpt = nd + zeros + 17 - a - k;
    return nd;
}

/* data.g17: %.17g as Python's % formats it; -1 when Python fails */
static int double_g17(double d, char *t, size_t room) {
    if (d != d)
        return snprintf(t, room, "nan");
    if (isinf(d))
        return snprintf(t, room, d > 0 ? "inf" : "-inf");
    if (room >= 48 && d != 0) {
        int neg = d < 0;
        double a = neg ? -d : d;
        if (a < 1e17 && a == floor(a)) { /* an integer: its digits */
            t[0] = '-';
            return neg + i64_text(t + neg, (long long)a);
        }
        t[0] = '-';
        int k = g17_exact(a, t + neg);
        if (k > 0)
            return neg + k;
    }
    char *s = PyOS_double_to_string(d, 'g', 17, 0, NULL);
    if (s == NULL)
        return -1;
    int k = snprintf(t, room, "%s", s);
    PyMem_Free(s);
    return k < (int)room ? k : -1;
}

/* repr's text r (digits, a point, an exponent) as redis_digits takes it: its digits without
 * zeros at either end into dg, how many (-1: too many); *decpt: the point after that many */
static int repr_digits(const char *r, char dg[24], int *decpt) {
    int nd = 0, before = 0, lead = 0, in_frac = 0;
    const char *c = r;
    for (; *c && *c != 'e'; c++) {
        if (*c == '.') {
            in_frac = 1;
            continue;
        }
        before += !in_frac;
        if (nd == 0 && *c == '0') {
            lead++;
            continue;
        }
        if (nd == 24)
            return -1;
        dg[nd++] = *c;
    }
    while (nd > 0 && dg[nd - 1] == '0')
        nd--;
    *decpt = before - lead + (*c == 'e' ? (int)strtol(c + 1, NULL, 10) : 0);
    return nd;
}

/* data.redis_double's layout of the shortest digits dg (nd of them, no zero at either
 * end, the point after decpt of them; not an integer below 2^62) into t (room >= 48) */
static int redis_digits(int neg, const char *dg, int nd, int decpt, char *t) {
    int w = 0;
    if (neg)
        t[w++] = '-';
    int fixed = decpt > -4 && decpt <= 16; /* repr's own layout, kept while at most 6 decimals */
    int decimals = decpt <= 0 ? nd - decpt : nd - decpt;
    int K = decpt - nd, ex = decpt - 1 < 0 ? 1 - decpt : decpt - 1;
    if ((fixed && decpt < nd && decimals <= 6) || (K < 0 && (K > -7 || ex < 4))) {
        if (decpt <= 0) {
            t[w++] = '0';
            t[w++] = '.';
            for (int i = 0; i < -decpt; i++)
                t[w++] = '0';
            memcpy(t + w, dg, (size_t)nd);
            return w + nd;
        }
        memcpy(t + w, dg, (size_t)decpt);
        w += decpt;
        t[w++] = '.';
        memcpy(t + w, dg + decpt, (size_t)(nd - decpt));
        return w + nd - decpt;
    }
    if (K >= 0 && ex < nd + 7) {
        memcpy(t + w, dg, (size_t)nd);
        w += nd;
        for (int i = 0; i < K; i++)
            t[w++] = '0';
        return w;
    }
    int keep = nd < 18 - neg ? nd : 18 - neg;
    t[w++] = dg[0];
    if (keep > 1) {
        t[w++] = '.';
        memcpy(t + w, dg + 1, (size_t)(keep - 1));
        w += keep - 1;
    }
    t[w++] = 'e';
    t[w++] = decpt - 1 < 0 ? '-' : '+';
    char num[24];
    int n = i64_text(num, ex);
    memcpy(t + w, num, (size_t)n);
    return w + n;
}

/* data.redis_double; -1 on a Python error (or room under 48) */
static int double_redis(double d, char *t, size_t room) {
    if (d != d)
        return snprintf(t, room, "nan");
    if (isinf(d))
        return snprintf(t, room, d > 0 ? "inf" : "-inf");
    if (d == 0)
        return snprintf(t, room, signbit(d) ? "-0" : "0");
    const double half = (double)(9223372036854775807LL / 2);
    if (d >= -half && d <= half && (double)(long long)d == d)
        return room >= 24 ? i64_text(t, (long long)d) : snprintf(t, room, "%lld", (long long)d);
    if (room < 48)
        return -1;
    int neg = d < 0;
    char dg[24] = {0};
    int decpt, nd = shortest_exact(neg ? -d : d, dg, &decpt);
    if (nd < 0) { /* outside the exact range: repr's digits, from Python */
        char *r = PyOS_double_to_string(neg ? -d : d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
        if (r == NULL)
            return -1;
        nd = repr_digits(r, dg, &decpt);
        PyMem_Free(r);
        if (nd <= 0)
            return -1;
    }
    return redis_digits(neg, dg, nd, decpt, t);
}

/* -- one key's line -- */

typedef struct {
    int g17;           /* scores enter digests as %.17g (a server before 7.2 wrote the file) */
    uint8_t part[20];  /* the XOR of the parts of DEBUG DIGEST of the keys made so far */
    uint8_t pending[20]; /* the part of the key just written, until it is made */
    Out v;             /* the value's JSON */
    uint8_t *hs;       /* the SHA-1s an ordered value mixes in, in turn */
    size_t nh, roomh;
    uint8_t acc[20];   /* what an unordered value XORs in */
    LpSink sink;
    PyObject *vtype, *tname; /* the value type of the key before, and its type's name (held) */
    uint64_t stripe;   /* 0, or the lines are of the keys whose offset // stripe, modulo `ways`, is */
    uint64_t mine, ways; /* one of the bits of `mine` */
    int resp;          /* each key as Redis commands instead (_rdb_resp.h) */
    Out args;          /* (resp) the arguments of the command being made */
    uint64_t commands, pending_commands; /* (resp) the commands of the keys made, of the key just written */
    /* the SHA-1s a value takes, two at a time (see hash_el): an element's short text that
     * waits for the next one's, and what it is for; a pair's two SHA-1s that wait for the
     * next pair's */
    int waiting, wait_op, chained;
    uint8_t wait_t[56];
    size_t wait_n, wait_slot;
    uint8_t chain_a[20], chain_b[20];
} Lines;

/* whether the key at input offset `at` is one whose line is written here */
static int lines_own(const Lines *J, uint64_t at) {
    return J->stripe == 0 || (J->mine >> (at / J->stripe % J->ways) & 1);
}


/* a slot for an ordered value's next SHA-1 (filled when it is made) */
static int lines_slot(Lines *J, size_t *slot) {
    if (J->nh == J->roomh) {
        size_t room = J->roomh ? J->roomh * 2 : 256;
        uint8_t *hs = PyMem_Realloc(J->hs, room * 20);
        if (hs == NULL) {
            J->v.bad = 1;
            return 0;
        }
        J->hs = hs;
        J->roomh = room;
    }
    *slot = J->nh++;
    return 1;
}

/* h, an ordered value's next SHA-1 */
static int lines_hash(Lines *J, const uint8_t h[20]) {
    size_t slot;
    if (!lines_slot(J, &slot))
        return 0;
    memcpy(J->hs + 20 * slot, h, 20);
    return 1;
}

static void xor20(uint8_t d[20], const uint8_t h[20]) {
    for (int i = 0; i < 20; i++)
        d[i] ^= h[i];
}

/* the server's types (OBJ_STRING ...) of the lane's layouts */
static int obj_type(int code) {
    switch (code) {
    case L_STRING:
        return 0;
    case L_STRINGS:
    case L_ZIPLIST:
    case L_QUICKLIST:
    case L_QUICKLIST2:
        return 1;
    case L_SET_STRINGS:
    case L_INTSET:
    case L_LISTPACK:
        return 2;
    case L_ZSET2:
    case L_ZIPLIST_ZSET:
    case L_LISTPACK_ZSET:
        return 3;
    case L_HASH:
    case L_ZIPLIST_HASH:
    case L_LISTPACK_HASH:
        return 4;
    case L_STREAM1:
    case L_STREAM2:
    case L_STREAM3:
    case L_STREAM4:
        return 6;
    }
    return -1;
}

/* -- the SHA-1s of a value's elements, two at a time --
 * SHA-NI's rounds of two messages interleave (sha1_block_ni2), nearly twice the blocks in
 * the time of one: an element's SHA-1 whose text fits a block waits for the next one's
 * (hash_el), and a pair's chain of three (a hash's field and value, a member and its score:
 * pair_xor) for the next pair's (hash_pair). lines_flush does what still waits before the
 * digests are taken; the XOR of an unordered value does not depend on the order, and an
 * ordered value's SHA-1s go to the slots they were given. */

enum { H_XOR, H_SLOT };

static void hash_put(Lines *J, int op, size_t slot, const uint8_t h[20]) {
    if (op == H_XOR)
        xor20(J->acc, h);
    else
        memcpy(J->hs + 20 * slot, h, 20);
}

/* the SHA-1 of an element's text (n bytes at p): XORed into the value's (H_XOR), or into
 * the slot of an ordered value (H_SLOT) */
static void hash_el(Lines *J, const uint8_t *p, size_t n, int op, size_t slot) {
    uint8_t h[20], h2[20];
    if (n >= sizeof J->wait_t) {
        sha1(p, n, h);
        hash_put(J, op, slot, h);
        return;
    }
    if (!J->waiting) {
        memcpy(J->wait_t, p, n);
        J->wait_n = n;
        J->wait_op = op;
        J->wait_slot = slot;
        J->waiting = 1;
        return;
    }
    sha1_two(J->wait_t, J->wait_n, h, p, n, h2);
    J->waiting = 0;
    hash_put(J, J->wait_op, J->wait_slot, h);
    hash_put(J, op, slot, h2);
}

/* a pair whose elements' SHA-1s are ha and hb: its own digest (from zero: mix of a, mix
 * of b) XORed into the value's, with the next pair's */
static void hash_chain(Lines *J, const uint8_t ha[20], const uint8_t hb[20]) {
    if (!J->chained) {
        memcpy(J->chain_a, ha, 20);
        memcpy(J->chain_b, hb, 20);
        J->chained = 1;
        return;
    }
    uint8_t x[20], y[20];
    memcpy(x, J->chain_a, 20);
    memcpy(y, ha, 20);
    sha1_20x2(x, y);
    xor20(x, J->chain_b);
    xor20(y, hb);
    sha1_20x2(x, y);
    sha1_20x2(x, y);
    xor20(J->acc, x);
    xor20(J->acc, y);
    J->chained = 0;
}

static void hash_pair(Lines *J, const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
    uint8_t ha[20], hb[20];
    sha1_two(a, na, ha, b, nb, hb);
    hash_chain(J, ha, hb);
}

static void pair_xor(Lines *J, const uint8_t ha[20], const uint8_t hb[20]);

/* what waits, done */
static void lines_flush(Lines *J) {
    if (J->waiting) {
        uint8_t h[20];
        sha1(J->wait_t, J->wait_n, h);
        hash_put(J, J->wait_op, J->wait_slot, h);
        J->waiting = 0;
    }
    if (J->chained) {
        pair_xor(J, J->chain_a, J->chain_b);
        J->chained = 0;
    }
}

/* an element's JSON into the value, and the text its SHA-1 is of: *p, *n (an integer's in t) */
static void el_text(Lines *J, const LpItem *it, char t[24], const uint8_t **p, size_t *n) {
    if (it->s == NULL) {
        char *w = dec_i64(t, it->v);
        size_t k = (size_t)(t + 24 - w);
        OUT_LIT(&J->v, "\"");
        out_raw(&J->v, w, k);
        OUT_LIT(&J->v, "\"");
        *p = (const uint8_t *)w;
        *n = k;
    } else {
        out_text(&J->v, it->s, it->len);
        *p = it->s;
        *n = it->len;
    }
}

/* a score's JSON (data.redis_double) into the value, and the text the digest takes of it
 * (in t, 64 bytes): its length, or -1 on failure */
static int score_text(Lines *J, double d, char t[64]) {
    char r[64];
    int k = double_redis(d, r, sizeof r);
    if (k < 0)
        return -1;
    OUT_LIT(&J->v, "\"");
    out_raw(&J->v, r, (size_t)k);
    OUT_LIT(&J->v, "\"");
    if (!J->g17) {
        memcpy(t, r, (size_t)k);
        return k;
    }
    return double_g17(d, t, 64);
}

/* an element: its JSON into the value, its SHA-1 into h */
static void el_bytes(Lines *J, const uint8_t *s, size_t n, uint8_t h[20]) {
    out_text(&J->v, s, n);
    sha1(s, n, h);
}

static void el_item(Lines *J, const LpItem *it, uint8_t h[20]) {
    char t[24];
    const uint8_t *p;
    size_t n;
    el_text(J, it, t, &p, &n);
    sha1(p, n, h);
}

/* a packed score as float() reads it (the lane has checked that a string one is plainly a number) */
static int item_score(const LpItem *it, double *d) {
    if (it->s == NULL) {
        *d = (double)it->v;
        return 1;
    }
    char t[128];
    if (it->len >= sizeof t)
        return 0;
    memcpy(t, it->s, it->len);
    t[it->len] = 0;
    char *end;
    *d = PyOS_string_to_double(t, &end, NULL);
    if (*d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return end == t + it->len;
}

/* a pair's own digest (from zero: mix of a, mix of b) XORed into the value's */
static void pair_xor(Lines *J, const uint8_t ha[20], const uint8_t hb[20]) {
    uint8_t ed[20] = {0}, h[20];
    mix20(ed, ha);
    mix20(ed, hb);
    sha1(ed, 20, h);
    xor20(J->acc, h);
}

/* the entries of a packed string at *q into J->sink: 0 when not as the lane read them */
static int lines_packed(Lines *J, Lane *L, size_t *q, int ziplist) {
    const uint8_t *d;
    size_t len;
    int kind;
    char num[24];
    if (!lane_string(L, q, 1, &d, &len, &kind, num) || kind == S_INT)
        return 0;
    J->sink.n = 0;
    int r = ziplist ? ziplist_walk(d, len, NULL, NULL, 0, NULL, &J->sink)
                    : listpack_walk(d, len, NULL, NULL, 0, &J->sink, NULL);
    if (r < 0)
        PyErr_Clear();
    return r == 1;
}

/* the packed entries in J->sink as a list, a set, member/score or field/value pairs */
static int lines_entries(Lines *J, int type, int first) {
    const LpItem *it = J->sink.items;
    size_t n = J->sink.n, na, nb, slot = 0;
    const uint8_t *a, *b;
    char ta[24], tb[64];
    if (type == 3 || type == 4) {
        if (n % 2)
            return 0;
        for (size_t i = 0; i < n; i += 2) {
            if (!(first && i == 0))
                OUT_LIT(&J->v, ",");
            OUT_LIT(&J->v, "[");
            el_text(J, &it[i], ta, &a, &na);
            OUT_LIT(&J->v, ",");
            if (type == 3) {
                double d;
                int k;
                if (!item_score(&it[i + 1], &d) || (k = score_text(J, d, tb)) < 0)
                    return 0;
                b = (const uint8_t *)tb;
                nb = (size_t)k;
            } else {
                el_text(J, &it[i + 1], tb, &b, &nb);
            }
            OUT_LIT(&J->v, "]");
            hash_pair(J, a, na, b, nb);
        }
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(first && i == 0))
            OUT_LIT(&J->v, ",");
        el_text(J, &it[i], ta, &a, &na);
        if (type != 2 && !lines_slot(J, &slot))
            return 0;
        hash_el(J, a, na, type == 2 ? H_XOR : H_SLOT, slot);
    }
    return 1;
}


/* -- streams (data._stream's shape; digest: each live entry's "ms.seq", fields and values) -- */

static void out_u64(Out *o, uint64_t v) {
    char t[24], *w = dec_u64(t, v);
    out_raw(o, w, (size_t)(t + 24 - w));
}

static void out_id(Out *o, uint64_t ms, uint64_t seq) {
    char t[48];
    int k = snprintf(t, sizeof t, "\"%llu-%llu\"", (unsigned long long)ms, (unsigned long long)seq);
    out_raw(o, t, (size_t)k);
}

static uint64_t be64(const uint8_t *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }

/* two lengths as an ID */
static int lane_id(Lane *L, size_t *q, uint64_t *ms, uint64_t *seq) {
    return lane_len(L, q, ms) && lane_len(L, q, seq);
}

static int lines_elem_hash(Lines *J, const LpItem *it) {
    uint8_t h[20];
    el_item(J, it, h);
    return lines_hash(J, h);
}

/* one node's entries (checked by lane_stream_node) */
static int lines_stream_node(Lines *J, uint64_t mms, uint64_t mseq, int *first) {
    const LpItem *it = J->sink.items;
    size_t len = J->sink.n;
    size_t nfields = (size_t)it[2].v, i = 4 + nfields;
    const LpItem *fields = it + 3;
    while (i < len) {
        int64_t flags = it[i].v;
        __int128 ms = (__int128)mms + it[i + 1].v, seq = (__int128)mseq + it[i + 2].v;
        i += 3;
        size_t n = flags & 2 ? nfields : (size_t)it[i].v;
        const LpItem *vals = flags & 2 ? it + i : it + i + 1;
        i += flags & 2 ? nfields : 1 + 2 * n;
        i += 1; /* lp-count */
        if (flags & 1)
            continue;
        if (ms < 0 || seq < 0 || ms > (__int128)UINT64_MAX || seq > (__int128)UINT64_MAX)
            return 0;
        if (!*first)
            OUT_LIT(&J->v, ",");
        *first = 0;
        OUT_LIT(&J->v, "[");
        out_id(&J->v, (uint64_t)ms, (uint64_t)seq);
        OUT_LIT(&J->v, ",[");
        char t[48];
        uint8_t h[20];
        int k = snprintf(t, sizeof t, "%llu.%llu", (unsigned long long)ms, (unsigned long long)seq);
        sha1((const uint8_t *)t, (size_t)k, h);
        if (!lines_hash(J, h))
            return 0;
        for (size_t f = 0; f < n; f++) {
            const LpItem *field = flags & 2 ? &fields[f] : &vals[2 * f];
            const LpItem *value = flags & 2 ? &vals[f] : &vals[2 * f + 1];
            if (f)
                OUT_LIT(&J->v, ",");
            OUT_LIT(&J->v, "[");
            if (!lines_elem_hash(J, field))
                return 0;
            OUT_LIT(&J->v, ",");
            if (!lines_elem_hash(J, value))
                return 0;
            OUT_LIT(&J->v, "]");
        }
        OUT_LIT(&J->v, "]]");
    }
    return 1;
}

typedef struct {
    uint64_t ms, seq;
    size_t consumer;
} Owned;

static int cmp_owned(const void *a, const void *b) {
    const Owned *x = a, *y = b;
    if (x->ms != y->ms)
        return x->ms < y->ms ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->consumer < y->consumer ? -1 : x->consumer > y->consumer;
}

/* the consumer (its index) whose PEL holds the ID last, as data._stream's dict says, or -1 */
static Py_ssize_t owner_of(const Owned *o, size_t n, uint64_t ms, uint64_t seq) {
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first entry past (ms, seq) */
        size_t mid = (lo + hi) / 2;
        if (o[mid].ms < ms || (o[mid].ms == ms && o[mid].seq <= seq))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo && o[lo - 1].ms == ms && o[lo - 1].seq == seq)
        return (Py_ssize_t)o[lo - 1].consumer;
    return -1;
}

static int lines_name(Lines *J, Lane *L, size_t at) {
    const uint8_t *d;
    size_t len;
    int kind;
    char num[24];
    if (!lane_string(L, &at, 1, &d, &len, &kind, num))
        return 0;
    out_text(&J->v, d, len);
    return 1;
}

/* one consumer group from *q */
static int lines_group(Lines *J, Lane *L, size_t *q, int version, Owned **owned, size_t *owned_room) {
    uint64_t ms, seq, x, npel, nconsumers;
    size_t name_at = *q;
    if (!lane_skip(L, q) || !lane_id(L, q, &ms, &seq))
        return 0;
    OUT_LIT(&J->v, "{\"name\":");
    if (!lines_name(J, L, name_at))
        return 0;
    OUT_LIT(&J->v, ",\"last_delivered_id\":");
    out_id(&J->v, ms, seq);
    if (version >= 2) {
        if (!lane_len(L, q, &x))
            return 0;
        OUT_LIT(&J->v, ",\"entries_read\":");
        if (x == UINT64_MAX)
            OUT_LIT(&J->v, "null");
        else
            out_u64(&J->v, x);
    }
    if (!lane_len(L, q, &npel))
        return 0;
    size_t pel_at = *q;
    for (uint64_t e = 0; e < npel; e++)
        if (!lane_ms(L, q, 16 + 8) || !lane_len(L, q, &x))
            return 0;
    if (!lane_len(L, q, &nconsumers))
        return 0;
    size_t consumers_at = *q, n = 0;
    size_t *names = nconsumers ? PyMem_Malloc(nconsumers * sizeof(size_t)) : NULL;
    if (nconsumers && names == NULL)
        return 0;
    int ok = 0;
    for (uint64_t c = 0; c < nconsumers; c++) {
        uint64_t ncpel;
        names[c] = *q;
        if (!lane_skip(L, q) || !lane_ms(L, q, version >= 3 ? 16 : 8) || !lane_len(L, q, &ncpel))
            goto out;
        for (uint64_t e = 0; e < ncpel; e++, n++) {
            if (n == *owned_room) {
                size_t room = *owned_room ? *owned_room * 2 : 64;
                Owned *o = PyMem_Realloc(*owned, room * sizeof(Owned));
                if (o == NULL)
                    goto out;
                *owned = o;
                *owned_room = room;
            }
            (*owned)[n] = (Owned){be64(L->b + *q), be64(L->b + *q + 8), (size_t)c};
            *q += 16;
        }
    }
    if (n > 1)
        qsort(*owned, n, sizeof(Owned), cmp_owned);
    OUT_LIT(&J->v, ",\"pending\":[");
    size_t r = pel_at;
    for (uint64_t e = 0; e < npel; e++) {
        uint64_t ims = be64(L->b + r), iseq = be64(L->b + r + 8);
        int64_t delivered = le64s(L->b + r + 16);
        r += 24;
        if (!lane_len(L, &r, &x))
            goto out;
        if (e)
            OUT_LIT(&J->v, ",");
        OUT_LIT(&J->v, "{\"id\":");
        out_id(&J->v, ims, iseq);
        OUT_LIT(&J->v, ",\"consumer\":");
        Py_ssize_t who = owner_of(*owned, n, ims, iseq);
        if (who < 0)
            OUT_LIT(&J->v, "null");
        else if (!lines_name(J, L, names[who]))
            goto out;
        OUT_LIT(&J->v, ",\"delivery_time\":");
        out_i64(&J->v, delivered);
        OUT_LIT(&J->v, ",\"delivery_count\":");
        out_u64(&J->v, x);
        OUT_LIT(&J->v, "}");
    }
    OUT_LIT(&J->v, "],\"consumers\":[");
    r = consumers_at;
    for (uint64_t c = 0; c < nconsumers; c++) {
        uint64_t ncpel;
        if (c)
            OUT_LIT(&J->v, ",");
        OUT_LIT(&J->v, "{\"name\":");
        if (!lines_name(J, L, r) || !lane_skip(L, &r))
            goto out;
        OUT_LIT(&J->v, ",\"seen_time\":");
        out_i64(&J->v, le64s(L->b + r));
        r += 8;
        if (version >= 3) {
            OUT_LIT(&J->v, ",\"active_time\":");
            out_i64(&J->v, le64s(L->b + r));
            r += 8;
        }
        if (!lane_len(L, &r, &ncpel))
            goto out;
        OUT_LIT(&J->v, ",\"pending\":[");
        for (uint64_t e = 0; e < ncpel; e++) {
            if (e)
                OUT_LIT(&J->v, ",");
            out_id(&J->v, be64(L->b + r), be64(L->b + r + 8));
            r += 16;
        }
        OUT_LIT(&J->v, "]}");
    }
    OUT_LIT(&J->v, "]}");
    ok = 1;
out:
    PyMem_Free(names);
    return ok;
}

/* a stream of layout version 1-4 at q (read by lane_stream already) */
static int lines_stream(Lines *J, Lane *L, size_t q, int version) {
    uint64_t nodes, x, ms, seq;
    int first = 1;
    if (!lane_len(L, &q, &nodes))
        return 0;
    OUT_LIT(&J->v, "{\"entries\":[");
    for (uint64_t k = 0; k < nodes; k++) {
        const uint8_t *d;
        size_t len;
        int kind;
        char num[24];
        if (!lane_string(L, &q, 1, &d, &len, &kind, num) || len != 16)
            return 0;
        uint64_t mms = be64(d), mseq = be64(d + 8);
        if (!lines_packed(J, L, &q, 0) || !lines_stream_node(J, mms, mseq, &first))
            return 0;
    }
    OUT_LIT(&J->v, "],\"length\":");
    if (!lane_len(L, &q, &x) || !lane_id(L, &q, &ms, &seq))
        return 0;
    out_u64(&J->v, x);
    OUT_LIT(&J->v, ",\"last_id\":");
    out_id(&J->v, ms, seq);
    if (version >= 2) {
        if (!lane_id(L, &q, &ms, &seq))
            return 0;
        OUT_LIT(&J->v, ",\"first_id\":");
        out_id(&J->v, ms, seq);
        if (!lane_id(L, &q, &ms, &seq) || !lane_len(L, &q, &x))
            return 0;
        OUT_LIT(&J->v, ",\"max_deleted_id\":");
        out_id(&J->v, ms, seq);
        OUT_LIT(&J->v, ",\"entries_added\":");
        out_u64(&J->v, x);
    }
    uint64_t groups;
    if (!lane_len(L, &q, &groups))
        return 0;
    OUT_LIT(&J->v, ",\"groups\":[");
    Owned *owned = NULL;
    size_t owned_room = 0;
    int ok = 1;
    for (uint64_t g = 0; ok && g < groups; g++) {
        if (g)
            OUT_LIT(&J->v, ",");
        ok = lines_group(J, L, &q, version, &owned, &owned_room);
    }
    PyMem_Free(owned);
    OUT_LIT(&J->v, "]}");
    return ok;
}

/* The value of layout `code` at q (read by the lane already): its JSON into J->v, its
 * elements' SHA-1s into J->hs (ordered) or J->acc (unordered). 0: declined. */
/* The value at vstart, which the lane has just read and vouched for, read again by `read`
 * (its line's value, or its commands) into J->v: 1 when whole. The LZF strings it inflates
 * were charged to the input's budget when the lane read the key, so not again. */
typedef int (*Reread)(Lines *J, Lane *L, void *ctx, int code, size_t q);

static int lines_reread(Lines *J, Lane *L, Reread read, void *ctx, int code, size_t vstart) {
    J->v.n = 0;
    J->v.bad = 0;
    uint64_t lzf_left = L->lzf_left;
    L->lzf_left = UINT64_MAX;
    int ok = read(J, L, ctx, code, vstart);
    L->lzf_left = lzf_left;
    return ok && !J->v.bad;
}

static int lines_value(Lines *J, Lane *L, void *unused, int code, size_t q) {
    const uint8_t *d;
    size_t len;
    int kind;
    char num[24];
    uint8_t h[20], h2[20], first_text[56];
    char score[64];
    uint64_t n, i;
    size_t slot = 0;
    int type = obj_type(code);
    switch (code) {
    case L_STREAM1:
    case L_STREAM2:
    case L_STREAM3:
    case L_STREAM4:
        return lines_stream(J, L, q, code - L_STREAM1 + 1);
    case L_STRING:
        if (!lane_string(L, &q, 1, &d, &len, &kind, num) || !lines_slot(J, &slot))
            return 0;
        out_text(&J->v, d, len);
        hash_el(J, d, len, H_SLOT, slot);
        return 1;
    case L_STRINGS:
    case L_SET_STRINGS:
    case L_HASH:
    case L_ZSET2:
        if (!lane_len(L, &q, &n))
            return 0;
        OUT_LIT(&J->v, "[");
        for (i = 0; i < n; i++) {
            if (i)
                OUT_LIT(&J->v, ",");
            if (type >= 3)
                OUT_LIT(&J->v, "[");
            if (!lane_string(L, &q, 1, &d, &len, &kind, num))
                return 0;
            out_text(&J->v, d, len);
            if (type <= 2) {
                if (type == 1 && !lines_slot(J, &slot))
                    return 0;
                hash_el(J, d, len, type == 2 ? H_XOR : H_SLOT, slot);
                continue;
            }
            /* the field's or member's text may be in the lane's scratch or number (the
             * value's reading reuses them): held here while short, else its SHA-1 now */
            const uint8_t *a = first_text;
            size_t na = len;
            int held = len < sizeof first_text;
            if (held)
                memcpy(first_text, d, len);
            else
                sha1(d, len, h);
            OUT_LIT(&J->v, ",");
            const uint8_t *b;
            size_t nb;
            if (type == 4) {
                if (!lane_string(L, &q, 1, &d, &len, &kind, num))
                    return 0;
                out_text(&J->v, d, len);
                b = d;
                nb = len;
            } else {
                double s;
                int k;
                if (L->n - q < 8)
                    return 0;
                memcpy(&s, L->b + q, 8);
                q += 8;
                if ((k = score_text(J, s, score)) < 0)
                    return 0;
                b = (const uint8_t *)score;
                nb = (size_t)k;
            }
            OUT_LIT(&J->v, "]");
            if (held) {
                hash_pair(J, a, na, b, nb);
            } else {
                sha1(b, nb, h2);
                hash_chain(J, h, h2);
            }
        }
        OUT_LIT(&J->v, "]");
        return 1;
    case L_INTSET: {
        uint32_t width, m;
        if (!lane_intset_blob(L, &q, &d, &len, &width, &m))
            return 0;
        OUT_LIT(&J->v, "[");
        for (uint32_t k = 0; k < m; k++) {
            if (k)
                OUT_LIT(&J->v, ",");
            LpItem it = {.s = NULL, .v = intset_get(d, width, k)};
            const uint8_t *a;
            size_t na;
            el_text(J, &it, num, &a, &na);
            hash_el(J, a, na, H_XOR, 0);
        }
        OUT_LIT(&J->v, "]");
        return 1;
    }
    case L_ZIPLIST:
    case L_LISTPACK:
    case L_ZIPLIST_ZSET:
    case L_ZIPLIST_HASH:
    case L_LISTPACK_ZSET:
    case L_LISTPACK_HASH: {
        int zl = layout_ziplist(code);
        if (!lines_packed(J, L, &q, zl))
            return 0;
        OUT_LIT(&J->v, "[");
        if (!lines_entries(J, type, 1))
            return 0;
        OUT_LIT(&J->v, "]");
        return 1;
    }
    case L_QUICKLIST:
    case L_QUICKLIST2: {
        int first = 1;
        if (!lane_len(L, &q, &n))
            return 0;
        OUT_LIT(&J->v, "[");
        for (i = 0; i < n; i++) {
            uint64_t container = 2;
            if (code == L_QUICKLIST2 && !lane_len(L, &q, &container))
                return 0;
            if (container == 1) {
                if (!lane_string(L, &q, 1, &d, &len, &kind, num))
                    return 0;
                if (!first)
                    OUT_LIT(&J->v, ",");
                el_bytes(J, d, len, h);
                if (!lines_hash(J, h))
                    return 0;
                first = 0;
                continue;
            }
            if (!lines_packed(J, L, &q, code == L_QUICKLIST) || !lines_entries(J, 1, first))
                return 0;
            if (J->sink.n)
                first = 0;
        }
        OUT_LIT(&J->v, "]");
        return 1;
    }
    }
    return 0;
}

/* the SHA-1s every key's digest takes: of each type's number (4 bytes, big-endian), and
 * of the text an expiry mixes in; made once */
static uint8_t TYPE_SHA1[8][20], EXPIRE_SHA1[20];

static void digest_constants(void) {
    static int made;
    if (made)
        return;
    for (int t = 0; t < 8; t++) {
        uint8_t tb[4] = {0, 0, 0, (uint8_t)t};
        sha1(tb, 4, TYPE_SHA1[t]);
    }
    sha1((const uint8_t *)"!!expire!!", 10, EXPIRE_SHA1);
    made = 1;
}

/* from_(d) of digest.digests, of the value's digest d and of the key's kd (which has the
 * key's name mixed in first) at once: the type mixed in, then the ordered elements, then
 * the tail */
static void lines_from(const Lines *J, uint8_t d[20], uint8_t kd[20], const uint8_t type_h[20],
                       const uint8_t tail[20]) {
    mix20x2(d, type_h, kd, type_h);
    for (size_t i = 0; i < J->nh; i++)
        mix20x2(d, J->hs + 20 * i, kd, J->hs + 20 * i);
    xor20(d, tail);
    xor20(kd, tail);
}

/* The key's whole line (bytes), or NULL: declined when no error is set. Its part of the
 * snapshot's digest goes to J->pending. */
static PyObject *key_line(Lines *J, Lane *L, int code, size_t vstart, PyObject *key, long long db,
                          PyObject *vtype, PyObject *encoding, uint64_t elements, int64_t value_length, size_t size,
                          int has_expire, int64_t expire, Py_ssize_t offset, size_t length) {
    int type = obj_type(code);
    if (type < 0)
        return NULL;
    Out *v = &J->v;
    J->nh = 0;
    memset(J->acc, 0, 20);
    J->waiting = J->chained = 0;
    if (!lines_reread(J, L, lines_value, NULL, code, vstart))
        return NULL;
    lines_flush(J);
    size_t value_end = v->n;
    /* the digests */
    uint8_t tail[20], d[20] = {0}, kd[20] = {0}, h[20], part[20];
    digest_constants();
    memcpy(tail, J->acc, 20);
    if (has_expire)
        xor20(tail, EXPIRE_SHA1);
    sha1((const uint8_t *)PyBytes_AS_STRING(key), (size_t)PyBytes_GET_SIZE(key), h);
    mix20(kd, h);
    lines_from(J, d, kd, TYPE_SHA1[type & 7], tail);
    sha1(kd, 20, part);
    /* the line, after the value in the same buffer */
    OUT_LIT(v, "{\"kind\":\"key\",\"protocol\":\"rdb\",\"db\":");
    out_i64(v, db);
    OUT_LIT(v, ",\"key\":");
    if (!out_utf8(v, (const uint8_t *)PyBytes_AS_STRING(key), (size_t)PyBytes_GET_SIZE(key)))
        return NULL; /* key_text's escapes and key_base64: the readers' */
    Py_ssize_t tn, en;
    if (J->vtype != vtype) { /* (keys of one type come in runs: its name is looked up once a run) */
        Py_CLEAR(J->vtype);
        Py_CLEAR(J->tname);
        J->tname = PyObject_GetAttrString(vtype, "type");
        if (J->tname == NULL)
            return NULL;
        J->vtype = Py_NewRef(vtype);
    }
    const char *ts = PyUnicode_Check(J->tname) ? PyUnicode_AsUTF8AndSize(J->tname, &tn) : NULL;
    const char *es = PyUnicode_Check(encoding) ? PyUnicode_AsUTF8AndSize(encoding, &en) : NULL;
    if (ts == NULL || es == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "scan: a type and an encoding are str");
        return NULL;
    }
    OUT_LIT(v, ",\"type\":");
    out_utf8(v, (const uint8_t *)ts, (size_t)tn);
    OUT_LIT(v, ",\"encoding\":");
    out_utf8(v, (const uint8_t *)es, (size_t)en);
    OUT_LIT(v, ",\"elements\":");
    out_i64(v, (int64_t)elements);
    OUT_LIT(v, ",\"value_length\":");
    out_i64(v, value_length);
    OUT_LIT(v, ",\"size\":");
    out_i64(v, (int64_t)size);
    OUT_LIT(v, ",\"expire_ms\":");
    if (has_expire)
        out_i64(v, expire);
    else
        OUT_LIT(v, "null");
    OUT_LIT(v, ",\"offset\":");
    out_i64(v, (int64_t)offset);
    OUT_LIT(v, ",\"length\":");
    out_i64(v, (int64_t)length);
    OUT_LIT(v, ",\"findings\":[],\"digest\":\"");
    if (out_room(v, 40)) {
        for (int i = 0; i < 20; i++) {
            v->b[v->n++] = HEXDIGITS[d[i] >> 4];
            v->b[v->n++] = HEXDIGITS[d[i] & 15];
        }
    }
    OUT_LIT(v, "\",\"value\":");
    if (v->bad)
        return NULL;
    size_t head = v->n - value_end;
    PyObject *line = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(v->n + 2));
    if (line == NULL)
        return NULL;
    char *w = PyBytes_AS_STRING(line);
    memcpy(w, v->b + value_end, head);
    memcpy(w + head, v->b, value_end);
    w[head + value_end] = '}';
    w[head + value_end + 1] = '\n';
    memcpy(J->pending, part, 20);
    return line;
}
