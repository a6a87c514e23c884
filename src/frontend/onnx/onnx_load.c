/*
 * onnx_load.c - an ONNX model file to an OnnxModel.
 *
 * Three steps.  First a wire-format walk (onnx_wire_check) driven by
 * protobuf-c's generated descriptors: protobuf-c says only "no" to bad
 * bytes, and recurses without a depth limit, so we check field bounds, wire
 * types and nesting ourselves and name the field path and byte offset of the
 * first problem.  Then protobuf-c unpacks the message (with a malloc-backed
 * allocator, so tensor payload buffers can be taken over and freed by the
 * model).  Last, the message is copied into OnnxModel structures in the
 * model's arena, checking what the rest of Kiln would otherwise have to:
 * every pointer and repeated field of the message may be NULL or empty, so
 * each is guarded; names and types that must be present are; sizes agree.
 * Each failure leaves one message, outermost context first:
 * "m.onnx: graph 'g': node 3 'conv_3' (Conv): attribute 'pads': ...".
 */
#include "onnx_model.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx.pb-c.h"

/* ---- the wire check ---- */

/* Deeper than any real model (a subgraph costs three levels: graph, node,
 * attribute), shallow enough for protobuf-c's recursion. */
#define MAX_WIRE_DEPTH 100

static int read_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *out) {
  uint64_t v = 0;
  for (int i = 0; i < 10; i++) {
    if (*pos >= n) return -1;
    uint8_t b = p[(*pos)++];
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *out = v;
      return 0;
    }
  }
  return -1;
}

static int wire_type_of(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_BOOL: case PROTOBUF_C_TYPE_ENUM:
    return 0;
  case PROTOBUF_C_TYPE_SFIXED64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE:
    return 1;
  case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_BYTES: case PROTOBUF_C_TYPE_MESSAGE:
    return 2;
  case PROTOBUF_C_TYPE_SFIXED32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_FLOAT:
    return 5;
  }
  return -1;
}

/* The contents of a packed repeated field: whole elements only. */
static int check_packed(const uint8_t *p, size_t start, size_t end, int wt) {
  if (wt == 1) return (end - start) % 8 ? -1 : 0;
  if (wt == 5) return (end - start) % 4 ? -1 : 0;
  size_t pos = start;
  uint64_t v;
  while (pos < end)
    if (read_varint(p, end, &pos, &v)) return -1;
  return 0;
}

static int wire_walk(const uint8_t *p, size_t start, size_t end,
                     const ProtobufCMessageDescriptor *desc, int depth) {
  if (depth > MAX_WIRE_DEPTH)
    return kiln_set_error("byte %zu: messages nested more than %d deep", start, MAX_WIRE_DEPTH);
  size_t pos = start;
  while (pos < end) {
    size_t at = pos;
    uint64_t tag, v;
    if (read_varint(p, end, &pos, &tag))
      return kiln_set_error("%s at byte %zu: a field tag runs past the end of its data",
                            desc->short_name, at);
    uint64_t id = tag >> 3;
    int wt = (int)(tag & 7);
    if (id == 0 || id > 0x1fffffff)
      return kiln_set_error("%s at byte %zu: invalid field number %llu", desc->short_name, at,
                            (unsigned long long)id);
    const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(desc, (unsigned)id);
    const char *fname = fd ? fd->name : "(unknown)";
    size_t len = 0;
    switch (wt) {
    case 0:
      if (read_varint(p, end, &pos, &v))
        return kiln_set_error("%s.%s (field %llu) at byte %zu: a varint runs past the end",
                              desc->short_name, fname, (unsigned long long)id, at);
      break;
    case 1: len = 8; break;
    case 5: len = 4; break;
    case 2:
      if (read_varint(p, end, &pos, &v))
        return kiln_set_error("%s.%s (field %llu) at byte %zu: its length runs past the end",
                              desc->short_name, fname, (unsigned long long)id, at);
      if (v > end - pos)
        return kiln_set_error("%s.%s (field %llu) at byte %zu: length %llu runs past the end "
                              "of the data (%zu bytes left): truncated or not a protobuf",
                              desc->short_name, fname, (unsigned long long)id, at,
                              (unsigned long long)v, end - pos);
      len = (size_t)v;
      break;
    default:
      return kiln_set_error("%s at byte %zu: wire type %d (field %llu) is not used by ONNX: "
                            "not a protobuf of this kind", desc->short_name, at, wt,
                            (unsigned long long)id);
    }
    if (len > end - pos)
      return kiln_set_error("%s.%s (field %llu) at byte %zu: runs past the end of the data",
                            desc->short_name, fname, (unsigned long long)id, at);
    if (fd) {
      int want = wire_type_of(fd->type);
      bool packable = fd->label == PROTOBUF_C_LABEL_REPEATED && want != 2;
      if (wt != want && !(packable && wt == 2))
        return kiln_set_error("%s.%s (field %llu) at byte %zu: wire type %d, expected %d",
                              desc->short_name, fname, (unsigned long long)id, at, wt, want);
      if (packable && wt == 2 && check_packed(p, pos, pos + len, want))
        return kiln_set_error("%s.%s (field %llu) at byte %zu: packed values do not fill "
                              "their %zu bytes", desc->short_name, fname,
                              (unsigned long long)id, at, len);
      if (fd->type == PROTOBUF_C_TYPE_MESSAGE &&
          wire_walk(p, pos, pos + len, fd->descriptor, depth + 1))
        return kiln_error_context("%s.%s", desc->short_name, fname);
    }
    pos += len;
  }
  return 0;
}

int onnx_wire_check(const void *data, size_t n, const ProtobufCMessageDescriptor *desc) {
  if (n && !data) return kiln_set_error("no data");
  return wire_walk(data, 0, n, desc, 0);
}

/* ---- protobuf-c allocation ---- */

/* malloc/free, named explicitly: payload buffers taken over from a message
 * are later released with free(). */
static void *pb_alloc(void *ctx, size_t n) { return malloc(n ? n : 1); }
static void pb_free(void *ctx, void *p) { free(p); }
static ProtobufCAllocator pb_allocator = {pb_alloc, pb_free, NULL};

/* ---- decoding ---- */

static const char *str(const char *s) { return s ? kstrdup(s) : ""; }

/* "ai.onnx" and "" are the same domain; keep one spelling. */
static const char *domain_str(const char *s) {
  if (!s || !strcmp(s, "ai.onnx")) return "";
  return kstrdup(s);
}

static int decode_graph(OnnxDecoder *d, const Onnx__GraphProto *p, OnnxGraph *g);

static int decode_dims(const Onnx__TensorShapeProto *s, OnnxType *t) {
  if (!s) {
    t->ndim = -1;
    return 0;
  }
  if (s->n_dim > 64) return kiln_set_error("%zu dims (at most 64)", s->n_dim);
  t->ndim = (int)s->n_dim;
  OnnxDim *dims = KNEWN(OnnxDim, t->ndim + 1);
  for (int i = 0; i < t->ndim; i++) {
    const Onnx__TensorShapeProto__Dimension *dp = s->dim[i];
    dims[i].kind = ONNX_DIM_UNKNOWN;
    if (!dp) continue;
    if (dp->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (dp->dim_value == -1) continue; /* some exporters write an open dimension as -1 */
      if (dp->dim_value < 0)
        return kiln_set_error("dim %d is %lld (negative)", i, (long long)dp->dim_value);
      dims[i].kind = ONNX_DIM_VALUE;
      dims[i].value = dp->dim_value;
    } else if (dp->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
               dp->dim_param && *dp->dim_param) {
      dims[i].kind = ONNX_DIM_PARAM;
      dims[i].param = kstrdup(dp->dim_param);
    }
  }
  t->dims = dims;
  return 0;
}

static void set_elem(OnnxType *t, bool has, int32_t code) {
  t->elem_type = has ? code : ONNX_DT_UNDEFINED;
  t->has_dtype = onnx_dtype_lookup(t->elem_type, &t->dtype);
}

/* Nesting is bounded by the wire check, so this recursion is too. */
static int decode_type(const Onnx__TypeProto *p, OnnxType *t) {
  memset(t, 0, sizeof *t);
  t->ndim = -1;
  if (!p) return 0;
  const Onnx__TypeProto *elem = NULL;
  switch (p->value_case) {
  case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
    t->kind = ONNX_TYPE_TENSOR;
    if (!p->tensor_type) return 0;
    set_elem(t, p->tensor_type->has_elem_type, p->tensor_type->elem_type);
    return decode_dims(p->tensor_type->shape, t);
  case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
    t->kind = ONNX_TYPE_SPARSE_TENSOR;
    if (!p->sparse_tensor_type) return 0;
    set_elem(t, p->sparse_tensor_type->has_elem_type, p->sparse_tensor_type->elem_type);
    return decode_dims(p->sparse_tensor_type->shape, t);
  case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
    t->kind = ONNX_TYPE_SEQUENCE;
    elem = p->sequence_type ? p->sequence_type->elem_type : NULL;
    break;
  case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
    t->kind = ONNX_TYPE_OPTIONAL;
    elem = p->optional_type ? p->optional_type->elem_type : NULL;
    break;
  case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
    t->kind = ONNX_TYPE_MAP;
    if (!p->map_type) return 0;
    set_elem(t, p->map_type->has_key_type, p->map_type->key_type);
    elem = p->map_type->value_type;
    break;
  default: /* not set, or a kind newer than this onnx.proto */
    return 0;
  }
  if (elem) {
    OnnxType *e = KNEW(OnnxType);
    if (decode_type(elem, e)) return -1;
    t->elem = e;
  }
  return 0;
}

static int decode_value_infos(size_t n, Onnx__ValueInfoProto **ps, const char *what, int *count,
                              const OnnxValueInfo **out) {
  OnnxValueInfo *vs = KNEWN(OnnxValueInfo, n + 1);
  for (size_t i = 0; i < n; i++) {
    const Onnx__ValueInfoProto *p = ps[i];
    if (!p || !p->name || !*p->name) return kiln_set_error("%s %zu has no name", what, i);
    vs[i].name = kstrdup(p->name);
    if (decode_type(p->type, &vs[i].type))
      return kiln_error_context("%s '%s'", what, vs[i].name);
  }
  *count = (int)n;
  *out = vs;
  return 0;
}

static int decode_sparse(OnnxDecoder *d, Onnx__SparseTensorProto *p, OnnxSparseTensor *s) {
  if (!p->values) return kiln_set_error("sparse tensor without values");
  if (onnx_decode_tensor(d, p->values, &s->values)) return -1;
  if (!p->indices) return kiln_set_error("sparse tensor '%s' without indices", s->values.name);
  if (onnx_decode_tensor(d, p->indices, &s->indices))
    return kiln_error_context("sparse tensor '%s': indices", s->values.name);
  if (p->n_dims > 64) return kiln_set_error("sparse tensor '%s': %zu dims", s->values.name, p->n_dims);
  int64_t *dims = KNEWN(int64_t, p->n_dims + 1);
  for (size_t i = 0; i < p->n_dims; i++) {
    if (p->dims[i] < 0)
      return kiln_set_error("sparse tensor '%s': dim %zu is %lld (negative)", s->values.name, i,
                            (long long)p->dims[i]);
    dims[i] = p->dims[i];
  }
  s->ndim = (int)p->n_dims;
  s->dims = dims;
  return 0;
}

/* The type an attribute's value says it has, for files that omit `type`
 * (ONNX before IR version 2 had no such field). */
static OnnxAttrType infer_attr_type(const Onnx__AttributeProto *p) {
  if (p->has_f) return ONNX_ATTR_FLOAT;
  if (p->has_i) return ONNX_ATTR_INT;
  if (p->has_s) return ONNX_ATTR_STRING;
  if (p->t) return ONNX_ATTR_TENSOR;
  if (p->g) return ONNX_ATTR_GRAPH;
  if (p->sparse_tensor) return ONNX_ATTR_SPARSE_TENSOR;
  if (p->tp) return ONNX_ATTR_TYPE_PROTO;
  if (p->n_floats) return ONNX_ATTR_FLOATS;
  if (p->n_ints) return ONNX_ATTR_INTS;
  if (p->n_strings) return ONNX_ATTR_STRINGS;
  if (p->n_tensors) return ONNX_ATTR_TENSORS;
  if (p->n_graphs) return ONNX_ATTR_GRAPHS;
  if (p->n_sparse_tensors) return ONNX_ATTR_SPARSE_TENSORS;
  if (p->n_type_protos) return ONNX_ATTR_TYPE_PROTOS;
  return ONNX_ATTR_UNDEFINED;
}

static void copy_bytes(const ProtobufCBinaryData *b, const char **s, size_t *len) {
  size_t n = b && b->data ? b->len : 0;
  char *c = kalloc(n + 1); /* memcpy: ONNX strings are bytes and may hold NULs */
  if (n) memcpy(c, b->data, n);
  *s = c;
  *len = n;
}

/* An arena copy of n elements; never NULL, so an empty list is not "absent". */
static void *dup_array(const void *p, size_t n, size_t size) {
  void *c = kalloc(n * size + 1);
  if (n) memcpy(c, p, n * size);
  return c;
}

static int decode_attr_value(OnnxDecoder *d, Onnx__AttributeProto *p, OnnxAttr *a) {
  /* A reference to the caller's attribute (in a function body) carries no
   * value of its own. */
  bool ref = a->ref_attr_name != NULL;
  switch (a->type) {
  case ONNX_ATTR_UNDEFINED: return 0;
  case ONNX_ATTR_FLOAT: a->f = p->f; return 0;
  case ONNX_ATTR_INT: a->i = p->i; return 0;
  case ONNX_ATTR_STRING: copy_bytes(p->has_s ? &p->s : NULL, &a->s, &a->s_len); return 0;
  case ONNX_ATTR_TENSOR: {
    if (!p->t) return ref ? 0 : kiln_set_error("type TENSOR but no tensor");
    OnnxTensor *t = KNEW(OnnxTensor);
    if (onnx_decode_tensor(d, p->t, t)) return -1;
    a->t = t;
    return 0;
  }
  case ONNX_ATTR_GRAPH: {
    if (!p->g) return ref ? 0 : kiln_set_error("type GRAPH but no graph");
    OnnxGraph *g = KNEW(OnnxGraph);
    if (decode_graph(d, p->g, g)) return -1;
    a->g = g;
    return 0;
  }
  case ONNX_ATTR_SPARSE_TENSOR: {
    if (!p->sparse_tensor) return ref ? 0 : kiln_set_error("type SPARSE_TENSOR but no tensor");
    OnnxSparseTensor *s = KNEW(OnnxSparseTensor);
    if (decode_sparse(d, p->sparse_tensor, s)) return -1;
    a->sparse_tensor = s;
    return 0;
  }
  case ONNX_ATTR_TYPE_PROTO: {
    if (!p->tp) return ref ? 0 : kiln_set_error("type TYPE_PROTO but no type");
    OnnxType *t = KNEW(OnnxType);
    if (decode_type(p->tp, t)) return -1;
    a->tp = t;
    return 0;
  }
  case ONNX_ATTR_FLOATS:
    a->n = (int)p->n_floats;
    a->floats = dup_array(p->floats, p->n_floats, sizeof(float));
    return 0;
  case ONNX_ATTR_INTS:
    a->n = (int)p->n_ints;
    a->ints = dup_array(p->ints, p->n_ints, sizeof(int64_t));
    return 0;
  case ONNX_ATTR_STRINGS: {
    const char **s = KNEWN(const char *, p->n_strings + 1);
    size_t *lens = KNEWN(size_t, p->n_strings + 1);
    for (size_t i = 0; i < p->n_strings; i++) copy_bytes(&p->strings[i], &s[i], &lens[i]);
    a->n = (int)p->n_strings;
    a->strings = s;
    a->string_lens = lens;
    return 0;
  }
  case ONNX_ATTR_TENSORS: {
    OnnxTensor *ts = KNEWN(OnnxTensor, p->n_tensors + 1);
    for (size_t i = 0; i < p->n_tensors; i++) {
      if (!p->tensors[i]) return kiln_set_error("tensor %zu missing", i);
      if (onnx_decode_tensor(d, p->tensors[i], &ts[i])) return kiln_error_context("tensor %zu", i);
    }
    a->n = (int)p->n_tensors;
    a->tensors = ts;
    return 0;
  }
  case ONNX_ATTR_GRAPHS: {
    OnnxGraph **gs = KNEWN(OnnxGraph *, p->n_graphs + 1);
    for (size_t i = 0; i < p->n_graphs; i++) {
      if (!p->graphs[i]) return kiln_set_error("graph %zu missing", i);
      gs[i] = KNEW(OnnxGraph);
      if (decode_graph(d, p->graphs[i], gs[i])) return kiln_error_context("graph %zu", i);
    }
    a->n = (int)p->n_graphs;
    a->graphs = (const OnnxGraph *const *)gs;
    return 0;
  }
  case ONNX_ATTR_SPARSE_TENSORS: {
    OnnxSparseTensor *ss = KNEWN(OnnxSparseTensor, p->n_sparse_tensors + 1);
    for (size_t i = 0; i < p->n_sparse_tensors; i++) {
      if (!p->sparse_tensors[i]) return kiln_set_error("sparse tensor %zu missing", i);
      if (decode_sparse(d, p->sparse_tensors[i], &ss[i]))
        return kiln_error_context("sparse tensor %zu", i);
    }
    a->n = (int)p->n_sparse_tensors;
    a->sparse_tensors = ss;
    return 0;
  }
  case ONNX_ATTR_TYPE_PROTOS: {
    OnnxType *ts = KNEWN(OnnxType, p->n_type_protos + 1);
    for (size_t i = 0; i < p->n_type_protos; i++)
      if (decode_type(p->type_protos[i], &ts[i])) return kiln_error_context("type %zu", i);
    a->n = (int)p->n_type_protos;
    a->type_protos = ts;
    return 0;
  }
  }
  return kiln_set_error("unknown attribute type %d", (int)a->type);
}

static int decode_attr(OnnxDecoder *d, Onnx__AttributeProto *p, int index, OnnxAttr *a) {
  if (!p || !p->name || !*p->name) return kiln_set_error("attribute %d has no name", index);
  a->name = kstrdup(p->name);
  a->ref_attr_name = p->ref_attr_name && *p->ref_attr_name ? kstrdup(p->ref_attr_name) : NULL;
  a->type = p->has_type && p->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED
                ? (OnnxAttrType)p->type
                : infer_attr_type(p);
  if (decode_attr_value(d, p, a)) return kiln_error_context("attribute '%s'", a->name);
  return 0;
}

static const char **copy_names(size_t n, char **names) {
  const char **out = KNEWN(const char *, n + 1);
  for (size_t i = 0; i < n; i++) out[i] = str(names[i]);
  return out;
}

static int decode_node(OnnxDecoder *d, Onnx__NodeProto *p, int index, OnnxNode *nd) {
  nd->index = index;
  if (!p) return kiln_set_error("node %d is missing", index);
  bool named = p->name && *p->name;
  if (!p->op_type || !*p->op_type)
    return kiln_set_error("node %d%s%s%s: missing op_type", index, named ? " '" : "",
                          named ? p->name : "", named ? "'" : "");
  nd->op_type = kstrdup(p->op_type);
  nd->name = named ? kstrdup(p->name) : kfmt("%s_%d", nd->op_type, index);
  nd->domain = domain_str(p->domain);
  nd->ninputs = (int)p->n_input;
  nd->inputs = copy_names(p->n_input, p->input);
  nd->noutputs = (int)p->n_output;
  nd->outputs = copy_names(p->n_output, p->output);
  OnnxAttr *attrs = KNEWN(OnnxAttr, p->n_attribute + 1);
  for (size_t i = 0; i < p->n_attribute; i++)
    if (decode_attr(d, p->attribute[i], (int)i, &attrs[i]))
      return kiln_error_context("node %d '%s' (%s)", index, nd->name, nd->op_type);
  nd->nattrs = (int)p->n_attribute;
  nd->attrs = attrs;
  return 0;
}

static int decode_nodes(OnnxDecoder *d, size_t n, Onnx__NodeProto **ps, int *count,
                        const OnnxNode **out) {
  if (n > INT32_MAX) return kiln_set_error("too many nodes");
  OnnxNode *nodes = KNEWN(OnnxNode, n + 1);
  for (size_t i = 0; i < n; i++)
    if (decode_node(d, ps[i], (int)i, &nodes[i])) return -1;
  *count = (int)n;
  *out = nodes;
  return 0;
}

static int decode_graph_body(OnnxDecoder *d, const Onnx__GraphProto *p, OnnxGraph *g) {
  if (decode_value_infos(p->n_input, p->input, "input", &g->ninputs, &g->inputs) ||
      decode_value_infos(p->n_output, p->output, "output", &g->noutputs, &g->outputs) ||
      decode_value_infos(p->n_value_info, p->value_info, "value_info", &g->nvalue_info,
                         &g->value_info))
    return -1;
  OnnxTensor *inits = KNEWN(OnnxTensor, p->n_initializer + 1);
  for (size_t i = 0; i < p->n_initializer; i++) {
    if (!p->initializer[i]) return kiln_set_error("initializer %zu is missing", i);
    if (onnx_decode_tensor(d, p->initializer[i], &inits[i]))
      return kiln_error_context("initializer %zu", i);
    if (!*inits[i].name) return kiln_set_error("initializer %zu has no name", i);
  }
  g->ninitializers = (int)p->n_initializer;
  g->initializers = inits;
  OnnxSparseTensor *sparse = KNEWN(OnnxSparseTensor, p->n_sparse_initializer + 1);
  for (size_t i = 0; i < p->n_sparse_initializer; i++) {
    if (!p->sparse_initializer[i]) return kiln_set_error("sparse initializer %zu is missing", i);
    if (decode_sparse(d, p->sparse_initializer[i], &sparse[i]))
      return kiln_error_context("sparse initializer %zu", i);
  }
  g->nsparse_initializers = (int)p->n_sparse_initializer;
  g->sparse_initializers = sparse;
  return decode_nodes(d, p->n_node, p->node, &g->nnodes, &g->nodes);
}

static int decode_graph(OnnxDecoder *d, const Onnx__GraphProto *p, OnnxGraph *g) {
  g->name = str(p->name);
  if (decode_graph_body(d, p, g)) return kiln_error_context("graph '%s'", g->name);
  return 0;
}

static int decode_opsets(size_t n, Onnx__OperatorSetIdProto **ps, int *count,
                         const OnnxOpset **out) {
  OnnxOpset *os = KNEWN(OnnxOpset, n + 1);
  for (size_t i = 0; i < n; i++) {
    if (!ps[i]) return kiln_set_error("opset_import %zu is missing", i);
    os[i].domain = domain_str(ps[i]->domain);
    if (!ps[i]->has_version)
      return kiln_set_error("opset_import %zu (domain '%s') has no version", i, os[i].domain);
    os[i].version = ps[i]->version;
  }
  *count = (int)n;
  *out = os;
  return 0;
}

static int decode_function(OnnxDecoder *d, Onnx__FunctionProto *p, OnnxFunction *f) {
  f->name = str(p->name);
  f->domain = domain_str(p->domain);
  f->ninputs = (int)p->n_input;
  f->inputs = copy_names(p->n_input, p->input);
  f->noutputs = (int)p->n_output;
  f->outputs = copy_names(p->n_output, p->output);
  f->nattr_names = (int)p->n_attribute;
  f->attr_names = copy_names(p->n_attribute, p->attribute);
  if (decode_opsets(p->n_opset_import, p->opset_import, &f->nopsets, &f->opsets) ||
      decode_nodes(d, p->n_node, p->node, &f->nnodes, &f->nodes))
    return kiln_error_context("function '%s'", f->name);
  return 0;
}

static int decode_model(OnnxDecoder *d, Onnx__ModelProto *p, OnnxModel *m) {
  if (!p->graph) {
    if (!p->has_ir_version && !p->n_opset_import)
      return kiln_set_error("not an ONNX model (no ir_version, opset_import or graph)");
    return kiln_set_error("the model has no graph");
  }
  m->ir_version = p->has_ir_version ? p->ir_version : 0;
  m->producer_name = str(p->producer_name);
  m->producer_version = str(p->producer_version);
  m->domain = str(p->domain);
  m->doc_string = str(p->doc_string);
  m->model_version = p->has_model_version ? p->model_version : 0;
  if (decode_opsets(p->n_opset_import, p->opset_import, &m->nopsets, &m->opsets)) return -1;
  OnnxStringPair *meta = KNEWN(OnnxStringPair, p->n_metadata_props + 1);
  for (size_t i = 0; i < p->n_metadata_props; i++) {
    const Onnx__StringStringEntryProto *e = p->metadata_props[i];
    meta[i].key = str(e ? e->key : NULL);
    meta[i].value = str(e ? e->value : NULL);
  }
  m->nmetadata = (int)p->n_metadata_props;
  m->metadata = meta;
  OnnxFunction *fs = KNEWN(OnnxFunction, p->n_functions + 1);
  for (size_t i = 0; i < p->n_functions; i++) {
    if (!p->functions[i]) return kiln_set_error("function %zu is missing", i);
    if (decode_function(d, p->functions[i], &fs[i])) return -1;
  }
  m->nfunctions = (int)p->n_functions;
  m->functions = fs;
  m->graph = KNEW(OnnxGraph);
  return decode_graph(d, p->graph, m->graph);
}

/* ---- loading ---- */

void onnx_model_free(OnnxModel *m) {
  if (!m) return;
  for (int i = 0; i < m->owned.len; i++) free(m->owned.data[i]);
  pv_free(&m->owned);
  kiln_arena_free(m->arena); /* m itself lives there */
}

/* Decode bytes into a model; `what` names the source in messages.  When
 * `owned_buf` is set it is the heap buffer holding data, freed as soon as
 * protobuf-c has copied what it needs (a model's weights then sit in memory
 * once while the structures are built, not twice). */
static OnnxModel *load(const void *data, size_t n, char *owned_buf, const char *what,
                       const char *base_dir) {
  if (onnx_wire_check(data, n, &onnx__model_proto__descriptor)) {
    free(owned_buf);
    kiln_error_context("%s: not a valid ONNX model", what);
    return NULL;
  }
  Onnx__ModelProto *p = onnx__model_proto__unpack(&pb_allocator, n, data);
  free(owned_buf);
  if (!p) {
    kiln_set_error("%s: not a valid ONNX model (protobuf-c could not decode it)", what);
    return NULL;
  }
  KArena *arena = kiln_arena_new();
  OnnxModel *m = kiln_arena_alloc(arena, sizeof *m);
  m->arena = arena;
  kiln_arena_push(arena);
  m->path = kstrdup(what);
  m->base_dir = base_dir ? kstrdup(base_dir) : NULL;
  OnnxDecoder d = {m->base_dir, m};
  int rc = decode_model(&d, p, m);
  kiln_arena_pop();
  onnx__model_proto__free_unpacked(p, &pb_allocator);
  if (rc) {
    kiln_error_context("%s", what);
    onnx_model_free(m);
    return NULL;
  }
  return m;
}

OnnxModel *onnx_model_load_bytes(const void *data, size_t n, const char *base_dir) {
  return load(data, n, NULL, "<memory>", base_dir);
}

OnnxModel *onnx_model_load(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    kiln_set_error("%s: a directory, not an ONNX model file", path);
    return NULL;
  }
  size_t n;
  char *buf = kiln_read_file(path, &n);
  if (!buf) return NULL;
  if (n == 0) {
    free(buf);
    kiln_set_error("%s: empty file, not an ONNX model", path);
    return NULL;
  }
  /* External data sits beside the model. */
  const char *slash = strrchr(path, '/');
  char *dir = slash ? xstrdup(path) : xstrdup(".");
  if (slash) dir[slash == path ? 1 : slash - path] = 0;
  OnnxModel *m = load(buf, n, buf, path, dir);
  free(dir);
  return m;
}

int64_t onnx_model_opset(const OnnxModel *m, const char *domain) {
  if (!domain || !strcmp(domain, "ai.onnx")) domain = "";
  for (int i = 0; i < m->nopsets; i++)
    if (!strcmp(m->opsets[i].domain, domain)) return m->opsets[i].version;
  return -1;
}
