/* The JSON Lines writer's check of a line orjson wrote (outputs/jsonl.py): whether
 * json.dumps would have written the same bytes, in one pass. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *plain_json(PyObject *self, PyObject *arg) {
    /* outputs/jsonl.dumps_line's test of an orjson line, in one pass: ASCII without DEL, and
       no "null", "0.0000" or exponent (e-?[0-9]+ then , } or ]) where json.dumps could differ */
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
        else if (c == 'n')
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

static PyMethodDef methods[] = {
    {"plain_json", plain_json, METH_O, "Whether json.dumps would write these orjson bytes the same."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "dcpinspect.outputs._jsonline", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__jsonline(void) { return PyModule_Create(&module); }
