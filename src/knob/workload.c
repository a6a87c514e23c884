/*
 * workload.c - a task's workload: its name and arguments, and the
 * canonical JSON text used as a key.
 *
 * The arguments are AutoTVM's, in its order: a tensor is ["TENSOR", shape,
 * dtype], then ints, int lists, strings and null.  The key is the JSON of
 * TVM's workload tuple (name, *args) in json.dumps style, e.g.
 *   ["conv2d_NCHWc.x86", ["TENSOR", [1, 64, 56, 56], "float32"],
 *    ["TENSOR", [64, 64, 3, 3], "float32"], [1, 1], [1, 1, 1, 1], [1, 1],
 *    "NCHW", "NCHW", "float32"]
 * (on one line), so two workloads are the same task exactly when their keys
 * are equal, and a record's args parse back to the same key.
 */
#include "knob.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

Workload *wl_new(const char *name) {
  Workload *wl = KNEW(Workload);
  wl->name = kstrdup(name);
  return wl;
}

static WArg *push(Workload *wl, WArgKind k) {
  WArg *na = KNEWN(WArg, wl->nargs + 1);
  if (wl->nargs) memcpy(na, wl->args, sizeof(WArg) * (size_t)wl->nargs);
  wl->args = na;
  WArg *a = &wl->args[wl->nargs++];
  a->kind = k;
  wl->key = NULL;
  return a;
}

void wl_add_tensor(Workload *wl, int ndim, const int64_t *shape, const char *dtype) {
  WArg *a = push(wl, WARG_TENSOR);
  a->n = ndim;
  a->ints = kmemdup(shape, sizeof(int64_t) * (size_t)(ndim > 0 ? ndim : 1));
  a->s = kstrdup(dtype);
}

void wl_add_int(Workload *wl, int64_t v) { push(wl, WARG_INT)->i = v; }

void wl_add_ints(Workload *wl, int n, const int64_t *v) {
  WArg *a = push(wl, WARG_INTS);
  a->n = n;
  a->ints = kmemdup(v, sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
}

void wl_add_str(Workload *wl, const char *s) { push(wl, WARG_STR)->s = kstrdup(s); }
void wl_add_null(Workload *wl) { push(wl, WARG_NULL); }
void wl_add_float(Workload *wl, double v) { push(wl, WARG_FLOAT)->f = v; }

static void jstr(StrBuf *sb, const char *s) {
  sb_putc(sb, '"');
  for (const char *p = s; *p; p++) {
    if (*p == '"' || *p == '\\') sb_putc(sb, '\\');
    sb_putc(sb, *p);
  }
  sb_putc(sb, '"');
}

static void ints(StrBuf *sb, int n, const int64_t *v) {
  sb_putc(sb, '[');
  for (int i = 0; i < n; i++) sb_printf(sb, "%s%lld", i ? ", " : "", (long long)v[i]);
  sb_putc(sb, ']');
}

static void arg_json(StrBuf *sb, const WArg *a) {
  switch (a->kind) {
  case WARG_TENSOR:
    sb_puts(sb, "[\"TENSOR\", ");
    ints(sb, a->n, a->ints);
    sb_puts(sb, ", ");
    jstr(sb, a->s);
    sb_putc(sb, ']');
    return;
  case WARG_INT:
    sb_printf(sb, "%lld", (long long)a->i);
    return;
  case WARG_INTS:
    ints(sb, a->n, a->ints);
    return;
  case WARG_STR:
    jstr(sb, a->s);
    return;
  case WARG_NULL:
    sb_puts(sb, "null");
    return;
  case WARG_FLOAT:
    pyjson_float(sb, a->f);
    return;
  }
  KUNREACHABLE();
}

Workload *wl_finish(Workload *wl) {
  StrBuf sb = {0};
  sb_putc(&sb, '[');
  jstr(&sb, wl->name);
  for (int i = 0; i < wl->nargs; i++) {
    sb_puts(&sb, ", ");
    arg_json(&sb, &wl->args[i]);
  }
  sb_putc(&sb, ']');
  wl->key = kstrdup(sb.data);
  sb_free(&sb);
  return wl;
}

char *wl_args_json(const Workload *wl) {
  StrBuf sb = {0};
  sb_putc(&sb, '[');
  for (int i = 0; i < wl->nargs; i++) {
    if (i) sb_puts(&sb, ", ");
    arg_json(&sb, &wl->args[i]);
  }
  sb_putc(&sb, ']');
  char *s = kstrdup(sb.data);
  sb_free(&sb);
  return s;
}

static bool int_list(const cJSON *j, int *n, int64_t **out) {
  if (!cJSON_IsArray(j)) return false;
  *n = cJSON_GetArraySize(j);
  *out = KNEWN(int64_t, *n > 0 ? *n : 1);
  for (int i = 0; i < *n; i++) {
    const cJSON *x = cJSON_GetArrayItem(j, i);
    if (!pyjson_int64(x, &(*out)[i])) return false;
  }
  return true;
}

Workload *wl_from_cjson(const char *name, const struct cJSON *args) {
  if (!name || !cJSON_IsArray(args)) return kiln_set_error("workload: expected a task name and a list of arguments"), NULL;
  Workload *wl = wl_new(name);
  int n = cJSON_GetArraySize(args);
  for (int i = 0; i < n; i++) {
    const cJSON *a = cJSON_GetArrayItem(args, i);
    if (cJSON_IsNull(a)) {
      wl_add_null(wl);
    } else if (cJSON_IsBool(a)) {
      wl_add_int(wl, cJSON_IsTrue(a));
    } else if (cJSON_IsString(a)) {
      wl_add_str(wl, a->valuestring);
    } else if (cJSON_IsNumber(a)) {
      /* a number beyond double's range (1e400) reads as infinity, which JSON cannot write back */
      if (!isfinite(a->valuedouble))
        return kiln_set_error("workload '%s': argument %d is not a finite number", name, i), NULL;
      if (a->valuedouble == floor(a->valuedouble) && fabs(a->valuedouble) < 9e15)  /* JSON keeps no 1.0 vs 1 */
        wl_add_int(wl, (int64_t)a->valuedouble);
      else
        wl_add_float(wl, a->valuedouble);
    } else if (cJSON_IsArray(a)) {
      const cJSON *h = cJSON_GetArrayItem(a, 0);
      if (cJSON_IsString(h) && !strcmp(h->valuestring, "TENSOR")) {
        int nd;
        int64_t *shape;
        const cJSON *dt = cJSON_GetArrayItem(a, 2);
        if (cJSON_GetArraySize(a) != 3 || !int_list(cJSON_GetArrayItem(a, 1), &nd, &shape) || !cJSON_IsString(dt))
          return kiln_set_error("workload '%s': argument %d: expected [\"TENSOR\", shape, dtype]", name, i), NULL;
        wl_add_tensor(wl, nd, shape, dt->valuestring);
      } else {
        int cnt;
        int64_t *v;
        if (!int_list(a, &cnt, &v))
          return kiln_set_error("workload '%s': argument %d: a list that is neither a tensor nor integers", name, i),
                 NULL;
        wl_add_ints(wl, cnt, v);
      }
    } else {
      return kiln_set_error("workload '%s': argument %d has an unsupported JSON type", name, i), NULL;
    }
  }
  return wl_finish(wl);
}

Workload *wl_from_json(const char *name, const char *args_json) {
  cJSON *j = cJSON_Parse(args_json ? args_json : "");
  if (!j) return kiln_set_error("workload '%s': arguments are not valid JSON", name ? name : "?"), NULL;
  Workload *wl = wl_from_cjson(name, j);
  cJSON_Delete(j);
  return wl;
}

bool wl_equal(const Workload *a, const Workload *b) {
  const char *ka = a->key ? a->key : wl_finish((Workload *)a)->key;
  const char *kb = b->key ? b->key : wl_finish((Workload *)b)->key;
  return !strcmp(ka, kb);
}

static const char *kind_name(WArgKind k) {
  switch (k) {
  case WARG_TENSOR:
    return "a tensor";
  case WARG_INT:
    return "an integer";
  case WARG_INTS:
    return "a list of integers";
  case WARG_STR:
    return "a string";
  case WARG_NULL:
    return "null";
  case WARG_FLOAT:
    return "a float";
  }
  KUNREACHABLE();
}

const WArg *wl_arg(const Workload *wl, int i, WArgKind kind) {
  if (i >= wl->nargs)
    return kiln_set_error("workload '%s': has %d arguments, expected at least %d", wl->name, wl->nargs, i + 1), NULL;
  if (wl->args[i].kind != kind)
    return kiln_set_error("workload '%s': argument %d is %s, expected %s", wl->name, i, kind_name(wl->args[i].kind),
                          kind_name(kind)),
           NULL;
  return &wl->args[i];
}

Workload *wl_conv2d(const char *task, const int64_t dshape[4], const int64_t kshape[4], const int strides[2],
                    const int padding[4], const int dilation[2], const char *dtype, const char *out_dtype) {
  return wl_conv2d_real(task, dshape, kshape, strides, padding, dilation, dshape[1], dtype, out_dtype);
}

Workload *wl_conv2d_real(const char *task, const int64_t dshape[4], const int64_t kshape[4], const int strides[2],
                         const int padding[4], const int dilation[2], int64_t real_ic, const char *dtype,
                         const char *out_dtype) {
  Workload *wl = wl_new(task);
  wl_add_tensor(wl, 4, dshape, dtype);
  wl_add_tensor(wl, 4, kshape, dtype);
  wl_add_ints(wl, 2, (int64_t[]){strides[0], strides[1]});
  wl_add_ints(wl, 4, (int64_t[]){padding[0], padding[1], padding[2], padding[3]});
  wl_add_ints(wl, 2, (int64_t[]){dilation[0], dilation[1]});
  wl_add_str(wl, "NCHW");
  wl_add_str(wl, "NCHW");
  wl_add_str(wl, out_dtype ? out_dtype : dtype);
  if (real_ic < dshape[1]) wl_add_int(wl, real_ic);
  return wl_finish(wl);
}

Workload *wl_group_conv2d(const char *task, const int64_t dshape[4], const int64_t kshape[4], const int strides[2],
                          const int padding[4], const int dilation[2], int64_t groups, const char *dtype,
                          const char *out_dtype) {
  Workload *wl = wl_new(task);
  wl_add_tensor(wl, 4, dshape, dtype);
  wl_add_tensor(wl, 4, kshape, dtype);
  wl_add_ints(wl, 2, (int64_t[]){strides[0], strides[1]});
  wl_add_ints(wl, 4, (int64_t[]){padding[0], padding[1], padding[2], padding[3]});
  wl_add_ints(wl, 2, (int64_t[]){dilation[0], dilation[1]});
  wl_add_int(wl, groups);
  wl_add_str(wl, "NCHW");
  wl_add_str(wl, "NCHW");
  wl_add_str(wl, out_dtype ? out_dtype : dtype);
  return wl_finish(wl);
}

Workload *wl_dense(const char *task, int64_t M, int64_t N, int64_t K, const char *dtype, const char *out_dtype) {
  Workload *wl = wl_new(task);
  wl_add_tensor(wl, 2, (int64_t[]){M, K}, dtype);
  wl_add_tensor(wl, 2, (int64_t[]){N, K}, dtype);
  wl_add_null(wl);
  wl_add_str(wl, out_dtype ? out_dtype : dtype);
  return wl_finish(wl);
}

Workload *wl_batch_matmul(const char *task, int64_t batch, int64_t M, int64_t N, int64_t K, const char *dtype,
                          const char *out_dtype) {
  Workload *wl = wl_new(task);
  wl_add_tensor(wl, 3, (int64_t[]){batch, M, K}, dtype);
  wl_add_tensor(wl, 3, (int64_t[]){batch, K, N}, dtype);
  wl_add_null(wl);
  wl_add_str(wl, out_dtype ? out_dtype : dtype);
  return wl_finish(wl);
}

static int parse_dtype(const Workload *wl, const char *s, DType *out) {
  if (dt_parse(s, out) || out->lanes != 1)
    return kiln_set_error("workload '%s': unknown dtype '%s'", wl->name, s);
  return 0;
}

Workload *wl_cuda_conv2d(const char *task, const int64_t dshape[4], const int64_t kshape[4], const int strides[2],
                         const int padding[4], const int dilation[2], const char *dtype, const char *out_dtype) {
  Workload *wl = wl_new(task);
  wl_add_tensor(wl, 4, dshape, dtype);
  wl_add_tensor(wl, 4, kshape, dtype);
  wl_add_ints(wl, 2, (int64_t[]){strides[0], strides[1]});
  if (padding[0] == padding[2] && padding[1] == padding[3])
    wl_add_ints(wl, 2, (int64_t[]){padding[0], padding[1]});
  else
    wl_add_ints(wl, 4, (int64_t[]){padding[0], padding[1], padding[2], padding[3]});
  wl_add_ints(wl, 2, (int64_t[]){dilation[0], dilation[1]});
  if (!strstr(task, "depthwise")) wl_add_str(wl, "NCHW");
  wl_add_str(wl, out_dtype ? out_dtype : dtype);
  return wl_finish(wl);
}

/* The argument forms a conv workload comes in: where its layouts and
 * out_dtype are (-1: absent), and whether a depthwise kernel is TVM's
 * NCHW [C, multiplier, KH, KW]. */
typedef struct ConvForm {
  const char *prefix;
  int nargs, layout, out_layout, out_dtype;
  bool depthwise, kernel_cm;
} ConvForm;

static const ConvForm conv_forms[] = {
    {"topi_nn_depthwise_conv2d_nchw", 6, -1, -1, 5, true, true},
    {"topi_nn_conv2d", 7, 5, -1, 6, false, false},
    {"depthwise", 8, 5, 6, 7, true, false},
    {"", 8, 5, 6, 7, false, false},
};

int wl_conv2d_parse(const Workload *wl, Conv2DWorkload *c) {
  memset(c, 0, sizeof *c);
  const ConvForm *form = NULL;
  for (size_t i = 0; i < sizeof conv_forms / sizeof conv_forms[0] && !form; i++)
    if (!strncmp(wl->name, conv_forms[i].prefix, strlen(conv_forms[i].prefix))) form = &conv_forms[i];
  const WArg *d = wl_arg(wl, 0, WARG_TENSOR), *k = d ? wl_arg(wl, 1, WARG_TENSOR) : NULL;
  const WArg *st = k ? wl_arg(wl, 2, WARG_INTS) : NULL, *pd = st ? wl_arg(wl, 3, WARG_INTS) : NULL;
  const WArg *dl = pd ? wl_arg(wl, 4, WARG_INTS) : NULL;
  /* a grouped task carries groups after dilation (wl_group_conv2d) */
  bool grouped = dl && !form->kernel_cm && wl->nargs > 5 && wl->args[5].kind == WARG_INT;
  int shift = grouped ? 1 : 0;
  const WArg *lay = dl && form->layout >= 0 ? wl_arg(wl, form->layout + shift, WARG_STR) : NULL;
  const WArg *olay = dl && form->out_layout >= 0 ? wl_arg(wl, form->out_layout + shift, WARG_STR) : NULL;
  const WArg *odt = dl ? wl_arg(wl, form->out_dtype + shift, WARG_STR) : NULL;
  if (!odt || (form->layout >= 0 && !lay) || (form->out_layout >= 0 && !olay)) return -1;
  /* a plain conv reading a channel-padded input carries its real input
   * channels last (wl_conv2d_real) */
  bool real = !grouped && !form->depthwise && form->out_layout >= 0 && wl->nargs == form->nargs + 1 &&
              wl->args[form->nargs].kind == WARG_INT;
  if (wl->nargs != form->nargs + shift + real)
    return kiln_set_error("workload '%s': %d arguments, expected %d", wl->name, wl->nargs, form->nargs + shift);
  c->groups = grouped ? wl->args[5].i : 1;
  if (d->n != 4 || k->n != 4)
    return kiln_set_error("workload '%s': data and kernel must be 4-D (NCHW, OIHW); got %d-D and %d-D", wl->name, d->n,
                          k->n);
  if ((lay && strcmp(lay->s, "NCHW")) || (olay && strcmp(olay->s, "NCHW")))
    return kiln_set_error("workload '%s': layouts '%s'/'%s', expected NCHW (the task is keyed by its NCHW form)",
                          wl->name, lay ? lay->s : "NCHW", olay ? olay->s : "NCHW");
  if (st->n != 2 || dl->n != 2 || (pd->n != 4 && pd->n != 2))
    return kiln_set_error("workload '%s': expected strides [2], padding [2] or [4] and dilation [2]", wl->name);
  if (parse_dtype(wl, d->s, &c->dtype) || parse_dtype(wl, odt->s, &c->out_dtype)) return -1;
  c->N = d->ints[0], c->IC = d->ints[1], c->IH = d->ints[2], c->IW = d->ints[3];
  c->OC = k->ints[0], c->KH = k->ints[2], c->KW = k->ints[3];
  c->sh = (int)st->ints[0], c->sw = (int)st->ints[1];
  c->dh = (int)dl->ints[0], c->dw = (int)dl->ints[1];
  if (pd->n == 4) c->pt = (int)pd->ints[0], c->pl = (int)pd->ints[1], c->pb = (int)pd->ints[2], c->pr = (int)pd->ints[3];
  else c->pt = c->pb = (int)pd->ints[0], c->pl = c->pr = (int)pd->ints[1];
  int64_t groups = c->groups;
  c->depthwise = form->depthwise;
  for (int i = 0; i < 4; i++)
    if (d->ints[i] < 1 || k->ints[i] < 1) return kiln_set_error("workload '%s': shapes must be positive", wl->name);
  if (c->sh < 1 || c->sw < 1 || c->dh < 1 || c->dw < 1 || c->pt < 0 || c->pl < 0 || c->pb < 0 || c->pr < 0)
    return kiln_set_error("workload '%s': strides and dilation must be positive, padding non-negative", wl->name);
  if (form->kernel_cm) {
    if (k->ints[0] != c->IC)
      return kiln_set_error("workload '%s': a depthwise kernel is [C, multiplier, KH, KW]; got [%lld, ...] for %lld "
                            "input channels",
                            wl->name, (long long)k->ints[0], (long long)c->IC);
    c->multiplier = k->ints[1];
    c->OC = c->IC * c->multiplier;
    c->groups = c->IC;
  } else if (c->depthwise) {
    if (k->ints[1] != 1 || c->OC % c->IC)
      return kiln_set_error("workload '%s': a depthwise kernel is [C * multiplier, 1, KH, KW]; got [%lld, %lld, ...] "
                            "for %lld input channels",
                            wl->name, (long long)k->ints[0], (long long)k->ints[1], (long long)c->IC);
    c->multiplier = c->OC / c->IC;
    c->groups = c->IC;
  } else if (groups < 1 || c->IC % groups || c->OC % groups) {
    return kiln_set_error("workload '%s': groups = %lld must be positive and divide the %lld input and %lld output "
                          "channels",
                          wl->name, (long long)groups, (long long)c->IC, (long long)c->OC);
  } else if (k->ints[1] * groups != c->IC) {
    return kiln_set_error("workload '%s': kernel has %lld input channels%s, data has %lld", wl->name,
                          (long long)k->ints[1], groups > 1 ? kfmt(" per group (x %lld groups)", (long long)groups) : "",
                          (long long)c->IC);
  }
  c->real_ic = real ? wl->args[form->nargs].i : c->IC;
  if (c->real_ic < 1 || c->real_ic > c->IC)
    return kiln_set_error("workload '%s': %lld real input channels, expected 1 to the %lld channels", wl->name,
                          (long long)c->real_ic, (long long)c->IC);
  int64_t ekh = (c->KH - 1) * c->dh + 1, ekw = (c->KW - 1) * c->dw + 1;
  c->OH = (c->IH + c->pt + c->pb - ekh) / c->sh + 1;
  c->OW = (c->IW + c->pl + c->pr - ekw) / c->sw + 1;
  if (c->IH + c->pt + c->pb < ekh || c->IW + c->pl + c->pr < ekw)
    return kiln_set_error("workload '%s': the kernel window is larger than the padded input", wl->name);
  return 0;
}

int wl_dense_parse(const Workload *wl, DenseWorkload *dn) {
  memset(dn, 0, sizeof *dn);
  const WArg *d = wl_arg(wl, 0, WARG_TENSOR), *w = d ? wl_arg(wl, 1, WARG_TENSOR) : NULL;
  if (!w) return -1;
  if (wl->nargs < 4) return kiln_set_error("workload '%s': expected data, weight, bias, out_dtype", wl->name);
  if (d->n != 2 || w->n != 2 || d->ints[1] != w->ints[1])
    return kiln_set_error("workload '%s': expected data [M, K] and weight [N, K]", wl->name);
  if (wl->args[3].kind != WARG_STR && wl->args[3].kind != WARG_NULL)
    return kiln_set_error("workload '%s': argument 3 (out_dtype) must be a string or null", wl->name);
  if (parse_dtype(wl, d->s, &dn->dtype)) return -1;
  dn->out_dtype = dn->dtype;
  if (wl->args[3].kind == WARG_STR && parse_dtype(wl, wl->args[3].s, &dn->out_dtype)) return -1;
  dn->M = d->ints[0], dn->K = d->ints[1], dn->N = w->ints[0];
  if (dn->M < 1 || dn->N < 1 || dn->K < 1) return kiln_set_error("workload '%s': shapes must be positive", wl->name);
  return 0;
}

int wl_batch_matmul_parse(const Workload *wl, BatchMatmulWorkload *bm) {
  memset(bm, 0, sizeof *bm);
  const WArg *a = wl_arg(wl, 0, WARG_TENSOR), *b = a ? wl_arg(wl, 1, WARG_TENSOR) : NULL;
  if (!b) return -1;
  if (wl->nargs < 4 || wl->args[3].kind != WARG_STR)
    return kiln_set_error("workload '%s': expected a, b, out_shape (null), out_dtype", wl->name);
  if (a->n != 3 || b->n != 3 || a->ints[0] != b->ints[0] || a->ints[2] != b->ints[1])
    return kiln_set_error("workload '%s': expected a [batch, M, K] and b [batch, K, N]", wl->name);
  if (parse_dtype(wl, a->s, &bm->dtype) || parse_dtype(wl, wl->args[3].s, &bm->out_dtype)) return -1;
  bm->batch = a->ints[0], bm->M = a->ints[1], bm->K = a->ints[2], bm->N = b->ints[2];
  if (bm->batch < 1 || bm->M < 1 || bm->N < 1 || bm->K < 1)
    return kiln_set_error("workload '%s': shapes must be positive", wl->name);
  return 0;
}

/* A convolution's geometry from any backend's workload: data and kernel
 * tensors (NCHW / OIHW, or [C, multiplier, KH, KW] for TVM's depthwise),
 * strides, padding (2 or 4) and dilation, whatever follows. */
typedef struct ConvGeom {
  int64_t d[4], k[4], oc, oh, ow;
  int64_t st[2], pad[4], dil[2];
  bool depthwise;
} ConvGeom;

static bool conv_geom(const Workload *wl, ConvGeom *g) {
  memset(g, 0, sizeof *g);
  if (!strstr(wl->name, "conv2d") || strstr(wl->name, "transpose") || wl->nargs < 4) return false;
  const WArg *d = &wl->args[0], *k = &wl->args[1], *st = &wl->args[2], *pd = &wl->args[3];
  if (d->kind != WARG_TENSOR || k->kind != WARG_TENSOR || d->n != 4 || k->n != 4) return false;
  if (st->kind != WARG_INTS || st->n != 2 || pd->kind != WARG_INTS || (pd->n != 2 && pd->n != 4)) return false;
  for (int i = 0; i < 4; i++) g->d[i] = d->ints[i], g->k[i] = k->ints[i];
  g->st[0] = st->ints[0], g->st[1] = st->ints[1];
  if (pd->n == 4)
    for (int i = 0; i < 4; i++) g->pad[i] = pd->ints[i];
  else
    g->pad[0] = g->pad[2] = pd->ints[0], g->pad[1] = g->pad[3] = pd->ints[1];
  g->dil[0] = g->dil[1] = 1;
  if (wl->nargs > 4 && wl->args[4].kind == WARG_INTS && wl->args[4].n == 2)
    g->dil[0] = wl->args[4].ints[0], g->dil[1] = wl->args[4].ints[1];
  g->depthwise = strstr(wl->name, "depthwise") != NULL;
  /* x86 depthwise kernels are [C * m, 1, KH, KW]; TVM's NCHW ones [C, m, KH, KW] */
  g->oc = g->depthwise && g->k[0] == g->d[1] && g->k[1] > 1 ? g->k[0] * g->k[1] : g->k[0];
  if (g->st[0] < 1 || g->st[1] < 1 || g->dil[0] < 1 || g->dil[1] < 1) return false;
  g->oh = (g->d[2] + g->pad[0] + g->pad[2] - ((g->k[2] - 1) * g->dil[0] + 1)) / g->st[0] + 1;
  g->ow = (g->d[3] + g->pad[1] + g->pad[3] - ((g->k[3] - 1) * g->dil[1] + 1)) / g->st[1] + 1;
  return g->oh > 0 && g->ow > 0;
}

/* Dense from any backend: data [M, K] and weight [N, K] first. */
static bool dense_geom(const Workload *wl, int64_t *M, int64_t *N, int64_t *K) {
  if (!strstr(wl->name, "dense") || wl->nargs < 2) return false;
  const WArg *d = &wl->args[0], *w = &wl->args[1];
  if (d->kind != WARG_TENSOR || w->kind != WARG_TENSOR || d->n != 2 || w->n != 2 || d->ints[1] != w->ints[1]) return false;
  *M = d->ints[0], *K = d->ints[1], *N = w->ints[0];
  return true;
}

/* Kiln's batch_matmul.x86: a [B, M, K] and b [B, K, N] first. */
static bool bmm_geom(const Workload *wl, int64_t *B, int64_t *M, int64_t *N, int64_t *K) {
  if (strcmp(wl->name, "batch_matmul.x86") || wl->nargs < 2) return false;
  const WArg *a = &wl->args[0], *b = &wl->args[1];
  if (a->kind != WARG_TENSOR || b->kind != WARG_TENSOR || a->n != 3 || b->n != 3 || a->ints[2] != b->ints[1]) return false;
  *B = a->ints[0], *M = a->ints[1], *K = a->ints[2], *N = b->ints[2];
  return true;
}

/* The share of a conv's input channels its reduction reads: real_ic / IC
 * for a channel-padded input (wl_conv2d_real), else 1. */
static double real_share(const Workload *wl) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) {
    kiln_clear_error();
    return 1;
  }
  return (double)c.real_ic / (double)c.IC;
}

double wl_flops(const Workload *wl) {
  ConvGeom g;
  int64_t M, N, K;
  if (conv_geom(wl, &g)) {
    /* the kernel's input channels are those of one group (all of them
     * for a plain conv) */
    double per_out = (double)(g.depthwise ? 1 : g.k[1]) * (double)g.k[2] * (double)g.k[3];
    return 2.0 * (double)g.d[0] * (double)g.oc * (double)g.oh * (double)g.ow * per_out * real_share(wl);
  }
  if (dense_geom(wl, &M, &N, &K)) return 2.0 * (double)M * (double)N * (double)K;
  int64_t B;
  if (bmm_geom(wl, &B, &M, &N, &K)) return 2.0 * (double)B * (double)M * (double)N * (double)K;
  return 0;
}

const char *wl_describe(const Workload *wl) {
  ConvGeom g;
  int64_t M, N, K;
  if (conv_geom(wl, &g)) {
    bool sym = g.pad[0] == g.pad[1] && g.pad[1] == g.pad[2] && g.pad[2] == g.pad[3];
    bool grouped = wl->nargs > 5 && wl->args[5].kind == WARG_INT && wl->args[5].i > 1;
    return kfmt("[(%lld,%lld,%lld,%lld),(%lld,%lld,%lld,%lld)] s%lld p%s%s", (long long)g.d[0], (long long)g.d[1],
                (long long)g.d[2], (long long)g.d[3], (long long)g.k[0], (long long)g.k[1], (long long)g.k[2],
                (long long)g.k[3], (long long)g.st[0],
                sym ? kfmt("%lld", (long long)g.pad[0])
                    : kfmt("%lld,%lld,%lld,%lld", (long long)g.pad[0], (long long)g.pad[1], (long long)g.pad[2],
                           (long long)g.pad[3]),
                grouped ? kfmt(" g%lld", (long long)wl->args[5].i) : "");
  }
  if (dense_geom(wl, &M, &N, &K))
    return kfmt("[(%lld,%lld),(%lld,%lld)]", (long long)M, (long long)K, (long long)N, (long long)K);
  return wl_args_json(wl);
}
