/* The pcap reader's inner loop (sources/capture.py): classic pcap records taken straight
 * into the buffers of the connection directions the engine follows (engines/tails.py), or
 * passed over as another worker's, while each is a plain Ethernet/IPv4/TCP record; the
 * first record it cannot vouch for goes the ordinary way. Declining is always safe.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint32_t be16(const uint8_t *p) { return ((uint32_t)p[0] << 8) | p[1]; }

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

/* The slots of a followed direction (engines/tails.py's Tail, a list): */
enum { T_NEXT, T_BUF, T_WANT, T_PENDING, T_PACKETS, T_TS, T_INDEX, T_DATA, T_SLOTS };

static int put_slot(PyObject *tail, Py_ssize_t i, PyObject *value) {
    if (value == NULL)
        return -1;
    PyObject *old = PyList_GET_ITEM(tail, i);
    PyList_SET_ITEM(tail, i, value);
    Py_XDECREF(old);
    return 0;
}

static int slot_ll(PyObject *tail, Py_ssize_t i, long long *v) {
    *v = PyLong_AsLongLong(PyList_GET_ITEM(tail, i));
    return (*v == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* One record taken for a followed direction: counted, its time and number kept. */
static int tail_count(PyObject *tail, double ts, Py_ssize_t index, long long packets) {
    if (put_slot(tail, T_PACKETS, PyLong_FromLongLong(packets + 1)) < 0 ||
        put_slot(tail, T_TS, PyFloat_FromDouble(ts)) < 0 ||
        put_slot(tail, T_INDEX, PyLong_FromSsize_t(index)) < 0)
        return -1;
    return 0;
}

static PyObject *take_records(PyObject *self, PyObject *args) {
    /* Classic pcap records from pos, taken in C while each is a whole Ethernet/IPv4/TCP
     * record that transport/packet.plain_tcp4 names and whose 12 address and port bytes
     *  - map in tails (None: none) to a followed direction, and the record is a pure ACK,
     *    or carries the next bytes of that direction in order (no SYN, FIN or RST): its
     *    payload is appended to the direction's splitter buffer; or
     *  - map in owners (None: none) to a part other than part: another worker's record.
     * Returns (position of the first record not taken, records taken, tail): tail is the
     * followed direction whose buffer has just reached its T_WANT bytes (for the caller to
     * cut the frames, the last record taken being the one that completed them), else None.
     * Anything else stops the walk for the reader to take the record the ordinary way. */
    Py_buffer view;
    Py_ssize_t pos, hdrlen, max_record, index;
    int little;
    double scale;
    PyObject *owners, *part, *tails;
    if (!PyArg_ParseTuple(args, "y*nnpnOOOnd", &view, &pos, &hdrlen, &little, &max_record, &owners, &part, &tails,
                          &index, &scale))
        return NULL;
    const uint8_t *d = view.buf;
    Py_ssize_t n = view.len, taken = 0;
    PyObject *result = NULL, *hit = Py_None;
    if (pos < 0 || hdrlen < 16 || (owners != Py_None && !PyDict_Check(owners)) ||
        (tails != Py_None && !PyDict_Check(tails))) {
        PyErr_SetString(PyExc_ValueError, "take_records: bad position, header length or table");
        goto done;
    }
    while (pos + hdrlen <= n) {
        const uint8_t *r = d + pos;
        uint32_t sec, frac, caplen32;
        if (little) {
            sec = (uint32_t)r[0] | (uint32_t)r[1] << 8 | (uint32_t)r[2] << 16 | (uint32_t)r[3] << 24;
            frac = (uint32_t)r[4] | (uint32_t)r[5] << 8 | (uint32_t)r[6] << 16 | (uint32_t)r[7] << 24;
            caplen32 = (uint32_t)r[8] | (uint32_t)r[9] << 8 | (uint32_t)r[10] << 16 | (uint32_t)r[11] << 24;
        } else {
            sec = be32(r);
            frac = be32(r + 4);
            caplen32 = be32(r + 8);
        }
        Py_ssize_t caplen = (Py_ssize_t)caplen32;
        if (caplen > max_record || pos + hdrlen + caplen > n || caplen < 54)
            break;
        const uint8_t *p = d + pos + hdrlen;
        uint32_t tot = be16(p + 16), doff = (p[46] >> 2) & 0x3C;
        if (p[12] != 8 || p[13] || p[14] != 0x45 || p[23] != 6 || (p[20] & 0x3F) || p[21] || tot < 40 ||
            14 + tot > (uint32_t)caplen || doff < 20 || doff > tot - 20)
            break;
        PyObject *key = PyBytes_FromStringAndSize((const char *)p + 26, 12), *tail = NULL;
        if (key == NULL)
            goto done;
        if (tails != Py_None) {
            tail = PyDict_GetItemWithError(tails, key);
            if (tail == NULL && PyErr_Occurred()) {
                Py_DECREF(key);
                goto done;
            }
        }
        if (tail != NULL) {
            Py_DECREF(key);
            if (!PyList_Check(tail) || PyList_GET_SIZE(tail) < T_SLOTS) {
                PyErr_SetString(PyExc_TypeError, "take_records: a tail is a list of its slots");
                goto done;
            }
            if (p[47] & 0x07) /* SYN, FIN or RST: the reassembler's */
                break;
            uint32_t paylen = tot - 20 - doff;
            long long packets;
            if (slot_ll(tail, T_PACKETS, &packets) < 0)
                goto done;
            double ts = (double)sec + (double)frac * scale;
            if (paylen == 0) { /* a pure ACK: counted only */
                if (tail_count(tail, ts, index + taken, packets) < 0)
                    goto done;
                pos += hdrlen + caplen;
                taken++;
                continue;
            }
            PyObject *buf = PyList_GET_ITEM(tail, T_BUF);
            long long next, want, pending;
            if (buf == Py_None)
                break;
            if (!PyByteArray_Check(buf)) {
                PyErr_SetString(PyExc_TypeError, "take_records: a tail's buffer is a bytearray");
                goto done;
            }
            if (slot_ll(tail, T_NEXT, &next) < 0 || slot_ll(tail, T_WANT, &want) < 0 ||
                slot_ll(tail, T_PENDING, &pending) < 0)
                goto done;
            if (be32(p + 38) != (uint32_t)next)
                break; /* not the next bytes: the reassembler's */
            Py_ssize_t had = PyByteArray_GET_SIZE(buf);
            if (PyByteArray_Resize(buf, had + paylen) < 0)
                goto done;
            memcpy(PyByteArray_AS_STRING(buf) + had, p + 34 + doff, paylen);
            if (put_slot(tail, T_NEXT, PyLong_FromUnsignedLong(((uint32_t)next + paylen) & 0xFFFFFFFFu)) < 0 ||
                put_slot(tail, T_PENDING, PyLong_FromLongLong(pending + paylen)) < 0 ||
                put_slot(tail, T_DATA, PyLong_FromSsize_t(index + taken)) < 0 ||
                tail_count(tail, ts, index + taken, packets) < 0)
                goto done;
            pos += hdrlen + caplen;
            taken++;
            if (had + (Py_ssize_t)paylen >= want) {
                hit = tail;
                break;
            }
            continue;
        }
        if (owners == Py_None) {
            Py_DECREF(key);
            break;
        }
        PyObject *owner;
        int found = lookup(owners, key, &owner);
        if (found < 0)
            goto done;
        if (!found)
            break;
        int mine = PyObject_RichCompareBool(owner, part, Py_EQ);
        if (mine < 0)
            goto done;
        if (mine)
            break;
        pos += hdrlen + caplen;
        taken++;
    }
    result = Py_BuildValue("(nnO)", pos, taken, hit);
done:
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"take_records", take_records, METH_VARARGS, "Take pcap records of followed directions and other workers' connections."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "dcpinspect.sources._pcap", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pcap(void) { return PyModule_Create(&module); }
