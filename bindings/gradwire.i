/*
 * gradwire: one SWIG interface for every language (Python, Java).
 *
 * What it wraps is bindings/gwb.hpp, the C ABI recast as classes with
 * value-returning calls; the per-language files only say how a buffer, a
 * byte string and an error cross into that language:
 *   python.i  buffer protocol (numpy, bytes, bytearray, memoryview), GradwireError
 *   java.i    direct NIO buffers and primitive arrays, GradwireException, AutoCloseable
 * Everything declared in gwb.hpp is wrapped, so a call added there reaches
 * both languages without a change here; codecs are looked up at run time.
 */
%module gwnative

%{
#include "gwb.hpp"
%}

%include <stdint.i>
%include <std_string.i>

/* How buffers, bytes and errors cross into each language (and its names). */
#if defined(SWIGPYTHON)
%include "python.i"
#elif defined(SWIGJAVA)
%include "java.i"
#else
#error "gradwire.i: no typemaps for this language"
#endif

/* The public vocabulary: status codes, dtypes, codec ids, parameters,
 * SIMD targets, momentum kinds (gradwire_types.h holds only enums). */
#define GW_API
%include "gradwire_types.h"

/* The header's constants a transport needs (gradwire.h's macros). */
%constant unsigned int GW_FRAME_HEADER_SIZE = GW_FRAME_HEADER_SIZE;
%constant unsigned int GW_FRAME_FORMAT_VERSION = GW_FRAME_FORMAT_VERSION;
%constant unsigned int GW_FRAME_FLAG_ZSTD = GW_FRAME_FLAG_ZSTD;
%constant unsigned int GW_CLTK_NO_LEADER = GW_CLTK_NO_LEADER;
%constant unsigned int GW_CLTK_CYCLIC = GW_CLTK_CYCLIC;
%constant unsigned int GW_FUSION_MAX_LAYERS = GW_FUSION_MAX_LAYERS;


/* One exception path for every call: the bindings layer records the first
 * failure of a call in a thread-local slot; GWB_RAISE (per language) turns
 * it into the language's exception. A failed constructor also frees the
 * half-made object. */
%exception {
    gwb::clear_error();
    $action
    if (gwb::error_pending()) {
        GWB_RAISE;
    }
}
%define GWB_CONSTRUCTOR(Class)
%exception gwb::Class::Class {
    gwb::clear_error();
    $action
    if (gwb::error_pending()) {
        delete result;
        GWB_RAISE;
    }
}
%enddef
GWB_CONSTRUCTOR(CodecSpec)

/* The handle classes of gwb.hpp (GWB_HANDLE), one line each: the
 * constructor's exception path and the language's own handle parts
 * (GWB_LANGUAGE_HANDLE: python.i, java.i). */
%define GWB_HANDLE_CLASS(Class)
GWB_CONSTRUCTOR(Class)
GWB_LANGUAGE_HANDLE(Class)
%enddef
GWB_HANDLE_CLASS(Worker)
GWB_HANDLE_CLASS(Server)
GWB_HANDLE_CLASS(Cltk)
GWB_HANDLE_CLASS(LagsLayer)
GWB_HANDLE_CLASS(AsylpgMaster)
GWB_HANDLE_CLASS(AsylpgWorker)
GWB_HANDLE_CLASS(Fusion)

%newobject gwb::CodecSpec::from_frame;
/* Internals of the layer, not API. */
%ignore gwb::clear_error;
%ignore gwb::error_pending;
%ignore gwb::error_status;
%ignore gwb::error_message;
%ignore gwb::CodecSpec::raw;
%ignore gwb::CodecSpec::operator=;
%ignore gwb::In;
%ignore gwb::Out;
%ignore gwb::Bytes;
%ignore gwb::U32List;
%ignore gwb::U64List;
%ignore gwb::Kind;

%include "gwb.hpp"
