/*
 * Python typemaps for gradwire.i.
 *
 * Buffers: anything with the buffer protocol (numpy arrays, bytes, bytearray,
 * memoryview, array.array), C-contiguous, borrowed for the call (zero copy);
 * outputs must be writable. None is "absent" where a call allows it. The
 * element kind comes from the buffer's format, so a float64 array handed in
 * where float32 is expected raises instead of being reinterpreted. torch
 * tensors go through gradwire/_buffers.py (Tensor.numpy() shares memory).
 *
 * Errors: GradwireError (a RuntimeError) with .status (the code), .name
 * ("GW_ERR_FRAME_CHECKSUM") and a message naming the C call.
 */
%feature("compactdefaultargs");
%feature("kwargs");

%{
static PyObject *gwb_error_type = NULL;

static void gwb_raise(void) {
    PyObject *e = PyObject_CallFunction(gwb_error_type, "s", gwb::error_message());
    if (!e) return;
    PyObject *status = PyLong_FromLong(gwb::error_status());
    PyObject *name = PyUnicode_FromString(gw_status_name((gw_status)gwb::error_status()));
    if (status && name) {
        PyObject_SetAttrString(e, "status", status);
        PyObject_SetAttrString(e, "name", name);
    }
    Py_XDECREF(status);
    Py_XDECREF(name);
    PyErr_SetObject(gwb_error_type, e);
    Py_DECREF(e);
}

/* Element kind of a buffer from its struct-module format string. */
static gwb::Kind gwb_kind(const Py_buffer *v) {
    const char *f = v->format ? v->format : "B";
    if (*f == '@' || *f == '=' || *f == '<') f++;
    else if (*f == '>' || *f == '!') return gwb::KIND_OTHER; /* big-endian elements */
    if (f[0] == 0 || f[1] != 0) return gwb::KIND_OTHER;       /* structs, arrays */
    switch (f[0]) {
        case 'B': case 'b': case 'c': return gwb::KIND_BYTES;
        case 'f': return gwb::KIND_F32;
        case 'd': return gwb::KIND_F64;
        case 'e': return gwb::KIND_F16;
        case 'H': case 'h': return gwb::KIND_U16;
        case 'I': case 'L': case 'Q': case 'N':
            return v->itemsize == 4 ? gwb::KIND_U32 : v->itemsize == 8 ? gwb::KIND_U64 : gwb::KIND_OTHER;
        case 'i': case 'l': case 'q': case 'n':
            return v->itemsize == 4 ? gwb::KIND_I32 : v->itemsize == 8 ? gwb::KIND_I64 : gwb::KIND_OTHER;
        default: return gwb::KIND_OTHER;
    }
}

/* Borrow obj's memory; 0 on success, -1 with a Python exception set. */
static int gwb_get_buffer(PyObject *obj, Py_buffer *view, int writable, const char *arg) {
    if (!PyObject_CheckBuffer(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: expected a buffer (numpy array, bytes, bytearray, memoryview), got %.200s",
                     arg, Py_TYPE(obj)->tp_name);
        return -1;
    }
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) != 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *why = value ? PyObject_Str(value) : NULL;
        PyErr_Format(PyExc_ValueError, "%s: %s buffer required (%s)", arg,
                     writable ? "a writable C-contiguous" : "a C-contiguous",
                     why ? PyUnicode_AsUTF8(why) : "not available");
        Py_XDECREF(why);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return -1;
    }
    return 0;
}
%}

%init %{
    gwb_error_type = PyErr_NewExceptionWithDoc(
        "gradwire.GradwireError",
        "A gradwire call failed: .status is the gw_status code, .name its symbol.",
        PyExc_RuntimeError, NULL);
    PyDict_SetItemString(d, "GradwireError", gwb_error_type);
%}

#define GWB_RAISE do { gwb_raise(); SWIG_fail; } while (0)

/* ---- gwb::In: read-only buffer, or None (absent) ---- */
%typemap(arginit) gwb::In "view$argnum.obj = NULL;"
%typemap(in) gwb::In (Py_buffer view) {
    if ($input != Py_None) {
        if (gwb_get_buffer($input, &view, 0, "$1_name") != 0) SWIG_fail;
        $1.data = view.buf;
        $1.size = (size_t)view.len;
        $1.kind = gwb_kind(&view);
        $1.present = true;
    }
}
%typemap(freearg) gwb::In "if (view$argnum.obj) PyBuffer_Release(&view$argnum);"
%typemap(typecheck, precedence=SWIG_TYPECHECK_POINTER) gwb::In
    "$1 = ($input == Py_None || PyObject_CheckBuffer($input)) ? 1 : 0;"

/* ---- gwb::InList: a sequence of read-only buffers (None items are absent) ---- */
%typemap(arginit) const gwb::InList & "views$argnum = NULL; nviews$argnum = 0;"
%typemap(in) const gwb::InList & (gwb::InList list, Py_buffer *views, Py_ssize_t nviews) {
    PyObject *seq = PySequence_Fast($input, "$1_name: expected a sequence of buffers");
    if (!seq) SWIG_fail;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    views = (Py_buffer *)PyMem_Calloc(count ? (size_t)count : 1, sizeof(Py_buffer));
    if (!views) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        SWIG_fail;
    }
    list.items.resize((size_t)count);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (item == Py_None) continue;
        if (gwb_get_buffer(item, &views[i], 0, "$1_name[i]") != 0) {
            Py_DECREF(seq);
            SWIG_fail;
        }
        nviews = i + 1;
        list.items[(size_t)i].data = views[i].buf;
        list.items[(size_t)i].size = (size_t)views[i].len;
        list.items[(size_t)i].kind = gwb_kind(&views[i]);
        list.items[(size_t)i].present = true;
    }
    Py_DECREF(seq);
    $1 = &list;
}
%typemap(freearg) const gwb::InList & {
    for (Py_ssize_t i = 0; i < nviews$argnum; i++)
        if (views$argnum[i].obj) PyBuffer_Release(&views$argnum[i]);
    PyMem_Free(views$argnum);
}
%typemap(typecheck, precedence=SWIG_TYPECHECK_POINTER) const gwb::InList &
    "$1 = PySequence_Check($input) ? 1 : 0;"

/* ---- gwb::Out: writable buffer, or None (absent) ---- */
%typemap(arginit) gwb::Out "view$argnum.obj = NULL;"
%typemap(in) gwb::Out (Py_buffer view) {
    if ($input != Py_None) {
        if (gwb_get_buffer($input, &view, 1, "$1_name") != 0) SWIG_fail;
        $1.data = view.buf;
        $1.size = (size_t)view.len;
        $1.kind = gwb_kind(&view);
        $1.present = true;
    }
}
%typemap(freearg) gwb::Out "if (view$argnum.obj) PyBuffer_Release(&view$argnum);"

/* ---- results ---- */
%typemap(out) gwb::Bytes
    "$result = PyBytes_FromStringAndSize((const char *)$1.data.data(), (Py_ssize_t)$1.data.size());"
%typemap(out) gwb::U32List {
    $result = PyList_New((Py_ssize_t)$1.data.size());
    for (size_t i = 0; $result && i < $1.data.size(); i++)
        PyList_SET_ITEM($result, (Py_ssize_t)i, PyLong_FromUnsignedLong($1.data[i]));
}
%typemap(out) gwb::U64List {
    $result = PyList_New((Py_ssize_t)$1.data.size());
    for (size_t i = 0; $result && i < $1.data.size(); i++)
        PyList_SET_ITEM($result, (Py_ssize_t)i, PyLong_FromUnsignedLongLong($1.data[i]));
}

/* Per handle class (gradwire.i's GWB_HANDLE_CLASS list): nothing beyond the
 * common parts; gradwire/__init__.py's _Handle gives the Python face. */
%define GWB_LANGUAGE_HANDLE(Class)
%enddef
