/*
 * onnx_model.h - the loading layer of Kiln's ONNX frontend: an ONNX model
 * file turned into plain C structures that the op-mapping layer reads.
 *
 * The file is decoded with protobuf-c (code generated at build time from
 * Debian's onnx.proto), after a wire-format walk of our own that rejects
 * truncated or garbled bytes with a message naming the field and the byte
 * offset, and that bounds message nesting so a hostile file cannot exhaust
 * the stack inside protobuf-c.  The decoded message is then copied into the
 * structures below, which live in an arena owned by the OnnxModel and are
 * freed at once by onnx_model_free.  Large tensor payloads in raw_data are
 * not copied: their buffers are taken over from protobuf-c and freed with
 * the model, so a model costs its weights once, not twice.
 *
 * Every tensor's payload is normalised to contiguous little-endian bytes
 * whatever field it arrived in (raw_data, float_data, int32_data with the
 * spec's packing of small types, int64_data, double_data, uint64_data, or an
 * external file beside the model), and its size is checked against its
 * dims.  ONNX data types that Kiln's DType cannot express (STRING, COMPLEX64,
 * COMPLEX128) still load; asking for their DType is what fails, with a
 * message, so a model is rejected only for what it actually uses.
 *
 * Names: the default operator domain is "" (a model's "ai.onnx" is stored as
 * ""); a node input "" is an omitted optional input; a node without a name
 * gets "<op_type>_<index>".
 *
 * Files:
 *   onnx_load.c    model, graph, node, value-info decoding; the wire check
 *   onnx_tensor.c  data types, tensor payloads, external data, .pb tensors
 *   onnx_attr.c    attribute and graph lookup helpers
 */
#ifndef KILN_FRONTEND_ONNX_MODEL_H
#define KILN_FRONTEND_ONNX_MODEL_H

#include <stdbool.h>

#include "../../ir/ir.h"

/* ONNX TensorProto.DataType codes: name, code, bytes per element, the Kiln
 * DType (code, bits; bits 0 = none).  Listed once; the enum and the tables
 * in onnx_tensor.c come from this list. */
#define ONNX_DATA_TYPES(X)                                                     \
  X(UNDEFINED, 0, 0, 0, 0)                                                     \
  X(FLOAT, 1, 4, kDLFloat, 32)                                                 \
  X(UINT8, 2, 1, kDLUInt, 8)                                                   \
  X(INT8, 3, 1, kDLInt, 8)                                                     \
  X(UINT16, 4, 2, kDLUInt, 16)                                                 \
  X(INT16, 5, 2, kDLInt, 16)                                                   \
  X(INT32, 6, 4, kDLInt, 32)                                                   \
  X(INT64, 7, 8, kDLInt, 64)                                                   \
  X(STRING, 8, 0, 0, 0)                                                        \
  X(BOOL, 9, 1, kDLUInt, 1) /* one byte per element, 0 or 1 */                 \
  X(FLOAT16, 10, 2, kDLFloat, 16)                                              \
  X(DOUBLE, 11, 8, kDLFloat, 64)                                               \
  X(UINT32, 12, 4, kDLUInt, 32)                                                \
  X(UINT64, 13, 8, kDLUInt, 64)                                                \
  X(COMPLEX64, 14, 8, 0, 0)   /* (real, imag) float pairs */                   \
  X(COMPLEX128, 15, 16, 0, 0) /* (real, imag) double pairs */                  \
  X(BFLOAT16, 16, 2, 0, 0) /* bfloat16 and the 8-, 4- and 2-bit types of */   \
  X(FLOAT8E4M3FN, 17, 1, 0, 0) /* opset 19+: no C type; the importer carries */ \
  X(FLOAT8E4M3FNUZ, 18, 1, 0, 0) /* them in a wider one (onnx_dtype_carrier, */ \
  X(FLOAT8E5M2, 19, 1, 0, 0) /* ops/lowp.c) */                                 \
  X(FLOAT8E5M2FNUZ, 20, 1, 0, 0)                                               \
  X(UINT4, 21, 1, 0, 0) /* packed two a byte; one a byte once decoded */       \
  X(INT4, 22, 1, 0, 0)                                                         \
  X(FLOAT4E2M1, 23, 1, 0, 0)                                                   \
  X(FLOAT8E8M0, 24, 1, 0, 0)                                                   \
  X(UINT2, 25, 1, 0, 0) /* packed four a byte */                               \
  X(INT2, 26, 1, 0, 0)                                                         \
  X(FLOAT6E2M3, 27, 0, 0, 0)                                                   \
  X(FLOAT6E3M2, 28, 0, 0, 0)

typedef enum OnnxDataType {
#define X(n, code, size, dl, bits) ONNX_DT_##n = code,
  ONNX_DATA_TYPES(X)
#undef X
} OnnxDataType;

/* AttributeProto.AttributeType, with ONNX's numbers. */
#define ONNX_ATTR_TYPES(X)                                                     \
  X(UNDEFINED, 0)                                                              \
  X(FLOAT, 1)                                                                  \
  X(INT, 2)                                                                    \
  X(STRING, 3)                                                                 \
  X(TENSOR, 4)                                                                 \
  X(GRAPH, 5)                                                                  \
  X(FLOATS, 6)                                                                 \
  X(INTS, 7)                                                                   \
  X(STRINGS, 8)                                                                \
  X(TENSORS, 9)                                                                \
  X(GRAPHS, 10)                                                                \
  X(SPARSE_TENSOR, 11)                                                         \
  X(SPARSE_TENSORS, 12)                                                        \
  X(TYPE_PROTO, 13)                                                            \
  X(TYPE_PROTOS, 14)

typedef enum OnnxAttrType {
#define X(n, code) ONNX_ATTR_##n = code,
  ONNX_ATTR_TYPES(X)
#undef X
} OnnxAttrType;

typedef struct OnnxGraph OnnxGraph;

/* A dense tensor (initializer, attribute value, .pb file). */
typedef struct OnnxTensor {
  const char *name;      /* "" when unnamed */
  int elem_type;         /* OnnxDataType code as stored */
  bool has_dtype;        /* elem_type maps to a Kiln DType (see onnx_tensor_dtype) */
  DType dtype;           /* valid when has_dtype */
  int ndim;
  const int64_t *dims;   /* ndim entries, all >= 0 */
  int64_t numel;         /* product of dims (1 for a scalar) */
  size_t elem_size;      /* bytes per element; 0 for STRING */
  size_t nbytes;         /* numel * elem_size */
  const void *data;      /* nbytes of little-endian data, 16-byte aligned; NULL if 0 */
  const char **strings;  /* STRING tensors: numel byte strings (NUL-terminated) */
  const size_t *string_lens; /* their lengths (strings may hold NUL bytes) */
  bool external;         /* the payload came from a file beside the model */
} OnnxTensor;

typedef struct OnnxSparseTensor {
  OnnxTensor values;  /* [NNZ]; its name names the sparse tensor */
  OnnxTensor indices; /* int64 [NNZ] (linear) or [NNZ, rank] */
  int ndim;
  const int64_t *dims; /* the dense shape */
} OnnxSparseTensor;

typedef enum OnnxDimKind {
  ONNX_DIM_UNKNOWN, /* neither value nor name given */
  ONNX_DIM_VALUE,   /* a fixed size: value */
  ONNX_DIM_PARAM,   /* a symbolic size: param, e.g. "N" */
} OnnxDimKind;

typedef struct OnnxDim {
  OnnxDimKind kind;
  int64_t value;     /* ONNX_DIM_VALUE: >= 0 */
  const char *param; /* ONNX_DIM_PARAM */
} OnnxDim;

typedef enum OnnxTypeKind {
  ONNX_TYPE_UNDEFINED, /* no type given */
  ONNX_TYPE_TENSOR,
  ONNX_TYPE_SPARSE_TENSOR,
  ONNX_TYPE_SEQUENCE,
  ONNX_TYPE_MAP,
  ONNX_TYPE_OPTIONAL,
} OnnxTypeKind;

/* A TypeProto. */
typedef struct OnnxType {
  OnnxTypeKind kind;
  int elem_type;  /* (sparse) tensor: element type; map: key type */
  bool has_dtype; /* elem_type maps to a Kiln DType */
  DType dtype;
  int ndim;       /* (sparse) tensor: -1 when the rank is unknown (no shape) */
  const OnnxDim *dims;
  const struct OnnxType *elem; /* sequence, optional: element; map: value */
} OnnxType;

typedef struct OnnxValueInfo {
  const char *name;
  OnnxType type;
} OnnxValueInfo;

typedef struct OnnxAttr {
  const char *name;
  OnnxAttrType type;     /* inferred from the value set when the file omits it */
  const char *ref_attr_name; /* in function bodies: the caller's attribute; else NULL */
  float f;
  int64_t i;
  const char *s;         /* STRING: NUL-terminated; s_len bytes (may hold NUL) */
  size_t s_len;
  const OnnxTensor *t;
  const OnnxGraph *g;
  const OnnxSparseTensor *sparse_tensor;
  const OnnxType *tp;
  int n;                 /* entries of the list value matching type */
  const float *floats;
  const int64_t *ints;
  const char **strings;
  const size_t *string_lens;
  const OnnxTensor *tensors;
  const OnnxGraph *const *graphs;
  const OnnxSparseTensor *sparse_tensors;
  const OnnxType *type_protos;
} OnnxAttr;

typedef struct OnnxNode {
  int index;            /* position in its graph */
  const char *name;     /* never empty: "<op_type>_<index>" if the file has none */
  const char *op_type;  /* never empty */
  const char *domain;   /* "" for the default (ai.onnx) domain */
  int ninputs;
  const char **inputs;  /* "" = an omitted optional input */
  int noutputs;
  const char **outputs; /* "" = an unused optional output */
  int nattrs;
  const OnnxAttr *attrs;
} OnnxNode;

struct OnnxGraph {
  const char *name;
  int ninputs;
  const OnnxValueInfo *inputs; /* may include initializers (older exporters) */
  int noutputs;
  const OnnxValueInfo *outputs;
  int nvalue_info;
  const OnnxValueInfo *value_info;
  int ninitializers;
  const OnnxTensor *initializers;
  int nsparse_initializers;
  const OnnxSparseTensor *sparse_initializers;
  int nnodes;
  const OnnxNode *nodes; /* in file order (topological in a valid model) */
};

typedef struct OnnxOpset {
  const char *domain; /* "" for ai.onnx */
  int64_t version;
} OnnxOpset;

typedef struct OnnxStringPair {
  const char *key, *value;
} OnnxStringPair;

/* A model-local function (FunctionProto, IR version 8). */
typedef struct OnnxFunction {
  const char *name, *domain;
  int ninputs;
  const char **inputs;
  int noutputs;
  const char **outputs;
  int nattr_names;
  const char **attr_names;
  int nopsets;
  const OnnxOpset *opsets;
  int nnodes;
  const OnnxNode *nodes;
} OnnxFunction;

typedef struct OnnxModel {
  KArena *arena;         /* everything below lives here */
  const char *path;      /* the file, or "<memory>" */
  const char *base_dir;  /* where external data is looked up; NULL = nowhere */
  int64_t ir_version;
  const char *producer_name, *producer_version, *domain, *doc_string;
  int64_t model_version;
  int nopsets;
  const OnnxOpset *opsets;
  int nmetadata;
  const OnnxStringPair *metadata;
  int nfunctions;
  const OnnxFunction *functions;
  OnnxGraph *graph;      /* never NULL in a loaded model */
  PtrVec owned;          /* heap payloads taken over from protobuf-c */
} OnnxModel;

/* ===== onnx_load.c ===== */

/* Load a model file; external data is read from the file's folder.
 * NULL + error (naming the file, and the tensor / node / field) on failure. */
OnnxModel *onnx_model_load(const char *path);
/* Load a model from memory (the bytes are not kept).  External data is read
 * from base_dir; NULL base_dir makes a model that uses external data fail. */
OnnxModel *onnx_model_load_bytes(const void *data, size_t n, const char *base_dir);
void onnx_model_free(OnnxModel *m); /* accepts NULL */
/* The imported version of an operator set ("" and "ai.onnx" are the same);
 * -1 when the model does not import it. */
int64_t onnx_model_opset(const OnnxModel *m, const char *domain);

/* ===== onnx_tensor.c ===== */

/* "FLOAT", "INT64", ... ("UNKNOWN(<code>)" for codes ONNX 1.12 lacks). */
const char *onnx_data_type_name(int elem_type);
/* The Kiln DType of an ONNX data type; -1 + error for STRING, COMPLEX*, ... */
int onnx_dtype_from_onnx(int elem_type, DType *out);
/* The same without a message: false when there is no DType. */
bool onnx_dtype_lookup(int elem_type, DType *out);
/* The type Kiln carries a low-precision ONNX type in (ops/lowp.c):
 * bfloat16 and float8/float4 as their bit patterns in uint16/uint8,
 * int4/int2 in int8 and uint4/uint2 in uint8 as values, one element a
 * byte.  false for every other type. */
bool onnx_dtype_carrier(int elem_type, DType *out);
/* The tensor's DType (a carrier for the low-precision types), or -1 + an
 * error naming the tensor. */
int onnx_tensor_dtype(const OnnxTensor *t, DType *out);
/* A serialized TensorProto file (the node tests' input_0.pb), or its bytes.
 * Allocated from the calling thread's current arena.  NULL + error. */
OnnxTensor *onnx_tensor_load_pb(const char *path);
OnnxTensor *onnx_tensor_load_pb_bytes(const void *data, size_t n, const char *what);
/* A sequence or optional from a .pb file (onnx-data.proto's SequenceProto,
 * or OptionalProto when optional): present false for an empty optional;
 * is_sequence when it is (or holds) a sequence of the n tensors.  Only
 * tensor elements; NULL + error naming the file otherwise.  Allocated in
 * the current arena. */
typedef struct OnnxValue {
  const char *name; /* "" when unnamed */
  bool present, is_sequence;
  int n;
  OnnxTensor **tensors;
} OnnxValue;
OnnxValue *onnx_value_load_pb(const char *path, bool optional);

/* ===== onnx_attr.c ===== */

const char *onnx_attr_type_name(OnnxAttrType t); /* "INTS", ... */
const OnnxAttr *onnx_attr_find(const OnnxNode *n, const char *name);
bool onnx_attr_has(const OnnxNode *n, const char *name);
/* Typed lookups: the default (or NULL / *count 0) when the attribute is
 * absent or of another type; use onnx_attr_expect first to report the
 * latter as the model's mistake. */
int64_t onnx_attr_int(const OnnxNode *n, const char *name, int64_t dflt);
float onnx_attr_float(const OnnxNode *n, const char *name, float dflt);
const char *onnx_attr_string(const OnnxNode *n, const char *name, const char *dflt);
const int64_t *onnx_attr_ints(const OnnxNode *n, const char *name, int *count);
const float *onnx_attr_floats(const OnnxNode *n, const char *name, int *count);
const char **onnx_attr_strings(const OnnxNode *n, const char *name, int *count);
const OnnxTensor *onnx_attr_tensor(const OnnxNode *n, const char *name);
const OnnxGraph *onnx_attr_graph(const OnnxNode *n, const char *name);
/* 0 when the attribute is absent or has type t; else -1 and an error naming
 * the node, its op, the attribute, and the expected and actual types. */
int onnx_attr_expect(const OnnxNode *n, const char *name, OnnxAttrType t);

/* Lookups by name in one graph (linear: graphs are read once). */
const OnnxTensor *onnx_graph_initializer(const OnnxGraph *g, const char *name);
/* A value's declared type from inputs, outputs or value_info; NULL if none. */
const OnnxValueInfo *onnx_graph_value_info(const OnnxGraph *g, const char *name);

/* ===== internal: shared by the files of this folder ===== */

struct Onnx__TensorProto;
struct Onnx__TypeProto;

/* What decoding needs besides the message: where external data lives, and
 * the model whose heap payloads it takes over (NULL: copy into the arena). */
typedef struct OnnxDecoder {
  const char *base_dir;
  OnnxModel *model;
} OnnxDecoder;

/* Decode a TensorProto into t (allocating from the current arena).  The
 * error names the tensor; callers add where it sits. */
int onnx_decode_tensor(OnnxDecoder *d, struct Onnx__TensorProto *p, OnnxTensor *t);
/* Check a protobuf message's wire format against its descriptor before
 * protobuf-c sees it: field bounds, wire types, nesting depth.  -1 + error
 * naming the message path and byte offset. */
struct ProtobufCMessageDescriptor;
int onnx_wire_check(const void *data, size_t n, const struct ProtobufCMessageDescriptor *desc);

#endif
