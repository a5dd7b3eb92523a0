/*
 * Java typemaps for gradwire.i (package org.gradwire, class Gradwire).
 *
 * Buffers (gwb::In / gwb::Out) are declared as Object and accept, zero-copy:
 *   direct NIO buffers  ByteBuffer (bytes), ShortBuffer (f16/bf16 bits),
 *                       FloatBuffer, IntBuffer, LongBuffer, DoubleBuffer:
 *                       the elements from position() to limit(), in native order
 *   primitive arrays    byte[], short[], float[], int[], long[], double[]
 *                       (pinned with Get<T>ArrayElements; writes are copied back)
 *   null                "absent" where a call allows it.
 * Anything else, a heap ByteBuffer, a non-native byte order or a read-only
 * buffer handed as output is an IllegalArgumentException.
 *
 * Errors are org.gradwire.GradwireException (getStatus(), getStatusName()).
 * Handles implement AutoCloseable; a call on a closed handle throws.
 * uint64_t and size_t are Java long (values >= 2^63 read as negative: seeds
 * keep their bits); uint32_t is long.
 */
%include <enums.swg>
/* Constants take their values from the library at class load (no copies of them). */
%javaconst(0);

%apply long long { uint64_t, size_t };
%apply long long { const uint64_t &, const size_t & };

/* Enum types and items under Java names: Codec.TOPK, Status.ERR_SEQUENCE. */
%rename(Status) gw_status;
%rename(DType) gw_dtype;
%rename(Codec) gw_codec_id;
%rename(CodecFlag) gw_codec_flag;
%rename(Param) gw_param;
%rename(SimdTarget) gw_simd_target;
%rename(Momentum) gw_momentum;
%rename(AsylpgVariant) gw_asylpg_variant;
/* C enum items share one scope: the two names that would collide get longer
 * ones (DType.BF16 / Codec.BF16, Param.THRESHOLD / Codec.THRESHOLD). */
%rename(FLOAT32) GW_DTYPE_F32;
%rename(FLOAT16) GW_DTYPE_F16;
%rename(BFLOAT16) GW_DTYPE_BF16;
%rename(THRESHOLD_VALUE) GW_PARAM_THRESHOLD;
%rename("%(regex:/^GW_(DTYPE|CODEC|PARAM|SIMD|MOMENTUM|ASYLPG)_(.*)$/\\2/)s", %$isenumitem) "";
%rename("%(regex:/^GW_(OK|ERR_.*)$/\\1/)s", %$isenumitem) "";

/* Java spelling: stepCount(), frameBound(), FrameInfo.getFrameSize(). */
%rename("%(lowercamelcase)s", %$isfunction) "";
%rename("%(lowercamelcase)s", %$isvariable) "";

%pragma(java) jniclasscode=%{
  static {
    NativeLoader.load();
  }
%}

%{
static void gwb_java_raise(JNIEnv *jenv) {
    jclass cls = jenv->FindClass("org/gradwire/GradwireException");
    if (!cls) return; /* NoClassDefFoundError is pending */
    jmethodID ctor = jenv->GetMethodID(cls, "<init>", "(ILjava/lang/String;Ljava/lang/String;)V");
    if (!ctor) return;
    jstring name = jenv->NewStringUTF(gw_status_name((gw_status)gwb::error_status()));
    jstring msg = jenv->NewStringUTF(gwb::error_message());
    jobject e = jenv->NewObject(cls, ctor, (jint)gwb::error_status(), name, msg);
    if (e) jenv->Throw((jthrowable)e);
}

static void gwb_java_illegal(JNIEnv *jenv, const char *what) {
    jclass cls = jenv->FindClass("java/lang/IllegalArgumentException");
    if (cls) jenv->ThrowNew(cls, what);
}

/* A borrowed Java buffer or array and how to give it back. */
struct gwb_jview {
    jobject array = nullptr; /* a primitive array to release, or null */
    void *elems = nullptr;
    char type = 0;
};

static bool gwb_is(JNIEnv *jenv, jobject o, const char *cls) {
    jclass c = jenv->FindClass(cls);
    return c && jenv->IsInstanceOf(o, c);
}

/* Fill data/size/kind from o; false with a Java exception pending. */
static bool gwb_java_view(JNIEnv *jenv, jobject o, bool writable, gwb_jview *v, void **data,
                          size_t *size, gwb::Kind *kind) {
    static const struct { const char *cls; char type; size_t width; gwb::Kind kind; } arrays[] = {
        {"[B", 'B', 1, gwb::KIND_BYTES}, {"[S", 'S', 2, gwb::KIND_U16},
        {"[F", 'F', 4, gwb::KIND_F32},   {"[I", 'I', 4, gwb::KIND_U32},
        {"[J", 'J', 8, gwb::KIND_U64},   {"[D", 'D', 8, gwb::KIND_F64}};
    for (const auto &a : arrays) {
        if (!gwb_is(jenv, o, a.cls)) continue;
        jsize len = jenv->GetArrayLength((jarray)o);
        void *p = nullptr;
        switch (a.type) {
            case 'B': p = jenv->GetByteArrayElements((jbyteArray)o, nullptr); break;
            case 'S': p = jenv->GetShortArrayElements((jshortArray)o, nullptr); break;
            case 'F': p = jenv->GetFloatArrayElements((jfloatArray)o, nullptr); break;
            case 'I': p = jenv->GetIntArrayElements((jintArray)o, nullptr); break;
            case 'J': p = jenv->GetLongArrayElements((jlongArray)o, nullptr); break;
            case 'D': p = jenv->GetDoubleArrayElements((jdoubleArray)o, nullptr); break;
        }
        if (!p) return false;
        v->array = o;
        v->elems = p;
        v->type = a.type;
        *data = p;
        *size = (size_t)len * a.width;
        *kind = a.kind;
        return true;
    }
    static const struct { const char *cls; size_t width; gwb::Kind kind; } buffers[] = {
        {"java/nio/ByteBuffer", 1, gwb::KIND_BYTES}, {"java/nio/ShortBuffer", 2, gwb::KIND_U16},
        {"java/nio/FloatBuffer", 4, gwb::KIND_F32},  {"java/nio/IntBuffer", 4, gwb::KIND_U32},
        {"java/nio/LongBuffer", 8, gwb::KIND_U64},   {"java/nio/DoubleBuffer", 8, gwb::KIND_F64}};
    for (const auto &b : buffers) {
        if (!gwb_is(jenv, o, b.cls)) continue;
        jclass c = jenv->GetObjectClass(o);
        char *base = (char *)jenv->GetDirectBufferAddress(o);
        if (!base) {
            gwb_java_illegal(jenv, "buffers must be direct (ByteBuffer.allocateDirect)");
            return false;
        }
        if (writable && jenv->CallBooleanMethod(o, jenv->GetMethodID(c, "isReadOnly", "()Z"))) {
            gwb_java_illegal(jenv, "an output buffer must not be read-only");
            return false;
        }
        if (b.width > 1) {
            jobject order = jenv->CallObjectMethod(o, jenv->GetMethodID(c, "order", "()Ljava/nio/ByteOrder;"));
            jclass bo = jenv->FindClass("java/nio/ByteOrder");
            jobject native = jenv->CallStaticObjectMethod(
                bo, jenv->GetStaticMethodID(bo, "nativeOrder", "()Ljava/nio/ByteOrder;"));
            if (!jenv->IsSameObject(order, native)) {
                gwb_java_illegal(jenv, "buffers must be in native byte order (order(ByteOrder.nativeOrder()))");
                return false;
            }
        }
        jint pos = jenv->CallIntMethod(o, jenv->GetMethodID(c, "position", "()I"));
        jint lim = jenv->CallIntMethod(o, jenv->GetMethodID(c, "limit", "()I"));
        *data = base + (size_t)pos * b.width;
        *size = (size_t)(lim - pos) * b.width;
        *kind = b.kind;
        return true;
    }
    gwb_java_illegal(jenv, "expected a direct NIO buffer or a byte[], short[], float[], int[], long[] or double[]");
    return false;
}

static void gwb_java_release(JNIEnv *jenv, gwb_jview *v, bool copy_back) {
    if (!v->array) return;
    jint mode = copy_back ? 0 : JNI_ABORT;
    switch (v->type) {
        case 'B': jenv->ReleaseByteArrayElements((jbyteArray)v->array, (jbyte *)v->elems, mode); break;
        case 'S': jenv->ReleaseShortArrayElements((jshortArray)v->array, (jshort *)v->elems, mode); break;
        case 'F': jenv->ReleaseFloatArrayElements((jfloatArray)v->array, (jfloat *)v->elems, mode); break;
        case 'I': jenv->ReleaseIntArrayElements((jintArray)v->array, (jint *)v->elems, mode); break;
        case 'J': jenv->ReleaseLongArrayElements((jlongArray)v->array, (jlong *)v->elems, mode); break;
        case 'D': jenv->ReleaseDoubleArrayElements((jdoubleArray)v->array, (jdouble *)v->elems, mode); break;
    }
    v->array = nullptr;
}
%}

#define GWB_RAISE do { gwb_java_raise(jenv); return $null; } while (0)

/* A call on a closed (deleted) proxy would pass a null this: throw instead. */
%typemap(check) SWIGTYPE *self %{
    if (!$1) {
        jclass cls = jenv->FindClass("java/lang/IllegalStateException");
        if (cls) jenv->ThrowNew(cls, "gradwire: the object is closed");
        return $null;
    }
%}

/* ---- gwb::In / gwb::Out ---- */
%typemap(jni) gwb::In, gwb::Out "jobject"
%typemap(jtype) gwb::In, gwb::Out "Object"
%typemap(jstype) gwb::In, gwb::Out "Object"
%typemap(javain) gwb::In, gwb::Out "$javainput"
%typemap(in) gwb::In (gwb_jview view) {
    if ($input) {
        void *d = nullptr;
        if (!gwb_java_view(jenv, $input, false, &view, &d, &$1.size, &$1.kind)) return $null;
        $1.data = d;
        $1.present = true;
    }
}
%typemap(freearg) gwb::In "gwb_java_release(jenv, &view$argnum, false);"
%typemap(in) gwb::Out (gwb_jview view) {
    if ($input) {
        if (!gwb_java_view(jenv, $input, true, &view, &$1.data, &$1.size, &$1.kind)) return $null;
        $1.present = true;
    }
}
%typemap(freearg) gwb::Out "gwb_java_release(jenv, &view$argnum, true);"

/* ---- gwb::InList: Object[] of buffers or arrays (null items are absent) ---- */
%typemap(jni) const gwb::InList & "jobjectArray"
%typemap(jtype) const gwb::InList & "Object[]"
%typemap(jstype) const gwb::InList & "Object[]"
%typemap(javain) const gwb::InList & "$javainput"
%typemap(in) const gwb::InList & (gwb::InList list, std::vector<gwb_jview> views) {
    if (!$input) {
        gwb_java_illegal(jenv, "frames must not be null");
        return $null;
    }
    jsize count = jenv->GetArrayLength($input);
    list.items.resize((size_t)count);
    views.resize((size_t)count);
    for (jsize i = 0; i < count; i++) {
        jobject item = jenv->GetObjectArrayElement($input, i);
        if (jenv->ExceptionCheck()) return $null;
        if (!item) continue;
        void *d = nullptr;
        gwb::In &in = list.items[(size_t)i];
        if (!gwb_java_view(jenv, item, false, &views[(size_t)i], &d, &in.size, &in.kind)) {
            for (auto &v : views) gwb_java_release(jenv, &v, false);
            return $null;
        }
        in.data = d;
        in.present = true;
    }
    $1 = &list;
}
%typemap(freearg) const gwb::InList & "for (auto &v : views$argnum) gwb_java_release(jenv, &v, false);"

/* ---- results ---- */
%typemap(jni) gwb::Bytes "jbyteArray"
%typemap(jtype) gwb::Bytes "byte[]"
%typemap(jstype) gwb::Bytes "byte[]"
%typemap(javaout) gwb::Bytes { return $jnicall; }
%typemap(out) gwb::Bytes {
    $result = jenv->NewByteArray((jsize)$1.data.size());
    if ($result) jenv->SetByteArrayRegion($result, 0, (jsize)$1.data.size(), (const jbyte *)$1.data.data());
}
%typemap(jni) gwb::U32List "jintArray"
%typemap(jtype) gwb::U32List "int[]"
%typemap(jstype) gwb::U32List "int[]"
%typemap(javaout) gwb::U32List { return $jnicall; }
%typemap(out) gwb::U32List {
    $result = jenv->NewIntArray((jsize)$1.data.size());
    if ($result) jenv->SetIntArrayRegion($result, 0, (jsize)$1.data.size(), (const jint *)$1.data.data());
}
%typemap(jni) gwb::U64List "jlongArray"
%typemap(jtype) gwb::U64List "long[]"
%typemap(jstype) gwb::U64List "long[]"
%typemap(javaout) gwb::U64List { return $jnicall; }
%typemap(out) gwb::U64List {
    $result = jenv->NewLongArray((jsize)$1.data.size());
    if ($result) jenv->SetLongArrayRegion($result, 0, (jsize)$1.data.size(), (const jlong *)$1.data.data());
}

/* ---- handles: AutoCloseable ---- */
/* Per handle class (gradwire.i's GWB_HANDLE_CLASS list): close() frees the
 * native object at once (the C++ close() frees the handle, delete() the
 * wrapper); later calls throw IllegalStateException. */
%define GWB_LANGUAGE_HANDLE(Class)
%typemap(javainterfaces) gwb::Class "AutoCloseable"
%rename(closeHandle) gwb::Class::close;
%typemap(javacode) gwb::Class %{
  @Override
  public void close() {
    if (swigCPtr != 0) closeHandle();
    delete();
  }
%}
%enddef
%typemap(javainterfaces) gwb::CodecSpec "AutoCloseable"
%typemap(javacode) gwb::CodecSpec %{
  @Override
  public void close() {
    delete();
  }
%}
