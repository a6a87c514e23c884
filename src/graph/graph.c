/*
 * graph.c - graph nodes, types and attributes, and the builders.
 *
 * Everything a graph allocates lives in its own arena; builders push that
 * arena while they work so callers need not.  Constant values are Kiln
 * arrays owned by the graph (freed with it); a pass that copies a constant
 * into a new graph takes a view, which shares the data by reference.
 */
#include "graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

Graph *graph_new(void) {
  KArena *a = kiln_arena_new();
  kiln_arena_push(a);
  Graph *g = KNEW(Graph);
  kiln_arena_pop();
  g->arena = a;
  return g;
}

void graph_add_body(Graph *g, Graph *body) {
  kiln_arena_push(g->arena); /* the list lives in the graph's arena */
  av_push(&g->bodies, body);
  kiln_arena_pop();
}

void graph_move_bodies(Graph *to, Graph *from) {
  for (int i = 0; i < from->bodies.len; i++) graph_add_body(to, from->bodies.data[i]);
  memset(&from->bodies, 0, sizeof from->bodies);
}

void graph_free(Graph *g) {
  if (!g) return;
  for (int i = 0; i < g->bodies.len; i++) graph_free(g->bodies.data[i]);
  for (int i = 0; i < g->owned.len; i++) kiln_array_free(g->owned.data[i]);
  kiln_arena_free(g->arena);
}

TType ttype(DType dt, int ndim, const int64_t *shape) {
  TType t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.ndim = ndim;
  for (int i = 0; i < ndim && i < GRAPH_MAX_DIMS; i++) t.shape[i] = shape[i];
  return t;
}

int64_t ttype_numel(const TType *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++)
    if (__builtin_mul_overflow(n, t->shape[i], &n)) return INT64_MAX;
  return n;
}

int ttype_check(const TType *t, const char *what) {
  for (int i = 0; i < t->ndim; i++)
    if (t->shape[i] < 0) return kiln_set_error("%s: dimension %d is negative (%lld)", what, i, (long long)t->shape[i]);
  int64_t n = ttype_numel(t);
  if (n > GRAPH_MAX_ELEMS)
    return kiln_set_error("%s: %s has %s%lld elements, more than Kiln supports (2^31 - 1: generated code indexes "
                          "tensors with 32-bit integers); use smaller shapes (a smaller batch or sequence)",
                          what, ttype_str(t), n == INT64_MAX ? "over " : "", (long long)n);
  return 0;
}

bool ttype_eq(const TType *a, const TType *b) {
  if (!dt_eq(a->dtype, b->dtype) || a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return false;
  if (!ttype_is_symbolic(a) && !ttype_is_symbolic(b)) return true;
  for (int i = 0; i < a->ndim; i++) {
    Expr *x = a->sym ? a->sym->dim[i] : NULL, *y = b->sym ? b->sym->dim[i] : NULL;
    if (!x != !y) return false;
    if (x && strcmp(ir_expr_str(x), ir_expr_str(y))) return false; /* both simplified: canonical text */
  }
  return true;
}

const char *ttype_str(const TType *t) {
  StrBuf sb = {0};
  sb_puts(&sb, "Tensor[(");
  for (int i = 0; i < t->ndim; i++) {
    if (i) sb_puts(&sb, ", ");
    if (t->sym && t->sym->dim[i]) ir_print_expr(&sb, t->sym->dim[i]);
    else sb_printf(&sb, "%lld", (long long)t->shape[i]);
  }
  if (t->ndim == 1) sb_putc(&sb, ',');
  sb_printf(&sb, "), %s]", dt_str(t->dtype));
  const char *r = kstrdup(sb.data);
  sb_free(&sb);
  return r;
}

static GNode *new_node(Graph *g, GNodeKind k, const char *name) {
  GNode *n = KNEW(GNode);
  n->kind = k;
  n->name = name ? kstrdup(name) : "";
  n->id = g->nodes.len;
  av_push(&g->nodes, n);
  return n;
}

GNode *graph_var(Graph *g, const char *name, TType t) {
  kiln_arena_push(g->arena);
  GNode *n = new_node(g, GN_VAR, name);
  n->type = t;
  kiln_arena_pop();
  return n;
}

GNode *graph_const(Graph *g, const char *name, DLTensor *value) {
  if (!value) return NULL;
  if (value->ndim > GRAPH_MAX_DIMS) {
    kiln_array_free(value);
    return kiln_set_error("constant '%s' has %d dimensions (at most %d supported)", name ? name : "", value->ndim,
                          GRAPH_MAX_DIMS),
           NULL;
  }
  kiln_arena_push(g->arena);
  const char *nm = name && *name ? name : kfmt("const%d", g->next_const++);
  GNode *n = new_node(g, GN_CONST, nm);
  n->value = value;
  n->type = ttype(value->dtype, value->ndim, value->shape);
  av_push(&g->owned, value);
  kiln_arena_pop();
  return n;
}

GNode *graph_scalar(Graph *g, double v, DType t) {
  DLTensor *a;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(0, NULL, t, cpu, &a)) return NULL;
  void *p = a->data;
  /* An integer scalar is converted through int64 (narrower types wrap, as
   * C's integer conversions define); a value no int64 or uint64 can hold
   * (NaN, +-inf, beyond 2^64 or below -2^63) is an error, never the
   * undefined float-to-integer conversion. */
  if ((t.code == kDLInt || t.code == kDLUInt) && t.bits > 1 &&
      !(v >= -9223372036854775808.0 && v < (t.code == kDLUInt ? 18446744073709551616.0 : 9223372036854775808.0))) {
    kiln_array_free(a);
    return kiln_set_error("scalar constant %g does not fit in %s", v, dt_str(t)), NULL;
  }
  int64_t iv = 0;
  uint64_t uv = 0;
  if (t.code == kDLInt && t.bits > 1) iv = (int64_t)v;
  if (t.code == kDLUInt && t.bits > 1) uv = v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v;
  if (t.code == kDLFloat && t.bits == 32) *(float *)p = (float)v;
  else if (t.code == kDLFloat && t.bits == 64) *(double *)p = v;
  else if (t.code == kDLFloat && t.bits == 16) *(_Float16 *)p = (_Float16)v;
  else if (t.code == kDLInt && t.bits == 64) *(int64_t *)p = iv;
  else if (t.code == kDLInt && t.bits == 32) *(int32_t *)p = (int32_t)iv;
  else if (t.code == kDLInt && t.bits == 16) *(int16_t *)p = (int16_t)iv;
  else if (t.code == kDLInt && t.bits == 8) *(int8_t *)p = (int8_t)iv;
  else if (t.code == kDLUInt && t.bits == 8) *(uint8_t *)p = (uint8_t)uv;
  else if (t.code == kDLUInt && t.bits == 1) *(uint8_t *)p = v != 0;
  else if (t.code == kDLUInt && t.bits == 16) *(uint16_t *)p = (uint16_t)uv;
  else if (t.code == kDLUInt && t.bits == 32) *(uint32_t *)p = (uint32_t)uv;
  else if (t.code == kDLUInt && t.bits == 64) *(uint64_t *)p = uv;
  else {
    kiln_array_free(a);
    return kiln_set_error("scalar constant of type %s is not supported", dt_str(t)), NULL;
  }
  return graph_const(g, NULL, a);
}

GNode *graph_call(Graph *g, const char *opname, int nargs, GNode **args, GAttrs attrs, const char *name) {
  const OpDef *op = op_lookup(opname);
  if (!op) return kiln_set_error("unknown operator '%s'", opname), NULL;
  for (int i = 0; i < nargs; i++)
    if (!args[i]) return NULL;
  if (nargs < op->min_args || (op->max_args >= 0 && nargs > op->max_args)) {
    if (op->min_args == op->max_args)
      kiln_set_error("%s%s%s: takes %d inputs, got %d", opname, name && *name ? " " : "", name ? name : "", op->min_args,
                     nargs);
    else
      kiln_set_error("%s%s%s: takes %d to %d inputs, got %d", opname, name && *name ? " " : "", name ? name : "",
                     op->min_args, op->max_args, nargs);
    return NULL;
  }
  kiln_arena_push(g->arena);
  GNode tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.kind = GN_CALL;
  tmp.op = op;
  tmp.nargs = nargs;
  tmp.args = kmemdup(args, sizeof(GNode *) * (size_t)(nargs > 0 ? nargs : 1));
  tmp.attrs = gattrs_copy(&attrs);
  tmp.name = name ? kstrdup(name) : "";
  TType t;
  memset(&t, 0, sizeof t);
  if (op->infer(&tmp, &t)) {
    kiln_arena_pop();
    if (name && *name) kiln_error_context("%s (node '%s')", opname, name);
    else kiln_error_context("%s", opname);
    return NULL;
  }
  if (ttype_check(&t, opname)) {
    kiln_arena_pop();
    if (name && *name) kiln_error_context("node '%s'", name);
    return NULL;
  }
  /* a symbolic argument: the dimensions' expressions (symshape.c) */
  if (sym_infer(g, &tmp, &t)) {
    kiln_arena_pop();
    return NULL;
  }
  GNode *n = new_node(g, GN_CALL, tmp.name);
  n->op = op;
  n->nargs = nargs;
  n->args = tmp.args;
  n->attrs = tmp.attrs;
  n->type = t;
  kiln_arena_pop();
  return n;
}

void graph_add_output(Graph *g, GNode *n) { graph_add_named_output(g, n, NULL); }

void graph_add_named_output(Graph *g, GNode *n, const char *name) {
  kiln_arena_push(g->arena);
  av_push(&g->outputs, n);
  av_push(&g->output_names, name ? (void *)kstrdup(name) : NULL);
  kiln_arena_pop();
}

const char *graph_output_name(const Graph *g, int i) {
  return i >= 0 && i < g->output_names.len ? g->output_names.data[i] : NULL;
}

void graph_add_boundary(Graph *g, const char *line) {
  kiln_arena_push(g->arena);
  av_push(&g->boundary, kstrdup(line));
  kiln_arena_pop();
}

void graph_copy_boundary(Graph *ng, const Graph *og) {
  for (int i = 0; i < og->boundary.len; i++) graph_add_boundary(ng, og->boundary.data[i]);
}

bool graph_has_structure(const Graph *g) {
  for (int i = 0; i < g->boundary.len; i++) {
    const char *l = g->boundary.data[i], *k = strchr(l, ' ');
    if (k && strncmp(k + 1, "tensor ", 7)) return true;
  }
  return false;
}

GAttrs gattrs_new(void) { return (GAttrs){0, NULL}; }

static GAttr *ga_slot(GAttrs *a, const char *key) {
  for (int i = 0; i < a->n; i++)
    if (!strcmp(a->a[i].key, key)) return &a->a[i];
  GAttr *na = KNEWN(GAttr, a->n + 1);
  if (a->n) memcpy(na, a->a, sizeof(GAttr) * (size_t)a->n);
  a->a = na;
  GAttr *s = &a->a[a->n++];
  memset(s, 0, sizeof *s);
  s->key = kstrdup(key);
  return s;
}

void ga_int(GAttrs *a, const char *key, int64_t v) {
  GAttr *s = ga_slot(a, key);
  s->kind = GA_INT;
  s->i = v;
}
void ga_float(GAttrs *a, const char *key, double v) {
  GAttr *s = ga_slot(a, key);
  s->kind = GA_FLOAT;
  s->f = v;
}
void ga_str(GAttrs *a, const char *key, const char *v) {
  GAttr *s = ga_slot(a, key);
  s->kind = GA_STR;
  s->s = kstrdup(v);
}
void ga_ints(GAttrs *a, const char *key, int n, const int64_t *v) {
  GAttr *s = ga_slot(a, key);
  s->kind = GA_INTS;
  s->n = n;
  s->ints = kmemdup(v, sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
}
void ga_floats(GAttrs *a, const char *key, int n, const double *v) {
  GAttr *s = ga_slot(a, key);
  s->kind = GA_FLOATS;
  s->n = n;
  s->floats = kmemdup(v, sizeof(double) * (size_t)(n > 0 ? n : 1));
}

const GAttr *gattr_find(const GAttrs *a, const char *key) {
  for (int i = 0; i < a->n; i++)
    if (!strcmp(a->a[i].key, key)) return &a->a[i];
  return NULL;
}

int64_t gattr_int(const GAttrs *a, const char *key, int64_t def) {
  const GAttr *x = gattr_find(a, key);
  if (!x) return def;
  if (x->kind == GA_FLOAT) return (int64_t)x->f;
  if (x->kind == GA_INTS && x->n == 1) return x->ints[0];
  return x->kind == GA_INT ? x->i : def;
}

double gattr_float(const GAttrs *a, const char *key, double def) {
  const GAttr *x = gattr_find(a, key);
  if (!x) return def;
  if (x->kind == GA_INT) return (double)x->i;
  return x->kind == GA_FLOAT ? x->f : def;
}

const char *gattr_str(const GAttrs *a, const char *key, const char *def) {
  const GAttr *x = gattr_find(a, key);
  return x && x->kind == GA_STR ? x->s : def;
}

int gattr_ints(const GAttrs *a, const char *key, const int64_t **out) {
  const GAttr *x = gattr_find(a, key);
  if (!x || x->kind != GA_INTS) {
    *out = NULL;
    return 0;
  }
  *out = x->ints;
  return x->n;
}

GAttrs gattrs_copy(const GAttrs *a) {
  GAttrs r = {a->n, NULL};
  if (!a->n) return r;
  r.a = KNEWN(GAttr, a->n);
  for (int i = 0; i < a->n; i++) {
    r.a[i] = a->a[i];
    r.a[i].key = kstrdup(a->a[i].key);
    if (r.a[i].s) r.a[i].s = kstrdup(r.a[i].s);
    if (r.a[i].ints) r.a[i].ints = kmemdup(r.a[i].ints, sizeof(int64_t) * (size_t)(r.a[i].n > 0 ? r.a[i].n : 1));
    if (r.a[i].floats) r.a[i].floats = kmemdup(r.a[i].floats, sizeof(double) * (size_t)(r.a[i].n > 0 ? r.a[i].n : 1));
  }
  return r;
}

bool gnode_is_scalar_const(const GNode *n) { return n && n->kind == GN_CONST && ttype_numel(&n->type) == 1; }

double gnode_scalar_value(const GNode *n) {
  const void *p = (const char *)n->value->data + n->value->byte_offset;
  DType t = n->value->dtype;
  if (t.code == kDLFloat && t.bits == 32) return *(const float *)p;
  if (t.code == kDLFloat && t.bits == 64) return *(const double *)p;
  if (t.code == kDLFloat && t.bits == 16) return (double)*(const _Float16 *)p;
  if (t.code == kDLInt && t.bits == 64) return (double)*(const int64_t *)p;
  if (t.code == kDLInt && t.bits == 32) return *(const int32_t *)p;
  if (t.code == kDLInt && t.bits == 16) return *(const int16_t *)p;
  if (t.code == kDLInt && t.bits == 8) return *(const int8_t *)p;
  if (t.code == kDLUInt && t.bits == 8) return *(const uint8_t *)p;
  if (t.code == kDLUInt && t.bits == 1) return *(const uint8_t *)p;
  if (t.code == kDLUInt && t.bits == 16) return *(const uint16_t *)p;
  if (t.code == kDLUInt && t.bits == 32) return *(const uint32_t *)p;
  if (t.code == kDLUInt && t.bits == 64) return (double)*(const uint64_t *)p;
  return NAN;
}

GNode *graph_share_const(Graph *ng, GNode *old) {
  DLTensor *v;
  if (kiln_array_view(old->value, old->value->ndim, old->value->shape, old->value->dtype, &v)) return NULL;
  return graph_const(ng, old->name, v);
}

GNode *graph_copy_call(Graph *ng, GNode *old, GNode **args) {
  GNode *n = graph_call(ng, old->op->name, old->nargs, args, old->attrs, old->name);
  if (n) gnode_set_config(ng, n, old->config, old->config_source);
  return n;
}

void gnode_set_config(Graph *g, GNode *n, const char *config, const char *source) {
  kiln_arena_push(g->arena);
  n->config = config ? kstrdup(config) : NULL;
  n->config_source = source ? kstrdup(source) : NULL;
  kiln_arena_pop();
}

static void mark_reachable(GNode *n, char *seen) {
  if (seen[n->id]) return;
  seen[n->id] = 1;
  for (int i = 0; i < n->nargs; i++) mark_reachable(n->args[i], seen);
}

Graph *graph_rewrite(Graph *g, GraphRewriteFn fn, void *ud) {
  Graph *ng = graph_new();
  /* constants made while rewriting must not reuse the names of the ones
   * copied from g */
  ng->next_const = g->next_const;
  graph_copy_syms(ng, g);
  graph_copy_boundary(ng, g);
  char *seen = xcalloc((size_t)g->nodes.len + 1, 1);
  GNode **map = xcalloc((size_t)g->nodes.len + 1, sizeof(GNode *));
  for (int i = 0; i < g->outputs.len; i++) mark_reachable(g->outputs.data[i], seen);
  /* variables keep their order even when unused, so inputs stay stable;
   * a node that binds run-time values stays though nothing uses it */
  for (int i = 0; i < g->nodes.len; i++) {
    GNode *n = g->nodes.data[i];
    if (n->kind == GN_VAR) seen[n->id] = 1;
    if (n->kind == GN_CALL && (n->op->flags & OPF_BINDS_VALUES)) mark_reachable(n, seen);
  }
  int rc = 0;
  for (int i = 0; i < g->nodes.len && !rc; i++) {
    GNode *n = g->nodes.data[i];
    if (!seen[n->id]) continue;
    GNode *r = NULL;
    if (n->kind == GN_VAR) {
      r = graph_var(ng, n->name, sym_copy_type(ng, g, &n->type));
    } else if (n->kind == GN_CONST) {
      r = graph_share_const(ng, n);
    } else {
      GNode **args = xcalloc((size_t)n->nargs + 1, sizeof(GNode *));
      for (int a = 0; a < n->nargs; a++) args[a] = map[n->args[a]->id];
      r = fn ? fn(ng, n, args, ud) : GRAPH_KEEP;
      if (r == GRAPH_KEEP) r = graph_copy_call(ng, n, args);
      free(args);
    }
    if (!r) rc = -1;
    map[n->id] = r;
  }
  for (int i = 0; i < g->outputs.len && !rc; i++)
    graph_add_named_output(ng, map[((GNode *)g->outputs.data[i])->id], graph_output_name(g, i));
  free(seen);
  free(map);
  if (rc) {
    graph_free(ng);
    return NULL;
  }
  graph_move_bodies(ng, g);
  return ng;
}

int *graph_use_counts(Graph *g) {
  int *u = xcalloc((size_t)g->nodes.len + 1, sizeof(int));
  for (int i = 0; i < g->nodes.len; i++) {
    GNode *n = g->nodes.data[i];
    for (int a = 0; a < n->nargs; a++) u[n->args[a]->id]++;
  }
  for (int i = 0; i < g->outputs.len; i++) u[((GNode *)g->outputs.data[i])->id]++;
  return u;
}
