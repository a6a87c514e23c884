/*
 * datadep.c - the data-dependent operators, run by the graph executor as
 * functions of the runtime: ONNX NonZero, Compress, Unique and
 * NonMaxSuppression, whose output size the input's data decides.
 *
 * The calling convention is the host functions' (strings.c): the input
 * tensors, the output, the attributes as a JSON string (the node's
 * attrs.kiln_host), the executor's heap handle, and for an op that
 * reports a size a last KILN_HANDLE to an int64 where it writes it.  The
 * executor hands the output at its upper bound (the reported dimension
 * at the node's kiln_report_cap); the function writes the result compact
 * at the real size, in the first elements of that buffer, and reports the
 * size; the executor then binds it and plans what follows
 * (graph_sym.c, docs/symbolic_shapes.md section 4c).  A result larger
 * than the buffer is an error, never a write past it (a node with
 * kiln_report_grow, whose cap is only a guess, reports it without writing
 * and is called again with its output grown: strings.c's StringSplit).
 *
 * Elements of any numeric dtype are compared as the dtype orders them
 * (float16 and bfloat16 through float; a NaN equals a NaN and sorts
 * last, as NumPy's unique); the results follow the ONNX reference
 * (onnx.reference), which the tests compare against.
 *
 * Exports: kiln_datadep_builtins.
 */
#include "runtime_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct DdCall {
  const char *fname;
  int nt;
  DLTensor **t; /* inputs then the output */
  cJSON *attrs;
  int64_t *reported; /* NULL: the node reports nothing */
} DdCall;

static int dd_begin(DdCall *h, const char *fname, KilnValue *args, int *codes, int nargs, int ntensors) {
  memset(h, 0, sizeof *h);
  h->fname = fname;
  if (kiln_check_argc(fname, nargs, ntensors + 2, ntensors + 3, NULL)) return -1;
  h->t = xcalloc((size_t)ntensors, sizeof(DLTensor *));
  h->nt = ntensors;
  for (int i = 0; i < ntensors; i++) {
    if (codes[i] != KILN_DLTENSOR && codes[i] != KILN_NDARRAY) return kiln_arg_error(fname, i, NULL, "tensor", codes[i], NULL);
    h->t[i] = args[i].v_handle;
    if (!h->t[i] || h->t[i]->device.device_type != kDLCPU || !kiln_tensor_is_compact(h->t[i]))
      return kiln_set_error("%s: argument %d must be a compact CPU tensor", fname, i);
  }
  if (codes[ntensors] != KILN_STR) return kiln_arg_error(fname, ntensors, "attrs", "str", codes[ntensors], NULL);
  if (nargs == ntensors + 3) {
    if (codes[ntensors + 2] != KILN_HANDLE || !args[ntensors + 2].v_handle)
      return kiln_arg_error(fname, ntensors + 2, "reported", "handle", codes[ntensors + 2], NULL);
    h->reported = args[ntensors + 2].v_handle;
  }
  h->attrs = cJSON_Parse(args[ntensors].v_str);
  if (!h->attrs || !cJSON_IsObject(h->attrs)) return kiln_set_error("%s: the attributes are not a JSON object", fname);
  return 0;
}

static int dd_end(DdCall *h, int rc) {
  cJSON_Delete(h->attrs);
  free(h->t);
  return rc ? -1 : 0;
}

static int64_t attr_i(const DdCall *h, const char *key, int64_t def) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(h->attrs, key);
  return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : def;
}

static int64_t numel(const DLTensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

static void *base(const DLTensor *t) { return (char *)t->data + t->byte_offset; }

static int check_out(const DdCall *h, DLDataType want) {
  DLTensor *o = h->t[h->nt - 1];
  if (o->dtype.code != want.code || o->dtype.bits != want.bits || o->dtype.lanes != 1) {
    char a[48], b[48];
    return kiln_set_error("%s: the output must be %s, got %s", h->fname, kiln_dtype_format(want, a, sizeof a),
                          kiln_dtype_format(o->dtype, b, sizeof b));
  }
  return 0;
}

/* The size found, checked against the output buffer's room (cap) and
 * reported. */
static int report(const DdCall *h, int64_t n, int64_t cap) {
  if (n > cap)
    return kiln_set_error("%s: the result has %lld entries, more than the %lld its buffer holds", h->fname,
                          (long long)n, (long long)cap);
  if (!h->reported) return kiln_set_error("%s: called without a place to report the result's size", h->fname);
  *h->reported = n;
  return 0;
}

/* ---- elements of any numeric dtype ---- */

static bool is_float(DLDataType d) { return d.code == kDLFloat || d.code == kDLBfloat; }

static double get_f(const DLTensor *t, int64_t i) {
  const char *p = base(t);
  if (t->dtype.code == kDLBfloat) {
    uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  switch (t->dtype.bits) {
  case 16: return (double)((const _Float16 *)p)[i];
  case 32: return ((const float *)p)[i];
  default: return ((const double *)p)[i];
  }
}

static int64_t get_i(const DLTensor *t, int64_t i) {
  const char *p = base(t);
  bool u = t->dtype.code == kDLUInt;
  switch (t->dtype.bits) {
  case 1:
  case 8: return u ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
  case 16: return u ? ((const uint16_t *)p)[i] : ((const int16_t *)p)[i];
  case 32: return u ? (int64_t)((const uint32_t *)p)[i] : (int64_t)((const int32_t *)p)[i];
  default: return ((const int64_t *)p)[i];
  }
}

static int check_numeric(const DdCall *h, int i) {
  DLDataType d = h->t[i]->dtype;
  bool ok = d.lanes == 1 && ((d.code == kDLFloat && (d.bits == 16 || d.bits == 32 || d.bits == 64)) ||
                             (d.code == kDLBfloat && d.bits == 16) ||
                             ((d.code == kDLInt || d.code == kDLUInt) &&
                              (d.bits == 1 || d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64)));
  if (ok) return 0;
  char b[48];
  return kiln_set_error("%s: argument %d must be numeric, got %s", h->fname, i, kiln_dtype_format(d, b, sizeof b));
}

static bool nonzero_at(const DLTensor *t, int64_t i) { return is_float(t->dtype) ? get_f(t, i) != 0 : get_i(t, i) != 0; }

/* -1, 0, 1 as element i of a orders against element j of a (a NaN equal
 * to a NaN and after every number). */
static int cmp_at(const DLTensor *a, int64_t i, int64_t j) {
  if (is_float(a->dtype)) {
    double x = get_f(a, i), y = get_f(a, j);
    if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);
    return x < y ? -1 : x > y;
  }
  if (a->dtype.code == kDLUInt && a->dtype.bits == 64) {
    uint64_t x = (uint64_t)get_i(a, i), y = (uint64_t)get_i(a, j);
    return x < y ? -1 : x > y;
  }
  int64_t x = get_i(a, i), y = get_i(a, j);
  return x < y ? -1 : x > y;
}

/* ---- NonZero ---- */

/* x (any numeric), out int64 (rank, cap): the indices of the elements
 * that are not zero, one column each, in row-major order. */
static int f_nonzero(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  DdCall h;
  int rc = dd_begin(&h, "runtime.dd.nonzero", args, codes, nargs, 2);
  const DLTensor *x = rc ? NULL : h.t[0];
  DLTensor *o = rc ? NULL : h.t[1];
  if (!rc) rc = check_numeric(&h, 0) || check_out(&h, (DLDataType){kDLInt, 64, 1});
  int r = x ? (x->ndim ? x->ndim : 1) : 0;
  if (!rc && (o->ndim != 2 || o->shape[0] != r))
    rc = kiln_set_error("%s: the output must be (%d, n) for an input of rank %d", h.fname, r, x->ndim);
  int64_t n = rc ? 0 : numel(x), cnt = 0;
  for (int64_t e = 0; e < n; e++) cnt += nonzero_at(x, e);
  if (!rc) rc = report(&h, cnt, o->shape[1]);
  int64_t *out = rc ? NULL : base(o), k = 0;
  for (int64_t e = 0; out && e < n; e++) {
    if (!nonzero_at(x, e)) continue;
    int64_t rem = e;
    for (int i = x->ndim - 1; i >= 0; i--) {
      out[i * cnt + k] = rem % x->shape[i];
      rem /= x->shape[i];
    }
    if (!x->ndim) out[k] = 0;
    k++;
  }
  return dd_end(&h, rc);
}

/* ---- Compress ---- */

/* x, condition (1-D, any numeric), out: the slices of x along attribute
 * "axis" where the condition is not zero (positions past its length are
 * dropped), at the reported size. */
static int f_compress(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  DdCall h;
  int rc = dd_begin(&h, "runtime.dd.compress", args, codes, nargs, 3);
  const DLTensor *x = rc ? NULL : h.t[0], *c = rc ? NULL : h.t[1];
  DLTensor *o = rc ? NULL : h.t[2];
  int64_t ax = rc ? 0 : attr_i(&h, "axis", 0);
  if (!rc) rc = check_numeric(&h, 1) || check_out(&h, x->dtype);
  if (!rc && (ax < 0 || ax >= x->ndim || o->ndim != x->ndim || c->ndim != 1 || c->shape[0] > x->shape[ax]))
    rc = kiln_set_error("%s: axis %lld, a condition of %lld values and the output do not fit the input", h.fname,
                        (long long)ax, c && c->ndim == 1 ? (long long)c->shape[0] : -1LL);
  int64_t outer = 1, inner = 1, cnt = 0;
  for (int d = 0; !rc && d < x->ndim; d++) {
    if (d < ax) outer *= x->shape[d];
    if (d > ax) inner *= x->shape[d];
    if (d != ax && o->shape[d] != x->shape[d])
      rc = kiln_set_error("%s: the output's dimension %d is %lld, the input's %lld", h.fname, d,
                          (long long)o->shape[d], (long long)x->shape[d]);
  }
  int64_t len = rc ? 0 : c->shape[0];
  for (int64_t i = 0; i < len; i++) cnt += nonzero_at(c, i);
  if (!rc) rc = report(&h, cnt, o->shape[ax]);
  if (!rc) {
    size_t row = (size_t)inner * kiln_dtype_bytes(x->dtype);
    const char *src = base(x);
    char *dst = base(o);
    for (int64_t p = 0; p < outer; p++)
      for (int64_t i = 0; i < len; i++)
        if (nonzero_at(c, i)) {
          memcpy(dst, src + ((size_t)p * (size_t)x->shape[ax] + (size_t)i) * row, row);
          dst += row;
        }
  }
  return dd_end(&h, rc);
}

/* ---- Unique ---- */

typedef struct Slices {
  const DLTensor *x;
  int64_t n, outer, inner; /* n slices along the axis; each outer x inner elements */
} Slices;

/* Slice i against slice j, element by element in row-major order. */
static int cmp_slices(const Slices *s, int64_t i, int64_t j) {
  for (int64_t p = 0; p < s->outer; p++)
    for (int64_t q = 0; q < s->inner; q++) {
      int64_t a = (p * s->n + i) * s->inner + q, b = (p * s->n + j) * s->inner + q;
      int c = cmp_at(s->x, a, b);
      if (c) return c;
    }
  return 0;
}

/* Stable merge sort of idx[0..n) by the slices (ties keep index order). */
static void sort_slices(const Slices *s, int64_t *idx, int64_t *tmp, int64_t n) {
  if (n < 2) return;
  int64_t m = n / 2;
  sort_slices(s, idx, tmp, m);
  sort_slices(s, idx + m, tmp, n - m);
  int64_t i = 0, j = m, k = 0;
  while (i < m && j < n) tmp[k++] = cmp_slices(s, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
  while (i < m) tmp[k++] = idx[i++];
  while (j < n) tmp[k++] = idx[j++];
  memcpy(idx, tmp, sizeof(int64_t) * (size_t)n);
}

/* x, out.  Attributes: "axis" (absent: x flattened), "sorted" (1: the
 * unique slices in ascending order, 0: in order of first occurrence),
 * "output": which of ONNX's outputs this call writes - 0 the unique
 * slices Y, 1 the index of each one's first occurrence, 2 the inverse
 * indices (for each input slice its position in Y; its size is known,
 * nothing is reported), 3 the counts. */
static int f_unique(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  DdCall h;
  int rc = dd_begin(&h, "runtime.dd.unique", args, codes, nargs, 2);
  const DLTensor *x = rc ? NULL : h.t[0];
  DLTensor *o = rc ? NULL : h.t[1];
  int64_t ax = rc ? -1 : attr_i(&h, "axis", -1), which = rc ? 0 : attr_i(&h, "output", 0);
  bool sorted = rc ? true : attr_i(&h, "sorted", 1) != 0;
  if (!rc) rc = check_numeric(&h, 0) || check_out(&h, which == 0 ? x->dtype : (DLDataType){kDLInt, 64, 1});
  if (!rc && (ax >= x->ndim || which < 0 || which > 3))
    rc = kiln_set_error("%s: axis %lld or output %lld does not fit an input of rank %d", h.fname, (long long)ax,
                        (long long)which, x->ndim);
  DLTensor xv = x ? *x : (DLTensor){0};
  if (!rc && attr_i(&h, "bfloat16", 0)) { /* a bfloat16 carried in a uint16: its bits */
    if (x->dtype.code != kDLUInt || x->dtype.bits != 16) rc = kiln_set_error("%s: a bfloat16 input comes as uint16", h.fname);
    xv.dtype = (DLDataType){kDLBfloat, 16, 1};
  }
  Slices s = {&xv, 0, 1, 1};
  if (!rc) {
    if (ax < 0) s.n = numel(x);
    else
      for (int d = 0; d < x->ndim; d++) {
        if (d < ax) s.outer *= x->shape[d];
        if (d > ax) s.inner *= x->shape[d];
        if (d == ax) s.n = x->shape[d];
      }
  }
  int64_t n = s.n, k = 0;
  int64_t *idx = rc ? NULL : xcalloc((size_t)n + 1, sizeof(int64_t)), *tmp = rc ? NULL : xcalloc((size_t)n + 1, sizeof(int64_t));
  /* per slice: its group (in sorted order) and per group its first
   * index, count and position in the output */
  int64_t *grp = rc ? NULL : xcalloc((size_t)n + 1, sizeof(int64_t)), *first = rc ? NULL : xcalloc((size_t)n + 1, sizeof(int64_t));
  int64_t *count = rc ? NULL : xcalloc((size_t)n + 1, sizeof(int64_t)), *pos = rc ? NULL : xcalloc((size_t)n + 1, sizeof(int64_t));
  if (!rc) {
    for (int64_t i = 0; i < n; i++) idx[i] = i;
    sort_slices(&s, idx, tmp, n);
    for (int64_t i = 0; i < n; i++) {
      if (i == 0 || cmp_slices(&s, idx[i - 1], idx[i])) first[k++] = idx[i]; /* stable: the lowest index first */
      grp[idx[i]] = k - 1;
      count[k - 1]++;
    }
    /* the output order: sorted, or by first occurrence */
    for (int64_t g = 0; g < k; g++) tmp[g] = g;
    if (!sorted) { /* insertion sort of the groups by first index (k small next to the sort above) */
      for (int64_t g = 1; g < k; g++) {
        int64_t v = tmp[g], j = g;
        while (j > 0 && first[tmp[j - 1]] > first[v]) tmp[j] = tmp[j - 1], j--;
        tmp[j] = v;
      }
    }
    for (int64_t p = 0; p < k; p++) pos[tmp[p]] = p;
  }
  int rdim = ax < 0 ? 0 : (int)ax;
  if (!rc && which == 2) {
    if (o->ndim != 1 || o->shape[0] != n) rc = kiln_set_error("%s: the inverse indices must be (%lld,)", h.fname, (long long)n);
    for (int64_t i = 0; !rc && i < n; i++) ((int64_t *)base(o))[i] = pos[grp[i]];
  } else if (!rc) {
    bool ok = which == 0 ? (ax < 0 ? o->ndim == 1 : o->ndim == x->ndim) : o->ndim == 1;
    for (int d = 0; ok && which == 0 && ax >= 0 && d < x->ndim; d++) ok = d == ax || o->shape[d] == x->shape[d];
    if (!ok) rc = kiln_set_error("%s: output %lld's shape does not fit the input", h.fname, (long long)which);
    if (!rc) rc = report(&h, k, o->shape[which == 0 ? rdim : 0]);
    for (int64_t p = 0; !rc && p < k; p++) {
      int64_t g = tmp[p];
      if (which == 1) ((int64_t *)base(o))[p] = first[g];
      else if (which == 3) ((int64_t *)base(o))[p] = count[g];
      else {
        size_t eb = kiln_dtype_bytes(x->dtype), row = (size_t)s.inner * eb;
        for (int64_t q = 0; q < s.outer; q++)
          memcpy((char *)base(o) + ((size_t)q * (size_t)k + (size_t)p) * row,
                 (const char *)base(x) + ((size_t)q * (size_t)n + (size_t)first[g]) * row, row);
      }
    }
  }
  free(idx);
  free(tmp);
  free(grp);
  free(first);
  free(count);
  free(pos);
  return dd_end(&h, rc);
}

/* ---- NonMaxSuppression ---- */

/* Whether box j suppresses box i (their IoU above thr), in the boxes'
 * own precision as the ONNX reference computes it. */
#define DD_IOU(NAME, T)                                                                                          \
  static bool NAME(const T *b1, const T *b2, int center, T thr) {                                               \
    T x1n, x1x, x2n, x2x, y1n, y1x, y2n, y2x;                                                                    \
    if (!center) {                                                                                               \
      x1n = b1[1] < b1[3] ? b1[1] : b1[3], x1x = b1[1] < b1[3] ? b1[3] : b1[1];                                 \
      x2n = b2[1] < b2[3] ? b2[1] : b2[3], x2x = b2[1] < b2[3] ? b2[3] : b2[1];                                 \
      y1n = b1[0] < b1[2] ? b1[0] : b1[2], y1x = b1[0] < b1[2] ? b1[2] : b1[0];                                 \
      y2n = b2[0] < b2[2] ? b2[0] : b2[2], y2x = b2[0] < b2[2] ? b2[2] : b2[0];                                 \
    } else {                                                                                                     \
      T w1 = b1[2] / 2, h1 = b1[3] / 2, w2 = b2[2] / 2, h2 = b2[3] / 2;                                         \
      x1n = b1[0] - w1, x1x = b1[0] + w1, x2n = b2[0] - w2, x2x = b2[0] + w2;                                   \
      y1n = b1[1] - h1, y1x = b1[1] + h1, y2n = b2[1] - h2, y2x = b2[1] + h2;                                   \
    }                                                                                                            \
    T ixn = x1n > x2n ? x1n : x2n, ixx = x1x < x2x ? x1x : x2x;                                                 \
    if (ixx <= ixn) return false;                                                                                \
    T iyn = y1n > y2n ? y1n : y2n, iyx = y1x < y2x ? y1x : y2x;                                                 \
    if (iyx <= iyn) return false;                                                                                \
    T inter = (ixx - ixn) * (iyx - iyn);                                                                         \
    if (inter <= 0) return false;                                                                                \
    T a1 = (x1x - x1n) * (y1x - y1n), a2 = (x2x - x2n) * (y2x - y2n), uni = a1 + a2 - inter;                     \
    if (a1 <= 0 || a2 <= 0 || uni <= 0) return false;                                                           \
    return inter / uni > thr;                                                                                    \
  }
DD_IOU(iou_above_f32, float)
DD_IOU(iou_above_f64, double)

typedef struct NmsCand {
  double score;
  int64_t idx;
} NmsCand;

static int cmp_cand(const void *a, const void *b) {
  const NmsCand *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1; /* higher score first */
  return x->idx < y->idx ? -1 : x->idx > y->idx;                 /* then the lower index */
}

/* boxes (B, N, 4), scores (B, C, N) (float32 or float64),
 * max_output_boxes_per_class (int64, one element or none), iou_threshold
 * and score_threshold (one element or none; attribute
 * "score_threshold" 0 when the model gives none), out int64 (cap, 3):
 * the selected [batch, class, box] triples, batch by batch, class by
 * class, in the order they were selected. */
static int f_nms(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  DdCall h;
  int rc = dd_begin(&h, "runtime.dd.nms", args, codes, nargs, 6);
  DLTensor **t = rc ? NULL : h.t;
  if (!rc) rc = check_out(&h, (DLDataType){kDLInt, 64, 1});
  bool f64 = !rc && t[0]->dtype.bits == 64;
  if (!rc && (t[0]->ndim != 3 || t[0]->shape[2] != 4 || t[1]->ndim != 3 || t[1]->shape[0] != t[0]->shape[0] ||
              t[1]->shape[2] != t[0]->shape[1] || t[0]->dtype.code != kDLFloat ||
              (t[0]->dtype.bits != 32 && !f64) || t[1]->dtype.code != t[0]->dtype.code ||
              t[1]->dtype.bits != t[0]->dtype.bits || t[5]->ndim != 2 || t[5]->shape[1] != 3))
    rc = kiln_set_error("%s: boxes must be float (B, N, 4), scores (B, C, N) of the same dtype, the output (n, 3)",
                        h.fname);
  for (int i = 2; !rc && i < 5; i++)
    if (numel(t[i]) > 1 || (i == 2 ? is_float(t[i]->dtype) : !is_float(t[i]->dtype)))
      rc = kiln_set_error("%s: input %d must hold at most one %s", h.fname, i, i == 2 ? "integer" : "float");
  int64_t B = rc ? 0 : t[0]->shape[0], N = rc ? 0 : t[0]->shape[1], C = rc ? 0 : t[1]->shape[1];
  int64_t maxo = !rc && numel(t[2]) ? get_i(t[2], 0) : 0;
  double iou = !rc && numel(t[3]) ? get_f(t[3], 0) : 0;
  bool use_score = !rc && attr_i(&h, "score_threshold", 1) && numel(t[4]);
  double sthr = use_score ? get_f(t[4], 0) : 0;
  if (maxo < 0) maxo = 0;
  NmsCand *cand = rc ? NULL : xcalloc((size_t)N + 1, sizeof(NmsCand));
  int64_t *sel = rc ? NULL : xcalloc((size_t)N + 1, sizeof(int64_t));
  int64_t cap = rc ? 0 : t[5]->shape[0], cnt = 0;
  int64_t *out = rc ? NULL : base(t[5]);
  for (int64_t b = 0; !rc && b < B; b++)
    for (int64_t c = 0; !rc && c < C; c++) {
      int64_t nc = 0, ns = 0;
      for (int64_t i = 0; i < N; i++) {
        int64_t at = (b * C + c) * N + i;
        double s = f64 ? ((const double *)base(t[1]))[at] : ((const float *)base(t[1]))[at];
        /* compared in the scores' precision */
        bool keep = !use_score || (f64 ? s > sthr : (float)s > (float)sthr);
        if (keep) cand[nc++] = (NmsCand){s, i};
      }
      qsort(cand, (size_t)nc, sizeof *cand, cmp_cand);
      for (int64_t i = 0; i < nc && ns < maxo; i++) {
        bool ok = true;
        for (int64_t j = 0; j < ns && ok; j++) {
          int64_t p = b * N + cand[i].idx, q = b * N + sel[j];
          ok = f64 ? !iou_above_f64((const double *)base(t[0]) + p * 4, (const double *)base(t[0]) + q * 4,
                                    (int)attr_i(&h, "center_point_box", 0), iou)
                   : !iou_above_f32((const float *)base(t[0]) + p * 4, (const float *)base(t[0]) + q * 4,
                                    (int)attr_i(&h, "center_point_box", 0), (float)iou);
        }
        if (!ok) continue;
        sel[ns++] = cand[i].idx;
        if (cnt >= cap) {
          rc = report(&h, cnt + 1, cap);
          break;
        }
        out[cnt * 3] = b, out[cnt * 3 + 1] = c, out[cnt * 3 + 2] = cand[i].idx;
        cnt++;
      }
    }
  if (!rc) rc = report(&h, cnt, cap);
  free(cand);
  free(sel);
  return dd_end(&h, rc);
}

/* ---- a value kernels computed, whose elements decide later shapes ---- */

/* x (1-D int64 or int32), out: a copy, from which the executor binds the
 * run-time values after the call (graph_sym.c). */
static int f_bind(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  DdCall h;
  int rc = dd_begin(&h, "runtime.dd.bind", args, codes, nargs, 2);
  if (!rc) rc = check_out(&h, h.t[0]->dtype);
  if (!rc && (h.t[0]->ndim != 1 || h.t[1]->ndim != 1 || h.t[0]->shape[0] != h.t[1]->shape[0] ||
              h.t[0]->dtype.code != kDLInt || (h.t[0]->dtype.bits != 64 && h.t[0]->dtype.bits != 32)))
    rc = kiln_set_error("%s: the input and the output must be the same 1-D int64 or int32 tensor", h.fname);
  if (!rc) memcpy(base(h.t[1]), base(h.t[0]), (size_t)numel(h.t[0]) * kiln_dtype_bytes(h.t[0]->dtype));
  return dd_end(&h, rc);
}

/* ---- MelWeightMatrix's check of values given at run time ---- */

static double scalar_at(const DLTensor *t) {
  const void *p = base(t);
  DLDataType d = t->dtype;
  if (d.code == kDLInt) return d.bits == 64 ? (double)*(const int64_t *)p : d.bits == 32 ? *(const int32_t *)p : 0;
  if (d.code == kDLFloat)
    return d.bits == 64 ? *(const double *)p : d.bits == 32 ? *(const float *)p : (double)*(const _Float16 *)p;
  return 0;
}

/* (num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
 * upper_edge_hertz) one element each, out: a copy of upper_edge_hertz,
 * which the mel kernel reads (so the check runs first).  Every mel bin
 * must lie in [0, dft_length / 2 + 1], as the compile-time path requires
 * (frontend/onnx/ops/signal.c): a bin outside is an error, never a
 * matrix that silently drops it. */
static int f_mel_check(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  DdCall h;
  int rc = dd_begin(&h, "runtime.dd.mel_check", args, codes, nargs, 6);
  for (int i = 0; i < 6 && !rc; i++) {
    DLDataType d = h.t[i]->dtype;
    if (numel(h.t[i]) != 1 || d.lanes != 1 || (i < 3 ? d.code != kDLInt || (d.bits != 32 && d.bits != 64)
                                                       : d.code != kDLFloat || (d.bits != 16 && d.bits != 32 && d.bits != 64)))
      rc = kiln_set_error("%s: argument %d must be one %s element", h.fname, i, i < 3 ? "int32 or int64" : "float");
  }
  if (!rc && memcmp(&h.t[4]->dtype, &h.t[5]->dtype, sizeof(DLDataType)))
    rc = kiln_set_error("%s: the output must have upper_edge_hertz's type", h.fname);
  if (!rc) {
    double M = scalar_at(h.t[0]), L = scalar_at(h.t[1]), S = scalar_at(h.t[2]), lo = scalar_at(h.t[3]),
           hi = scalar_at(h.t[4]);
    int64_t nspec = (int64_t)L / 2 + 1;
    double lmel = 2595 * log10(1 + lo / 700), hmel = 2595 * log10(1 + hi / 700), step = (hmel - lmel) / (M + 2);
    for (int64_t i = 0; i < (int64_t)M + 2 && !rc; i++) {
      double f = 700 * (pow(10, ((double)i * step + lmel) / 2595) - 1), bin = floor((L + 1) * f / S);
      if (!(bin >= 0 && bin <= (double)nspec))
        rc = kiln_set_error("MelWeightMatrix: mel bin %lld (from lower_edge_hertz %g, upper_edge_hertz %g, sample_rate "
                            "%g, dft_length %g) is %g, outside [0, %lld]: the edges must lie in [0, sample_rate / 2] "
                            "(and the lower one below the upper one)",
                            (long long)i, lo, hi, S, L, bin, (long long)nspec);
    }
  }
  if (!rc) memcpy(base(h.t[5]), base(h.t[4]), kiln_dtype_bytes(h.t[4]->dtype));
  return dd_end(&h, rc);
}

const KilnBuiltin kiln_datadep_builtins[] = {
    {"runtime.dd.mel_check", f_mel_check},
    {"runtime.dd.bind", f_bind},
    {"runtime.dd.nonzero", f_nonzero},
    {"runtime.dd.compress", f_compress},
    {"runtime.dd.unique", f_unique},
    {"runtime.dd.nms", f_nms},
    {NULL, NULL},
};
