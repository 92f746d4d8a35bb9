/* A key's value as Redis commands in RESP for `rdb --format resp`, included by _rdb.c after
 * _rdb_lines.h: scan() writes each key it reads as reports/export.py's Exporter does (the
 * same commands, the same batches of at most EXPORT_ARGS elements and about EXPORT_BYTES
 * bytes, scores as data.redis_double writes them, PEXPIREAT last), from the bytes the lane
 * has just vouched for. SELECT is the caller's, and so is every key the lane does not read
 * or this declines (a stream: the Exporter writes it). */

/* export.BATCH_ARGS and export.BATCH_BYTES (the module's test holds them equal) */
#define EXPORT_ARGS 512
#define EXPORT_BYTES (1 << 20)

typedef struct {
    Out *o;           /* the key's commands */
    Out *args;        /* the batch's arguments, as bulk strings */
    const char *cmd;  /* the command and the key each batch starts with */
    size_t cmd_len;
    const uint8_t *key;
    size_t key_len;
    size_t items, bytes, parts; /* in the batch: elements (pairs count once), their bytes, bulk strings */
    uint64_t commands;
} Batch;

static void resp_bulk(Out *o, const void *s, size_t n) {
    char t[24], *w = dec_u64(t, n);
    OUT_LIT(o, "$");
    out_raw(o, w, (size_t)(t + 24 - w));
    OUT_LIT(o, "\r\n");
    out_raw(o, s, n);
    OUT_LIT(o, "\r\n");
}

static void resp_array(Out *o, size_t n) {
    char t[24], *w = dec_u64(t, n);
    OUT_LIT(o, "*");
    out_raw(o, w, (size_t)(t + 24 - w));
    OUT_LIT(o, "\r\n");
}

static void batch_flush(Batch *B) {
    if (!B->items)
        return;
    resp_array(B->o, 2 + B->parts);
    resp_bulk(B->o, B->cmd, B->cmd_len);
    resp_bulk(B->o, B->key, B->key_len);
    out_raw(B->o, B->args->b, B->args->n);
    B->args->n = 0;
    B->items = B->bytes = B->parts = 0;
    B->commands++;
}

/* one argument of the element being added */
static void batch_part(Batch *B, const void *s, size_t n) {
    resp_bulk(B->args, s, n);
    B->bytes += n;
    B->parts++;
}

/* the element is whole: the batch is sent when it is full (export._batched) */
static void batch_item(Batch *B) {
    B->items++;
    if (B->items >= EXPORT_ARGS || B->bytes >= EXPORT_BYTES)
        batch_flush(B);
}

/* an element of a listpack or ziplist as its text */
static void batch_lp(Batch *B, const LpItem *it) {
    if (it->s != NULL) {
        batch_part(B, it->s, it->len);
    } else {
        char t[24], *w = dec_i64(t, it->v);
        batch_part(B, w, (size_t)(t + 24 - w));
    }
}

/* a score's text as data.redis_double writes it; 0 when it cannot be written so */
static int batch_score(Batch *B, double d) {
    char t[64];
    int k = double_redis(d, t, sizeof t);
    if (k < 0) {
        PyErr_Clear();
        return 0;
    }
    batch_part(B, t, (size_t)k);
    return 1;
}

/* the sink's items as the elements of a value of object type `type` (1 list, 2 set, 3
 * zset: member and score, written score first, 4 hash) */
static int batch_sink(Batch *B, const LpSink *sink, int type) {
    const LpItem *it = sink->items;
    size_t n = sink->n;
    if (type == 3 || type == 4) {
        if (n % 2)
            return 0;
        for (size_t i = 0; i < n; i += 2) {
            if (type == 3) {
                double d;
                if (!item_score(&it[i + 1], &d) || !batch_score(B, d))
                    return 0;
                batch_lp(B, &it[i]);
            } else {
                batch_lp(B, &it[i]);
                batch_lp(B, &it[i + 1]);
            }
            batch_item(B);
        }
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        batch_lp(B, &it[i]);
        batch_item(B);
    }
    return 1;
}

/* the value at q of layout `code` as commands into B; 0 to decline */
static int resp_value(Lines *J, Lane *L, void *batch, int code, size_t q) {
    Batch *B = batch;
    const uint8_t *d, *d2;
    size_t len, len2;
    int kind;
    char num[24], num2[24];
    uint64_t n, i;
    int type = obj_type(code);
    switch (code) {
    case L_STRING:
        if (!lane_string(L, &q, 1, &d, &len, &kind, num))
            return 0;
        resp_array(B->o, 3);
        resp_bulk(B->o, "SET", 3);
        resp_bulk(B->o, B->key, B->key_len);
        resp_bulk(B->o, d, len);
        B->commands++;
        return 1;
    case L_STRINGS:
    case L_SET_STRINGS:
    case L_HASH:
    case L_ZSET2:
        if (!lane_len(L, &q, &n))
            return 0;
        for (i = 0; i < n; i++) {
            if (!lane_string(L, &q, 1, &d, &len, &kind, num))
                return 0;
            if (type == 4) { /* (the field's bytes, in the buffer or in num, before the value's are read) */
                if (!lane_string(L, &q, 1, &d2, &len2, &kind, num2))
                    return 0;
                if (d == L->scratch && d2 == L->scratch)
                    return 0; /* (two LZF strings share the scratch: the readers') */
                batch_part(B, d, len);
                batch_part(B, d2, len2);
            } else if (type == 3) {
                double s;
                if (L->n - q < 8)
                    return 0;
                memcpy(&s, L->b + q, 8);
                q += 8;
                if (!batch_score(B, s))
                    return 0;
                batch_part(B, d, len);
            } else {
                batch_part(B, d, len);
            }
            batch_item(B);
        }
        return 1;
    case L_INTSET: {
        uint32_t width, m;
        if (!lane_intset_blob(L, &q, &d, &len, &width, &m))
            return 0;
        for (uint32_t k = 0; k < m; k++) {
            char t[24], *w = dec_i64(t, intset_get(d, width, k));
            batch_part(B, w, (size_t)(t + 24 - w));
            batch_item(B);
        }
        return 1;
    }
    case L_ZIPLIST:
    case L_LISTPACK:
    case L_ZIPLIST_ZSET:
    case L_ZIPLIST_HASH:
    case L_LISTPACK_ZSET:
    case L_LISTPACK_HASH: {
        int zl = layout_ziplist(code);
        return lines_packed(J, L, &q, zl) && batch_sink(B, &J->sink, type);
    }
    case L_QUICKLIST:
    case L_QUICKLIST2:
        if (!lane_len(L, &q, &n))
            return 0;
        for (i = 0; i < n; i++) {
            uint64_t container = 2;
            if (code == L_QUICKLIST2 && !lane_len(L, &q, &container))
                return 0;
            if (container == 1) {
                if (!lane_string(L, &q, 1, &d, &len, &kind, num))
                    return 0;
                batch_part(B, d, len);
                batch_item(B);
                continue;
            }
            if (!lines_packed(J, L, &q, code == L_QUICKLIST) || !batch_sink(B, &J->sink, 1))
                return 0;
        }
        return 1;
    }
    return 0;
}

/* The key's commands (bytes), or NULL: declined when no error is set; how many, in
 * J->pending_commands until the key is made. */
static PyObject *key_resp(Lines *J, Lane *L, int code, size_t vstart, PyObject *key, int has_expire,
                          int64_t expire) {
    static const char *const CMDS[] = {NULL, "RPUSH", "SADD", "ZADD", "HSET"};
    int type = obj_type(code);
    if (type < 0 || type > 4)
        return NULL; /* (a stream: the Exporter's) */
    Out *v = &J->v;
    J->args.n = 0;
    J->args.bad = 0;
    Batch B = {v, &J->args, CMDS[type], type ? strlen(CMDS[type]) : 0, (const uint8_t *)PyBytes_AS_STRING(key),
               (size_t)PyBytes_GET_SIZE(key), 0, 0, 0, 0};
    if (!lines_reread(J, L, resp_value, &B, code, vstart) || J->args.bad)
        return NULL;
    batch_flush(&B);
    if (has_expire) {
        char t[24], *w = dec_i64(t, expire);
        resp_array(v, 3);
        resp_bulk(v, "PEXPIREAT", 9);
        resp_bulk(v, B.key, B.key_len);
        resp_bulk(v, w, (size_t)(t + 24 - w));
        B.commands++;
    }
    if (v->bad)
        return NULL;
    memset(J->pending, 0, 20);
    J->pending_commands = B.commands;
    return PyBytes_FromStringAndSize(v->b, (Py_ssize_t)v->n);
}
