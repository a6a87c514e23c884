/*
 * strings.c - ONNX's string operators (StringConcat, StringNormalizer,
 * RegexFullMatch, Equal and Cast on strings) and ai.onnx.ml's LabelEncoder:
 * each becomes one host op (src/graph/ops/strings.c) whose runtime
 * function does the work; the node's attributes travel to it as a JSON
 * object ("host_attrs").  docs/strings.md has the design.
 *
 * StringNormalizer with stopwords keeps as many words as the text has
 * that are not stopwords: a data-dependent host op (its size reported by
 * the runtime function, docs/symbolic_shapes.md section 4c).  StringSplit
 * makes as many pieces as the text has, with no bound known before the
 * run: its size starts at a guess the executor grows (grow-and-retry).
 */
#include "ops.h"

#include <cjson/cJSON.h>

/* The ops whose handlers take string inputs; any other op given one is
 * refused by the importer before its handler runs. */
static const char *const string_ops[] = {"StringConcat", "StringNormalizer", "RegexFullMatch", "StringSplit",
                                         "Equal", "Cast", "CastLike", "LabelEncoder", NULL};

bool onnx_op_takes_strings(const char *op_type) {
  for (int i = 0; string_ops[i]; i++)
    if (!strcmp(string_ops[i], op_type)) return true;
  return false;
}

/* A host op call with attrs (cJSON object, deleted here) and the output
 * dtype `to` (for the ops whose type follows it). */
static GNode *host_call(Importer *im, const char *op, int nargs, GNode **args, cJSON *attrs, const char *to) {
  char *text = cJSON_PrintUnformatted(attrs);
  cJSON_Delete(attrs);
  GAttrs a = gattrs_new();
  ga_str(&a, "host_attrs", kstrdup(text));
  free(text);
  if (to) ga_str(&a, "dtype", to);
  return imp_call(im, op, nargs, args, a);
}

static bool is_str(GNode *x) { return x && dt_is_string(x->type.dtype); }

GNode *onnx_string_cast(Importer *im, GNode *x, DType to) {
  if (dt_is_string(x->type.dtype) && dt_is_string(to)) return x;
  if (!dt_is_string(x->type.dtype) && !dt_is_string(to)) return imp_cast(im, x, to);
  DType num = dt_is_string(to) ? x->type.dtype : to;
  if (!(dt_is_float(num) || dt_is_intlike(num)) || num.code == kDLBfloat)
    return imp_error(im, "Cast between string and %s is not supported", dt_str(num)), NULL;
  return host_call(im, "strings.cast", 1, &x, cJSON_CreateObject(), dt_str(to));
}

int onnx_h_StringConcat(Importer *im) {
  GNode *a[2] = {imp_input(im, 0), imp_input(im, 1)};
  if (!is_str(a[0]) || !is_str(a[1])) return imp_error(im, "both inputs must be string tensors");
  return out0(im, host_call(im, "strings.concat", 2, a, cJSON_CreateObject(), NULL));
}

int onnx_string_equal(Importer *im, GNode *a, GNode *b) {
  if (!is_str(a) || !is_str(b)) return imp_error(im, "Equal compares a string tensor only with another string tensor");
  GNode *args[2] = {a, b};
  return out0(im, host_call(im, "strings.equal", 2, args, cJSON_CreateObject(), NULL));
}

int onnx_h_StringNormalizer(Importer *im) {
  GNode *x = in0(im);
  if (!is_str(x)) return imp_error(im, "input must be a string tensor, got %s", ttype_str(&x->type));
  if (x->type.ndim != 1 && !(x->type.ndim == 2 && x->type.shape[0] == 1))
    return imp_error(im, "input must be [C] or [1, C] (ONNX's schema), got %s", ttype_str(&x->type));
  const char *mode = onnx_attr_string(N(im), "case_change_action", "NONE");
  if (strcmp(mode, "NONE") && strcmp(mode, "LOWER") && strcmp(mode, "UPPER"))
    return imp_error(im, "case_change_action must be NONE, LOWER or UPPER, got '%s'", mode);
  const char *loc = onnx_attr_string(N(im), "locale", "");
  if (*loc && strncmp(loc, "en", 2) && strcmp(loc, "C"))
    return imp_error(im, "locale '%s' is not supported: Kiln changes case with Unicode's default mapping (C.UTF-8), "
                         "which matches ONNX's default en_US", loc);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "case_change_action", mode);
  int nstop = 0;
  const char *const *stop = onnx_attr_strings(N(im), "stopwords", &nstop);
  if (nstop <= 0) return out0(im, host_call(im, "strings.normalize", 1, &x, o, NULL));
  /* with stopwords the number of words kept is the data's: a size the
   * runtime function reports (at most the C words; at least 1, since an
   * all-stopword input gives one empty string) */
  cJSON *sw = cJSON_AddArrayToObject(o, "stopwords");
  for (int i = 0; i < nstop; i++) cJSON_AddItemToArray(sw, cJSON_CreateString(stop[i] ? stop[i] : ""));
  cJSON_AddNumberToObject(o, "is_case_sensitive", onnx_attr_int(N(im), "is_case_sensitive", 0) != 0);
  int nd = x->type.ndim;
  int64_t c = x->type.shape[nd - 1], shape[2] = {1, 1};
  GSym *sym = onnx_dd_size_sym(im, 0, c);
  if (!sym) return -1;
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  kiln_arena_push(imp_graph(im)->arena);
  const char *ha = kstrdup(text);
  Expr *cap = ir_int(c, DT_I32);
  kiln_arena_pop();
  free(text);
  return out0(im, onnx_dd_call(im, "strings.normalize_words", 1, &x, DT_STRING, nd, shape, NULL, nd - 1, sym, cap, ha));
}

int onnx_h_RegexFullMatch(Importer *im) {
  GNode *x = in0(im);
  if (!is_str(x)) return imp_error(im, "input must be a string tensor, got %s", ttype_str(&x->type));
  const char *pat = onnx_attr_string(N(im), "pattern", NULL);
  if (!pat) return imp_error(im, "needs the attribute 'pattern'");
  /* the runtime's engine says now whether it takes the pattern */
  KilnFunction *check = NULL;
  KilnValue arg = {.v_str = pat};
  int code = KILN_STR;
  if (kiln_func_get_global("runtime.strings.regex_check", &check) || !check)
    return imp_error(im, "the runtime has no regex engine (runtime.strings.regex_check)");
  int bad = kiln_func_call(check, &arg, &code, 1, NULL, NULL);
  kiln_func_free(check);
  if (bad) return imp_error(im, "%s", kiln_last_error());
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "pattern", pat);
  return out0(im, host_call(im, "strings.regex_full_match", 1, &x, o, NULL));
}

/* StringSplit: Y, each string's pieces padded with "" to the most any
 * string has (a size the runtime function reports), and Z, the pieces per
 * string.  With maxsplit the most is at most maxsplit + 1; without, nothing
 * bounds it before the run (a string of n bytes may give n + 1 pieces), so
 * the call's size starts at a guess that the executor grows when the text
 * needs more (grow-and-retry, docs/symbolic_shapes.md section 4c). */
#define SPLIT_FIRST_GUESS 8

int onnx_h_StringSplit(Importer *im) {
  GNode *x = in0(im);
  if (!is_str(x)) return imp_error(im, "input must be a string tensor, got %s", ttype_str(&x->type));
  int nd = x->type.ndim;
  if (nd + 1 > MAXD) return imp_error(im, "input has %d dimensions, at most %d are supported", nd, MAXD - 1);
  if (ttype_is_symbolic(&x->type)) return imp_error(im, "input's shape must be static, got %s", ttype_str(&x->type));
  int64_t max = onnx_attr_int(N(im), "maxsplit", -1);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "delimiter", onnx_attr_string(N(im), "delimiter", ""));
  cJSON_AddNumberToObject(o, "maxsplit", (double)(max < 0 ? -1 : max));
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  kiln_arena_push(imp_graph(im)->arena);
  const char *ha = kstrdup(text);
  kiln_arena_pop();
  free(text);
  if (imp_want_output(im, 1) &&
      imp_set_output(im, 1, host_call(im, "strings.split_count", 1, &x, cJSON_Parse(ha), NULL)))
    return -1;
  if (!imp_want_output(im, 0)) return 0;
  bool bounded = max >= 0 && max < GRAPH_MAX_ELEMS;
  GSym *sym = onnx_dd_size_sym(im, 0, bounded ? max + 1 : GRAPH_MAX_ELEMS);
  if (!sym) return -1;
  int64_t shape[MAXD];
  memcpy(shape, x->type.shape, sizeof(int64_t) * (size_t)nd);
  kiln_arena_push(imp_graph(im)->arena);
  Expr *cap = ir_int(bounded ? max + 1 : SPLIT_FIRST_GUESS, DT_I32);
  kiln_arena_pop();
  return imp_set_output(im, 0, onnx_dd_call_grow(im, "strings.split", 1, &x, DT_STRING, nd + 1, shape, NULL, nd, sym,
                                                 cap, ha, !bounded));
}

/* ---- LabelEncoder ---- */

/* A value of a keys/values/default attribute as text, in dtype *dt. */
typedef struct LabelList {
  int n;
  const char **text;
  DType dt;
  bool set;
} LabelList;

/* Element i of a decoded numeric TensorProto of type dt. */
static double tensor_value(const OnnxTensor *t, DType dt, int64_t i) {
  const char *p = t->data;
  if (dt_is_float(dt))
    return dt.bits == 16 ? (double)((const _Float16 *)p)[i] : dt.bits == 32 ? ((const float *)p)[i] : ((const double *)p)[i];
  switch (dt.bits) {
  case 8: return dt_is_int(dt) ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
  case 16: return dt_is_int(dt) ? ((const int16_t *)p)[i] : ((const uint16_t *)p)[i];
  case 32: return dt_is_int(dt) ? (double)((const int32_t *)p)[i] : (double)((const uint32_t *)p)[i];
  default: return (double)((const int64_t *)p)[i];
  }
}

static const char *num_text(double v, DType dt) {
  if (dt_is_float(dt)) return kfmt("%.17g", v);
  return kfmt("%lld", (long long)v);
}

/* One of the typed attribute families: NAME_strings, NAME_int64s,
 * NAME_floats (default_: _string, _int64, _float), and opset 4's
 * NAME_tensor. */
static int label_list(Importer *im, const char *name, bool single, LabelList *out) {
  memset(out, 0, sizeof *out);
  const OnnxNode *n = N(im);
  int cnt = 0;
  char key[64];
  snprintf(key, sizeof key, single ? "%s_string" : "%s_strings", name);
  if (onnx_attr_has(n, key)) {
    out->dt = DT_STRING;
    out->set = true;
    if (single) {
      out->n = 1;
      out->text = KNEWN(const char *, 1);
      out->text[0] = onnx_attr_string(n, key, "");
    } else {
      const char **s = onnx_attr_strings(n, key, &cnt);
      out->n = cnt;
      out->text = KNEWN(const char *, cnt + 1);
      for (int i = 0; i < cnt; i++) out->text[i] = s[i];
    }
    return 0;
  }
  snprintf(key, sizeof key, single ? "%s_int64" : "%s_int64s", name);
  if (onnx_attr_has(n, key)) {
    out->dt = DT_I64;
    out->set = true;
    if (single) {
      out->n = 1;
      out->text = KNEWN(const char *, 1);
      out->text[0] = kfmt("%lld", (long long)onnx_attr_int(n, key, 0));
    } else {
      const int64_t *v = onnx_attr_ints(n, key, &cnt);
      out->n = cnt;
      out->text = KNEWN(const char *, cnt + 1);
      for (int i = 0; i < cnt; i++) out->text[i] = kfmt("%lld", (long long)v[i]);
    }
    return 0;
  }
  snprintf(key, sizeof key, single ? "%s_float" : "%s_floats", name);
  if (onnx_attr_has(n, key)) {
    out->dt = DT_F32;
    out->set = true;
    if (single) {
      out->n = 1;
      out->text = KNEWN(const char *, 1);
      out->text[0] = num_text(onnx_attr_float(n, key, 0), DT_F32);
    } else {
      const float *v = onnx_attr_floats(n, key, &cnt);
      out->n = cnt;
      out->text = KNEWN(const char *, cnt + 1);
      for (int i = 0; i < cnt; i++) out->text[i] = num_text(v[i], DT_F32);
    }
    return 0;
  }
  snprintf(key, sizeof key, "%s_tensor", name);
  const OnnxTensor *t = onnx_attr_has(n, key) ? onnx_attr_tensor(n, key) : NULL;
  if (t) {
    out->set = true;
    out->n = (int)t->numel;
    out->text = KNEWN(const char *, t->numel + 1);
    if (t->elem_type == ONNX_DT_STRING) {
      out->dt = DT_STRING;
      for (int64_t i = 0; i < t->numel; i++) out->text[i] = t->strings[i];
      return 0;
    }
    if (onnx_tensor_dtype(t, &out->dt)) return imp_error(im, "%s: %s", key, kiln_get_error());
    if (!(dt_is_float(out->dt) || dt_is_intlike(out->dt)) || out->dt.code == kDLBfloat || out->dt.bits == 1)
      return imp_error(im, "%s: type %s is not supported", key, dt_str(out->dt));
    for (int64_t i = 0; i < t->numel; i++) out->text[i] = num_text(tensor_value(t, out->dt, i), out->dt);
  }
  return 0;
}

int onnx_h_LabelEncoder(Importer *im) {
  GNode *x = in0(im);
  LabelList keys, vals, def;
  if (label_list(im, "keys", false, &keys) || label_list(im, "values", false, &vals) ||
      label_list(im, "default", true, &def))
    return -1;
  if (!keys.set || !vals.set) return imp_error(im, "needs keys and values");
  if (keys.n != vals.n)
    return imp_error(im, "has %d keys but %d values: they must pair up", keys.n, vals.n);
  if (!dt_eq(keys.dt, x->type.dtype) && !(dt_is_float(keys.dt) && dt_is_float(x->type.dtype)) &&
      !(dt_is_int(keys.dt) && dt_is_int(x->type.dtype)))
    return imp_error(im, "keys are %s but the input is %s", dt_str(keys.dt), dt_str(x->type.dtype));
  if (def.set && def.n != 1) return imp_error(im, "default_tensor must hold one value, got %d", def.n);
  if (def.set && dt_is_string(def.dt) != dt_is_string(vals.dt))
    return imp_error(im, "the default is %s but the values are %s", dt_str(def.dt), dt_str(vals.dt));
  const char *dflt = def.set ? def.text[0] : dt_is_string(vals.dt) ? "_Unused" : dt_is_float(vals.dt) ? "-0.0" : "-1";
  /* the output takes the values' type; a keys/values tensor of another
   * width than the input's keeps the input's (the mapping compares values) */
  DType out_t = vals.dt;
  cJSON *o = cJSON_CreateObject(), *k = cJSON_AddArrayToObject(o, "keys"), *v = cJSON_AddArrayToObject(o, "values");
  for (int i = 0; i < keys.n; i++) {
    cJSON_AddItemToArray(k, cJSON_CreateString(keys.text[i]));
    cJSON_AddItemToArray(v, cJSON_CreateString(vals.text[i]));
  }
  cJSON_AddStringToObject(o, "default", dflt);
  return out0(im, host_call(im, "strings.label_encode", 1, &x, o, dt_str(out_t)));
}
