/* The C kernel of ClusterEnv.observe(): the same arithmetic as the Python loop in env.py, on the same plans.
 *
 * fill_observation(plans, now, cycles, out) writes the lab's six features of every node, as float32, into `out`
 * (a writable, C-contiguous buffer of len(plans) * 6 floats, the array observe() returns). Each feature is computed in
 * C doubles in the order the lab's Python computes it: the download queue advanced one missing layer at a time from
 * max(now, download_free), then each feature divided by 100 (or 1000, precomputed in the plan), then cast to float.
 * IEEE double arithmetic gives the same bits as CPython's float operations, so the result is the Python path's
 * (and the lab's) bit for bit; tests/sim/layers/test_observe_kernel.py checks it against both. Build with contraction
 * off (-ffp-contract=off, pyproject.toml): a fused multiply-add would round differently.
 *
 * Why C: the Python loop costs about 0.25 us a node in the interpreter (a call to sum, five divisions, a tuple),
 * which left observe() late in an episode at 9x the lab transcription's speed against a goal of 10x. The plans are
 * env.py's `Plan` tuples; this file reads them and never changes them.
 *
 * The kernel takes only the common case: every plan shaped as env.py builds it and every number an exact float. On
 * anything else (an int frequency from a hand-made NodeSpec, a CPU frequency of 0.0, a plan a policy tampered with)
 * it returns False, possibly after writing the rows before that node, and observe() fills every row with its Python
 * loop, which is the definition and raises the error the lab's code would. Accepting exact floats only also means
 * no Python code (a __float__) runs while the kernel holds borrowed references into the plans.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

enum { PLAN_LATEST = 0, PLAN_INCREMENTS = 1, PLAN_MISSING_GB = 3, PLAN_STATE = 5, PLAN_SIZE = 6 };
enum { STATE_QUEUE = 0, STATE_SLOT = 1, STATE_FREQ = 2, STATE_SHARE = 3, STATE_SIZE = 4 };
enum { N_FEATURES = 6 };

/* 1 and the value when item is an exact float; 0 otherwise (the case the kernel leaves to Python). */
static inline int read_double(PyObject *item, double *value) {
    if (!PyFloat_CheckExact(item)) {
        return 0;
    }
    *value = PyFloat_AS_DOUBLE(item);
    return 1;
}

/* One node's row; 1 when written, 0 when the plan is not the common case (see the top of the file). */
static int fill_row(PyObject *plan, double now, double cycles, float *row) {
    if (!PyTuple_CheckExact(plan) || PyTuple_GET_SIZE(plan) != PLAN_SIZE) {
        return 0;
    }
    PyObject *increments = PyTuple_GET_ITEM(plan, PLAN_INCREMENTS);
    PyObject *state = PyTuple_GET_ITEM(plan, PLAN_STATE);
    if (!PyTuple_CheckExact(increments) || !PyList_CheckExact(state) || PyList_GET_SIZE(state) != STATE_SIZE) {
        return 0;
    }
    double latest, missing_gb, t_queue, slot_free, freq, share;
    if (!read_double(PyTuple_GET_ITEM(plan, PLAN_LATEST), &latest) ||
        !read_double(PyTuple_GET_ITEM(plan, PLAN_MISSING_GB), &missing_gb) ||
        !read_double(PyList_GET_ITEM(state, STATE_QUEUE), &t_queue) ||
        !read_double(PyList_GET_ITEM(state, STATE_SLOT), &slot_free) ||
        !read_double(PyList_GET_ITEM(state, STATE_FREQ), &freq) ||
        !read_double(PyList_GET_ITEM(state, STATE_SHARE), &share) || freq == 0.0) {
        return 0;  /* with freq 0.0 Python raises ZeroDivisionError where C would give inf */
    }
    /* env.py's _done(): with missing layers the queue runs from max(now, queue) and done is max(latest, queue end);
     * without, the layers are ready at max(latest, now). */
    double done, download;
    Py_ssize_t n_missing = PyTuple_GET_SIZE(increments);
    if (n_missing > 0) {
        done = t_queue > now ? t_queue : now;
        for (Py_ssize_t i = 0; i < n_missing; i++) {
            double step;
            if (!read_double(PyTuple_GET_ITEM(increments, i), &step)) {
                return 0;
            }
            done += step;
        }
        if (latest > done) {
            done = latest;
        }
        download = (done - now) / 100.0;
    } else if (latest > now) {
        done = latest;
        download = (done - now) / 100.0;
    } else {
        done = now;
        download = 0.0;
    }
    double compute = cycles / freq;
    double wait, start;
    if (slot_free > done) {
        wait = (slot_free - done) / 100.0;
        start = slot_free;
    } else {
        wait = 0.0;
        start = done;
    }
    row[0] = (float)missing_gb;
    row[1] = (float)download;
    row[2] = (float)wait;
    row[3] = (float)(compute / 100.0);
    row[4] = (float)((start + compute - now) / 100.0);
    row[5] = (float)share;
    return 1;
}

static PyObject *fill_observation(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "fill_observation(plans, now, cycles, out) takes 4 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *plans = args[0];
    double now, cycles;
    if (!PyList_CheckExact(plans) || !read_double(args[1], &now) || !read_double(args[2], &cycles)) {
        Py_RETURN_FALSE;
    }
    Py_buffer out;
    if (PyObject_GetBuffer(args[3], &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return NULL;
    }
    Py_ssize_t n_nodes = PyList_GET_SIZE(plans);
    Py_ssize_t needed = n_nodes * N_FEATURES * (Py_ssize_t)sizeof(float);
    if (out.format == NULL || strcmp(out.format, "f") != 0 || out.len != needed) {
        PyErr_Format(PyExc_ValueError, "out must hold %zd float32 (%zd nodes x %d features), got %zd bytes of format %s",
                     n_nodes * N_FEATURES, n_nodes, N_FEATURES, out.len, out.format == NULL ? "B" : out.format);
        PyBuffer_Release(&out);
        return NULL;
    }
    float *rows = out.buf;
    int filled = 1;
    for (Py_ssize_t n = 0; filled && n < n_nodes; n++) {
        filled = fill_row(PyList_GET_ITEM(plans, n), now, cycles, rows + n * N_FEATURES);
    }
    PyBuffer_Release(&out);
    return PyBool_FromLong(filled);
}

static PyMethodDef methods[] = {
    {"fill_observation", (PyCFunction)(void (*)(void))fill_observation, METH_FASTCALL,
     "fill_observation(plans, now, cycles, out): write observe()'s features of every plan into out (float32)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_observe",
    .m_doc = "The C kernel of ClusterEnv.observe() (see _observe.c).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__observe(void) { return PyModule_Create(&module); }
