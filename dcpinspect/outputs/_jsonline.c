/* The JSON Lines writer's checks of a line orjson wrote (outputs/jsonl.py): whether
 * json.dumps would have written the same bytes, in one pass, and whether a record's null
 * tokens can only be None. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static PyObject *plain_json(PyObject *self, PyObject *args) {
    /* outputs/jsonl.dumps_line's test of an orjson line, in one pass: ASCII without DEL, and
       no "null" (unless nulls is true: the record has no NaN or infinity), "0.0000" or
       exponent (e-?[0-9]+ then , } or ]) where json.dumps could differ */
    PyObject *arg;
    int nulls = 0;
    if (!PyArg_ParseTuple(args, "O|p", &arg, &nulls))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const uint8_t *s = view.buf;
    size_t n = (size_t)view.len;
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        uint8_t c = s[i];
        if (c >= 0x7f)
            ok = 0;
        else if (c == 'n' && !nulls)
            ok = !(i + 4 <= n && memcmp(s + i, "null", 4) == 0);
        else if (c == '0')
            ok = !(i + 6 <= n && memcmp(s + i, "0.0000", 6) == 0);
        else if (c == 'e') {
            size_t j = i + 1;
            if (j < n && s[j] == '-')
                j++;
            size_t k = j;
            while (j < n && s[j] >= '0' && s[j] <= '9')
                j++;
            ok = !(j > k && j < n && (s[j] == ',' || s[j] == '}' || s[j] == ']'));
        }
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(ok);
}

static int all_finite(PyObject *o, int depth) {
    /* no float in o (dicts, lists and tuples walked) is NaN or infinite: 0 past 64 levels */
    if (PyFloat_CheckExact(o))
        return isfinite(PyFloat_AS_DOUBLE(o));
    if (depth > 64)
        return 0;
    if (PyDict_CheckExact(o)) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(o, &pos, &k, &v))
            if (!all_finite(v, depth + 1))
                return 0;
    } else if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        for (Py_ssize_t i = 0; i < n; i++)
            if (!all_finite(PySequence_Fast_GET_ITEM(o, i), depth + 1))
                return 0;
    }
    return 1;
}

static PyObject *finite_record(PyObject *self, PyObject *arg) {
    /* outputs/jsonl._finite: whether a line's null tokens can only be None */
    return PyBool_FromLong(all_finite(arg, 0));
}

static PyMethodDef methods[] = {
    {"plain_json", plain_json, METH_VARARGS, "Whether json.dumps would write these orjson bytes the same."},
    {"finite", finite_record, METH_O, "Whether no float in a record (its dicts, lists, tuples) is NaN or infinite."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "dcpinspect.outputs._jsonline", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__jsonline(void) { return PyModule_Create(&module); }
