/*
 * symshape.c - symbolic dimensions: a graph's symbols and shape inference
 * over expressions (the design is docs/symbolic_shapes.md).
 *
 * A symbolic type keeps two views of each dimension.  shape[d] is its value
 * when every symbol takes its representative value, so each op's own
 * integer inference runs on a symbolic graph exactly as on a static one
 * and checks everything the graph's constants impose (a Reshape's element
 * count, a weight's size).  sym->dim[d] is the dimension as an Expr over
 * the graph's symbols (int64 Vars), kept canonical by the IR's simplifier,
 * or NULL where the dimension is constant.
 *
 * graph_call calls sym_infer after the op's inference whenever an argument
 * is symbolic.  The op's row in `rules` below computes the expressions;
 * ops of the elementwise and broadcast patterns share the broadcast rule.
 * Then every expression is evaluated at the representative values and
 * must give the integer inference's answer, and a dimension the rule left
 * constant must not equal a symbol's representative value (that would be
 * a size taken from a symbol without saying how): either is an error
 * naming the op, never a silently specialized shape.  An op without a rule
 * is refused with the symbolic dimensions it was given and how to give
 * the sizes instead.
 *
 * Representative values are distinct primes, one per symbol (a second
 * list for the importer's second pass, which checks that no constant of
 * the model depends on a size), moved into the symbol's bounds.
 */
#include "graph.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- symbols ---- */

static const int64_t rep_values[2][8] = {
    {97, 101, 103, 107, 109, 113, 127, 131},
    {89, 83, 79, 73, 71, 67, 61, 59},
};

static int64_t pick_rep(int pass, int index, int64_t lo, int64_t hi) {
  int64_t r = index < 8 ? rep_values[pass][index] : 137 + 2 * index + pass;
  if (r < lo) r = lo + pass;
  if (r > hi) r = hi - pass;
  if (r < lo) r = lo;
  return r;
}

GSym *graph_sym_find(const Graph *g, const char *name) {
  for (int i = 0; i < g->syms.len; i++) {
    GSym *s = g->syms.data[i];
    if (!strcmp(s->name, name)) return s;
  }
  return NULL;
}

static bool is_ident(const char *s) {
  if (!isalpha((unsigned char)*s) && *s != '_') return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') return false;
  return true;
}

GSym *graph_sym(Graph *g, const char *name, int64_t lo, int64_t hi) {
  GSym *s = graph_sym_find(g, name);
  if (s) return s;
  if (!is_ident(name))
    return kiln_set_error("'%s' is not a symbol name (a letter or '_', then letters, digits or '_')", name), NULL;
  if (lo < 1) lo = 1;
  if (hi > GRAPH_MAX_ELEMS) hi = GRAPH_MAX_ELEMS;
  if (lo > hi) return kiln_set_error("symbol '%s' has empty bounds [%lld, %lld]", name, (long long)lo, (long long)hi), NULL;
  kiln_arena_push(g->arena);
  s = KNEW(GSym);
  s->name = kstrdup(name);
  s->var = ir_var(s->name, DT_I32);
  s->lo = lo;
  s->hi = hi;
  s->rep = pick_rep(g->sym_pass, g->syms.len, lo, hi);
  av_push(&g->syms, s);
  kiln_arena_pop();
  return s;
}

static GSym *value_sym(Graph *g, const char *input, int elem, double scale, const char *name, int64_t lo, int64_t hi) {
  for (int i = 0; i < g->syms.len; i++) {
    GSym *s = g->syms.data[i];
    if (s->value_of && !strcmp(s->value_of, input) && s->value_elem == elem && s->value_scale == scale) return s;
  }
  StrBuf sb = {0};
  if (name) {
    sb_printf(&sb, "%s%s", isalpha((unsigned char)*name) || *name == '_' ? "" : "v", name);
  } else {
    sb_printf(&sb, "%s%s_%d", isalpha((unsigned char)*input) || *input == '_' ? "" : "v", input, elem);
    if (scale != 0) sb_printf(&sb, "_f"); /* floor(x * scale): not the element itself */
  }
  for (char *c = sb.data; *c; c++)
    if (!isalnum((unsigned char)*c) && *c != '_') *c = '_';
  while (graph_sym_find(g, sb.data)) sb_printf(&sb, "_");
  GSym *s = graph_sym(g, sb.data, 1, GRAPH_MAX_ELEMS);
  sb_free(&sb);
  if (!s) return NULL;
  /* a value need not be a size (an axis may be negative); its
   * representative values are smaller than a size's (a tile's repeats
   * multiply the input's dimensions), distinct per pass */
  static const int64_t value_reps[2][8] = {{17, 19, 23, 29, 31, 37, 41, 43}, {47, 53, 43, 41, 37, 31, 29, 23}};
  int nv = 0;
  for (int i = 0; i < g->syms.len - 1; i++) nv += ((GSym *)g->syms.data[i])->value_of != NULL;
  s->lo = lo;
  s->hi = hi;
  s->rep = value_reps[g->sym_pass][nv % 8] + 2 * (nv / 8);
  if (s->rep < lo) s->rep = lo;
  if (s->rep > hi) s->rep = hi;
  kiln_arena_push(g->arena);
  s->value_of = kstrdup(input);
  s->value_elem = elem;
  s->value_scale = scale;
  kiln_arena_pop();
  return s;
}

GSym *graph_value_sym(Graph *g, const char *input, int elem, int64_t lo, int64_t hi) {
  return value_sym(g, input, elem, 0, NULL, lo, hi);
}

GSym *graph_float_value_sym(Graph *g, const char *input, int elem, double scale, const char *name, int64_t lo,
                            int64_t hi) {
  if (!(scale > 0) || !(scale < 1e18))
    return kiln_set_error("the float run-time value %s[%d] needs a positive scale, got %g", input, elem, scale), NULL;
  return value_sym(g, input, elem, scale, name, lo, hi);
}

int graph_sym_bound(Graph *g, const char *name, int64_t lo, int64_t hi) {
  GSym *s = graph_sym_find(g, name);
  if (!s) return kiln_set_error("a bound is given for '%s', which no input shape uses as a symbol", name);
  if (lo > s->lo) s->lo = lo;
  if (hi < s->hi) s->hi = hi;
  if (s->lo > s->hi)
    return kiln_set_error("symbol '%s' has empty bounds [%lld, %lld]", name, (long long)s->lo, (long long)s->hi);
  s->rep = pick_rep(g->sym_pass, av_find(&g->syms, s), s->lo, s->hi);
  return 0;
}

bool ttype_is_symbolic(const TType *t) {
  if (!t->sym) return false;
  for (int d = 0; d < t->ndim; d++)
    if (t->sym->dim[d]) return true;
  return false;
}

bool graph_is_symbolic(const Graph *g) {
  for (int i = 0; i < g->nodes.len; i++)
    if (ttype_is_symbolic(&((GNode *)g->nodes.data[i])->type)) return true;
  return false;
}

int graph_require_static(const Graph *g, const char *what) {
  for (int i = 0; i < g->nodes.len; i++) {
    const GNode *n = g->nodes.data[i];
    if (!ttype_is_symbolic(&n->type)) continue;
    return kiln_set_error("%s needs static shapes, but '%s' is %s: symbolic sizes run in the CPU build of "
                          "kiln compile, and kiln tasks/tune take a symbolic batch alone (docs/symbolic_shapes.md); "
                          "give every size as a number, e.g. --input-shapes \"data:[1,3,224,224]\"",
                          what, n->name, ttype_str(&n->type));
  }
  return 0;
}

Expr *ttype_dim_expr(const TType *t, int d) {
  if (t->sym && t->sym->dim[d]) return t->sym->dim[d];
  return ir_i32(t->shape[d]);
}

Expr **ttype_shape_exprs(const TType *t) {
  Expr **s = KNEWN(Expr *, t->ndim + 1);
  for (int d = 0; d < t->ndim; d++) s[d] = ttype_dim_expr(t, d);
  return s;
}

bool sym_eval(const Graph *g, Expr *e, const int64_t *vals, int64_t *out) {
  PtrMap env = {0};
  double *v = xcalloc((size_t)g->syms.len + 1, sizeof(double));
  for (int i = 0; i < g->syms.len; i++) {
    v[i] = (double)vals[i];
    pm_put(&env, ((GSym *)g->syms.data[i])->var, &v[i]);
  }
  double r = 0;
  bool ok = ir_eval(e, &env, &r);
  pm_free(&env);
  free(v);
  *out = (int64_t)r;
  return ok;
}

/* The representative value of each symbol of g, in order. */
static int64_t *rep_vals(const Graph *g) {
  int64_t *v = KNEWN(int64_t, g->syms.len + 1);
  for (int i = 0; i < g->syms.len; i++) v[i] = ((GSym *)g->syms.data[i])->rep;
  return v;
}

/* ---- the rules ---- */

/* Rules write the expression of each output dimension into dims[] (NULL
 * leaves it constant) and may return -1 + error. */
typedef int (*SymRule)(const GNode *n, const TType *out, Expr **dims);

static const TType *arg(const GNode *n, int i) { return &n->args[i]->type; }
static Expr *dim_of(const GNode *n, int i, int d) { return ttype_dim_expr(arg(n, i), d); }
static bool is_sym(const GNode *n, int i, int d) {
  const TType *t = arg(n, i);
  return d >= 0 && d < t->ndim && t->sym && t->sym->dim[d];
}

/* Elementwise and broadcast ops: NumPy broadcasting, right-aligned; a
 * dimension comes from the arguments whose size is the output's. */
static int rule_broadcast(const GNode *n, const TType *out, Expr **dims) {
  for (int i = 0; i < n->nargs; i++)
    if (arg(n, i)->ndim > out->ndim)
      return kiln_set_error("argument %d has rank %d, more than the result's %d", i, arg(n, i)->ndim, out->ndim);
  for (int d = 0; d < out->ndim; d++) {
    Expr *pick = NULL;
    for (int i = 0; i < n->nargs; i++) {
      int ad = d - (out->ndim - arg(n, i)->ndim);
      if (ad < 0 || arg(n, i)->shape[ad] != out->shape[d] || !is_sym(n, i, ad)) continue;
      Expr *e = dim_of(n, i, ad);
      if (!pick) pick = e;
      else if (!ir_is_int_value(ir_simplify(ir_sub(pick, e)), 0))
        return kiln_set_error("dimension %d is %s in one argument and %s in another: sizes that broadcast must be equal "
                              "(or 1)",
                              d, ir_expr_str(pick), ir_expr_str(e));
    }
    dims[d] = pick;
  }
  return 0;
}

/* Ops whose result has the shape of argument 0. */
static int rule_same(const GNode *n, const TType *out, Expr **dims) {
  if (out->ndim != arg(n, 0)->ndim) return kiln_set_error("the result's rank differs from the data's");
  for (int d = 0; d < out->ndim; d++) dims[d] = is_sym(n, 0, d) ? dim_of(n, 0, d) : NULL;
  return 0;
}

static void ints2(const GNode *n, const char *key, int64_t def, int64_t out[2]) {
  const int64_t *v;
  int k = gattr_ints(&n->attrs, key, &v);
  out[0] = k >= 1 ? v[0] : def;
  out[1] = k >= 2 ? v[1] : out[0];
}

static void pads4(const GNode *n, int64_t p[4]) {
  const int64_t *v;
  int k = gattr_ints(&n->attrs, "padding", &v);
  for (int i = 0; i < 4; i++) p[i] = k == 0 ? 0 : k == 1 ? v[0] : k == 2 ? v[i % 2] : v[i];
}

/* (in + pb + pa - dil*(k-1) - 1) / s + 1, floor division */
static Expr *window(Expr *in, int64_t k, int64_t s, int64_t dil, int64_t pb, int64_t pa) {
  Expr *span = ir_sub(ir_add(in, ir_i32(pb + pa)), ir_i32(dil * (k - 1) + 1));
  return ir_add(ir_floordiv(span, ir_i32(s)), ir_i32(1));
}

/* Sliding windows over dims 2 and 3 of NCHW or NCHW[x]c data, with the
 * window size from the weight (conv) or the pool_size attribute. */
static int rule_window(const GNode *n, const TType *out, Expr **dims, bool conv) {
  int64_t st[2], dl[2], pad[4], k[2];
  ints2(n, "strides", 1, st);
  ints2(n, "dilation", 1, dl);
  pads4(n, pad);
  if (conv) {
    const TType *w = arg(n, 1);
    if (ttype_is_symbolic(w)) return kiln_set_error("the weight has symbolic dimensions %s", ttype_str(w));
    k[0] = w->shape[2];
    k[1] = w->shape[3];
  } else {
    ints2(n, "pool_size", 1, k);
    if (gattr_int(&n->attrs, "ceil_mode", 0) && (is_sym(n, 0, 2) || is_sym(n, 0, 3)))
      return kiln_set_error("ceil_mode pooling over a symbolic height or width is not supported yet; give the image "
                            "size as numbers");
  }
  if (is_sym(n, 0, 1) || (arg(n, 0)->ndim == 5 && is_sym(n, 0, 4)))
    return kiln_set_error("the channels are symbolic (%s): convolutions and pools need a constant channel count",
                          ttype_str(arg(n, 0)));
  (void)out;
  dims[0] = is_sym(n, 0, 0) ? dim_of(n, 0, 0) : NULL;
  for (int a = 0; a < 2; a++)
    if (is_sym(n, 0, 2 + a)) dims[2 + a] = window(dim_of(n, 0, 2 + a), k[a], st[a], dl[a], pad[a], pad[a + 2]);
  return 0;
}

static int rule_conv(const GNode *n, const TType *out, Expr **dims) { return rule_window(n, out, dims, true); }
static int rule_pool(const GNode *n, const TType *out, Expr **dims) { return rule_window(n, out, dims, false); }

/* Global pools: N and the channels kept, 1x1 spatial. */
static int rule_global_pool(const GNode *n, const TType *out, Expr **dims) {
  for (int d = 0; d < out->ndim; d++) dims[d] = d != 2 && d != 3 && is_sym(n, 0, d) ? dim_of(n, 0, d) : NULL;
  return 0;
}

/* dense and dense_pack: the data's leading dimensions kept, the last one
 * the weight's units; the features must be constant. */
static int rule_dense(const GNode *n, const TType *out, Expr **dims) {
  const TType *d = arg(n, 0);
  if (is_sym(n, 0, d->ndim - 1) || ttype_is_symbolic(arg(n, 1)))
    return kiln_set_error("the reduced features are symbolic (%s x %s): dense needs a constant feature count",
                          ttype_str(d), ttype_str(arg(n, 1)));
  for (int k = 0; k < out->ndim - 1; k++) dims[k] = is_sym(n, 0, k) ? dim_of(n, 0, k) : NULL;
  return 0;
}

/* NumPy matmul [..., M, K] x [..., K, P]: batch dimensions broadcast, M
 * from the first, P from the second (rank-1 operands are not symbolic
 * here; a transposed operand has M or P in its other matrix dimension). */
static int rule_matmul(const GNode *n, const TType *out, Expr **dims) {
  const TType *a = arg(n, 0), *b = arg(n, 1);
  if (a->ndim < 2 || b->ndim < 2) return kiln_set_error("symbolic matmul operands must have rank >= 2");
  int ta = gattr_int(&n->attrs, "transpose_a", 0) != 0, tb = gattr_int(&n->attrs, "transpose_b", 0) != 0;
  for (int d = 0; d < out->ndim - 2; d++) {
    int ad = d - (out->ndim - a->ndim), bd = d - (out->ndim - b->ndim);
    Expr *e = NULL;
    if (ad >= 0 && a->shape[ad] == out->shape[d] && is_sym(n, 0, ad)) e = dim_of(n, 0, ad);
    if (!e && bd >= 0 && b->shape[bd] == out->shape[d] && is_sym(n, 1, bd)) e = dim_of(n, 1, bd);
    dims[d] = e;
  }
  dims[out->ndim - 2] = is_sym(n, 0, a->ndim - 2 + ta) ? dim_of(n, 0, a->ndim - 2 + ta) : NULL;
  dims[out->ndim - 1] = is_sym(n, 1, b->ndim - 1 - tb) ? dim_of(n, 1, b->ndim - 1 - tb) : NULL;
  return 0;
}

/* The product of dims [from, to) of argument 0 as an expression. */
static Expr *prod(const GNode *n, int from, int to) {
  Expr *p = ir_i32(1);
  for (int d = from; d < to; d++) p = ir_mul(p, dim_of(n, 0, d));
  return ir_simplify(p);
}

/* reshape: newshape 0 copies the input's dimension, -1 is the element
 * count over the others; a positive entry is that constant. */
/* ---- shape expressions for the runtime ---- */

/* The runtime evaluates shape expressions without the compiler's IR: in
 * postfix ("H 1 + 2 fdiv"), with these tokens (runtime/graph_sym.c has
 * the same table). */
static const struct {
  ExprKind kind;
  const char *tok;
} rpn_ops[] = {
    {EK_Add, "+"},      {EK_Sub, "-"},      {EK_Mul, "*"},   {EK_FloorDiv, "fdiv"}, {EK_FloorMod, "fmod"},
    {EK_Div, "div"},    {EK_Mod, "mod"},    {EK_Min, "min"}, {EK_Max, "max"},
    /* comparisons and logic (0 or 1), for sizes that run-time values
     * decide: a Reshape's 0 and -1 codes, a Reduce's axes */
    {EK_EQ, "eq"},      {EK_NE, "ne"},      {EK_LT, "lt"},   {EK_LE, "le"},         {EK_GT, "gt"},
    {EK_GE, "ge"},      {EK_And, "and"},    {EK_Or, "or"},
};

/* The Var called name[0..len) in e, or NULL. */
static Expr *find_var(Expr *e, const char *name, size_t len) {
  if (!e) return NULL;
  if (e->kind == EK_Var) return strlen(e->var.name) == len && !memcmp(e->var.name, name, len) ? e : NULL;
  if (e->kind == EK_Cast) return find_var(e->bin.a, name, len);
  for (size_t i = 0; i < sizeof rpn_ops / sizeof rpn_ops[0]; i++)
    if (rpn_ops[i].kind == e->kind) {
      Expr *v = find_var(e->bin.a, name, len);
      return v ? v : find_var(e->bin.b, name, len);
    }
  return NULL;
}

/* The one parser of the postfix language (sym_postfix's tokens; "eq" and
 * the other comparisons give 0 or 1 as int32, "and"/"or" are their
 * product/maximum, "c t f sel" is t where c is not 0, else f): a token
 * is first a symbol, then an operator, then an integer.  The symbols are
 * g's (a call's sym_dims), or, where g is NULL, those in the dimensions
 * of n's first argument (a reshape's sym_newshape, whose rule sees only
 * the node).  NULL + error naming the expression. */
static Expr *postfix_expr(const Graph *g, const GNode *n, const char *s, size_t len) {
  Expr *st[32];
  int sp = 0;
  const char *p = s, *end = s + len;
  while (p < end) {
    while (p < end && *p == ' ') p++;
    const char *q = p;
    while (q < end && *q != ' ') q++;
    if (q == p) break;
    size_t tl = (size_t)(q - p);
    char tok[96];
    snprintf(tok, sizeof tok, "%.*s", tl < 95 ? (int)tl : 95, p);
    Expr *e = NULL;
    if (g) {
      const GSym *sym = graph_sym_find(g, tok);
      if (sym) e = sym->var;
    } else {
      const TType *x = arg(n, 0);
      for (int d = 0; ttype_is_symbolic(x) && d < x->ndim && !e; d++) e = find_var(x->sym->dim[d], p, tl);
    }
    size_t k = 0, nops = sizeof rpn_ops / sizeof rpn_ops[0];
    while (!e && k < nops && strcmp(rpn_ops[k].tok, tok)) k++;
    if (e) {
    } else if (!strcmp(tok, "sel")) {
      if (sp < 3) return kiln_set_error("shape expression '%.*s': 'sel' needs three operands", (int)len, s), NULL;
      sp -= 3;
      e = ir_select(ir_ne(st[sp], ir_i32(0)), st[sp + 1], st[sp + 2]);
    } else if (k < nops) {
      if (sp < 2) return kiln_set_error("shape expression '%.*s': '%s' lacks operands", (int)len, s, tok), NULL;
      Expr *a = st[sp - 2], *b = st[sp - 1];
      sp -= 2;
      switch (rpn_ops[k].kind) {
      /* logic as integers 0/1, so the result stays an int32 size */
      case EK_EQ: e = ir_select(ir_eq(a, b), ir_i32(1), ir_i32(0)); break;
      case EK_NE: e = ir_select(ir_ne(a, b), ir_i32(1), ir_i32(0)); break;
      case EK_LT: e = ir_select(ir_lt(a, b), ir_i32(1), ir_i32(0)); break;
      case EK_LE: e = ir_select(ir_le(a, b), ir_i32(1), ir_i32(0)); break;
      case EK_GT: e = ir_select(ir_gt(a, b), ir_i32(1), ir_i32(0)); break;
      case EK_GE: e = ir_select(ir_ge(a, b), ir_i32(1), ir_i32(0)); break;
      case EK_And: e = ir_mul(a, b); break;
      case EK_Or: e = ir_max(a, b); break;
      default: e = ir_binary(rpn_ops[k].kind, a, b); break;
      }
    } else if (isdigit((unsigned char)*p) || (*p == '-' && tl > 1)) {
      e = ir_i32(strtoll(p, NULL, 10));
    } else if (!g) {
      return kiln_set_error("shape expression '%.*s': symbol '%s' is not in the input's shape %s", (int)len, s, tok,
                            ttype_str(arg(n, 0))),
             NULL;
    } else {
      return kiln_set_error("shape expression '%.*s': bad token '%s'", (int)len, s, tok), NULL;
    }
    if (sp == 32) return kiln_set_error("shape expression '%.*s' is too deep", (int)len, s), NULL;
    st[sp++] = e;
    p = q;
  }
  if (sp != 1) return kiln_set_error("shape expression '%.*s' is malformed", (int)len, s), NULL;
  return st[0];
}

/* A postfix shape expression over the symbols of n's first argument's
 * dimensions, simplified; NULL + error if it is not one. */
static Expr *parse_postfix(const GNode *n, const char *s, size_t len) {
  Expr *e = postfix_expr(NULL, n, s, len);
  return e ? ir_simplify(e) : NULL;
}

/* The text of entry i of a reshape's sym_newshape ("S;B;": entries joined
 * by ';', empty where newshape's own code holds), in *len; NULL past the
 * end. */
const char *sym_newshape_entry(const char *s, int i, size_t *len) {
  for (int k = 0; k < i && s; k++) {
    s = strchr(s, ';');
    if (s) s++;
  }
  if (!s) return NULL;
  const char *e = strchr(s, ';');
  *len = e ? (size_t)(e - s) : strlen(s);
  return s;
}

/* reshape with sym_newshape (a target with several entries computed from
 * the symbols, none the input's own dimension at its position: (S*B, 64)
 * to [S, B, 64]): those entries are the expressions; newshape holds their
 * values at the representative sizes, so the integer inference checks the
 * element count. */
static int rule_reshape_exprs(const GNode *n, const TType *out, const char *st, Expr **dims) {
  const int64_t *ns;
  int k = gattr_ints(&n->attrs, "newshape", &ns);
  bool allowzero = gattr_int(&n->attrs, "allowzero", 0) != 0;
  for (int i = 0; i < k && i < out->ndim; i++) {
    size_t len = 0;
    const char *t = sym_newshape_entry(st, i, &len);
    if (t && len) {
      if (!(dims[i] = parse_postfix(n, t, len))) return -1;
    } else {
      dims[i] = ns[i] == 0 && !allowzero && is_sym(n, 0, i) ? dim_of(n, 0, i) : NULL;
    }
  }
  return 0;
}

static int rule_reshape(const GNode *n, const TType *out, Expr **dims) {
  const char *st = gattr_str(&n->attrs, "sym_newshape", NULL);
  if (st) return rule_reshape_exprs(n, out, st, dims);
  const int64_t *ns;
  int k = gattr_ints(&n->attrs, "newshape", &ns);
  bool allowzero = gattr_int(&n->attrs, "allowzero", 0) != 0;
  int infer_at = -1;
  int64_t known = 1; /* the product of the positive entries */
  bool copied[GRAPH_MAX_DIMS] = {0};
  for (int i = 0; i < k && i < out->ndim; i++) {
    if (ns[i] == 0 && !allowzero) {
      dims[i] = is_sym(n, 0, i) ? dim_of(n, 0, i) : NULL;
      copied[i] = true;
    } else if (ns[i] == -1) {
      infer_at = i;
    } else {
      known *= ns[i];
    }
  }
  if (infer_at < 0) {
    for (int d = 0; d < arg(n, 0)->ndim; d++)
      if (is_sym(n, 0, d) && !copied[d])
        return kiln_set_error("newshape is all constants, but input dimension %d is %s: the element count would "
                              "change with it",
                              d, ir_expr_str(dim_of(n, 0, d)));
    return 0;
  }
  /* -1: the input's dimensions not copied by a 0 entry, over the
   * constants.  The division is cancelled where it can be, so the result
   * stays a product ((S, B*4, 16) to [-1, 64] is S*B, not
   * floordiv(S*(B*4)*16, 64)): first against the constant dimensions,
   * then against one symbolic dimension that is a multiple of the rest. */
  int64_t cprod = 1;
  Expr *f[GRAPH_MAX_DIMS];
  int nf = 0;
  for (int d = 0; d < arg(n, 0)->ndim; d++) {
    if (copied[d]) continue;
    if (is_sym(n, 0, d)) f[nf++] = dim_of(n, 0, d);
    else cprod *= arg(n, 0)->shape[d];
  }
  int64_t a = cprod, b = known;
  while (b) {
    int64_t t = a % b;
    a = b, b = t;
  }
  if (a > 1) cprod /= a, known /= a;
  for (int i = 0; i < nf && known > 1; i++) {
    Expr *q = ir_simplify(ir_floordiv(f[i], ir_i32(known)));
    if (ir_is_int_value(ir_simplify(ir_sub(ir_mul(q, ir_i32(known)), f[i])), 0)) f[i] = q, known = 1;
  }
  Expr *rest = ir_i32(cprod);
  for (int i = 0; i < nf; i++) rest = ir_mul(rest, f[i]);
  rest = ir_simplify(rest);
  dims[infer_at] = known > 1 ? ir_floordiv(rest, ir_i32(known)) : rest;
  return 0;
}

/* batch_flatten: [N, product of the rest]. */
static int rule_batch_flatten(const GNode *n, const TType *out, Expr **dims) {
  (void)out;
  dims[0] = is_sym(n, 0, 0) ? dim_of(n, 0, 0) : NULL;
  dims[1] = prod(n, 1, arg(n, 0)->ndim);
  return 0;
}

static int rule_concat(const GNode *n, const TType *out, Expr **dims) {
  int64_t ax = gattr_int(&n->attrs, "axis", 0);
  if (ax < 0) ax += out->ndim;
  for (int d = 0; d < out->ndim; d++) {
    if (d == ax) {
      Expr *s = ir_i32(0);
      for (int i = 0; i < n->nargs; i++) s = ir_add(s, dim_of(n, i, d));
      dims[d] = s;
      continue;
    }
    dims[d] = NULL;
    for (int i = 0; i < n->nargs && !dims[d]; i++)
      if (is_sym(n, i, d)) dims[d] = dim_of(n, i, d);
  }
  return 0;
}

static int rule_transpose(const GNode *n, const TType *out, Expr **dims) {
  const int64_t *ax;
  int k = gattr_ints(&n->attrs, "axes", &ax);
  for (int i = 0; i < out->ndim; i++) {
    int64_t a = k ? ax[i] : out->ndim - 1 - i;
    if (a < 0) a += out->ndim;
    dims[i] = is_sym(n, 0, (int)a) ? dim_of(n, 0, (int)a) : NULL;
  }
  return 0;
}

/* layout_transform between NCHW and NCHW[x]c: a dimension named by the
 * same upper-case letter in both layouts keeps its expression; the
 * channels (split into blocks) must be constant. */
static int rule_layout_transform(const GNode *n, const TType *out, Expr **dims) {
  const char *src = gattr_str(&n->attrs, "src_layout", ""), *dst = gattr_str(&n->attrs, "dst_layout", "");
  char sl[GRAPH_MAX_DIMS], dl[GRAPH_MAX_DIMS];
  int ns = 0, nd = 0;
  for (const char *p = src; *p && ns < GRAPH_MAX_DIMS; p++)
    if (isalpha((unsigned char)*p)) sl[ns++] = *p;
  for (const char *p = dst; *p && nd < GRAPH_MAX_DIMS; p++)
    if (isalpha((unsigned char)*p)) dl[nd++] = *p;
  if (ns != arg(n, 0)->ndim || nd != out->ndim) return kiln_set_error("layouts '%s' -> '%s' do not match the ranks", src, dst);
  for (int s = 0; s < ns; s++)
    if (is_sym(n, 0, s) && (sl[s] == 'C' || islower((unsigned char)sl[s])))
      return kiln_set_error("the channels are symbolic: a layout transform needs a constant channel count");
  for (int d = 0; d < nd; d++) {
    dims[d] = NULL;
    for (int s = 0; s < ns; s++)
      if (sl[s] == dl[d] && isupper((unsigned char)dl[d]) && is_sym(n, 0, s)) dims[d] = dim_of(n, 0, s);
  }
  return 0;
}

/* strided_slice: a symbolic dimension must be one the slice leaves
 * whole (not among "axes", or, with no "axes", beyond the "begin" list);
 * slicing a symbolic dimension is refused. */
static int rule_strided_slice(const GNode *n, const TType *out, Expr **dims) {
  const int64_t *ax, *b;
  int na = gattr_ints(&n->attrs, "axes", &ax), nb = gattr_ints(&n->attrs, "begin", &b);
  for (int d = 0; d < out->ndim; d++) {
    bool sliced = false;
    for (int i = 0; na && i < na; i++) sliced |= (ax[i] < 0 ? ax[i] + out->ndim : ax[i]) == d;
    if (!na) sliced = d < nb;
    if (is_sym(n, 0, d) && sliced)
      return kiln_set_error("dimension %d (%s) is sliced: slicing a symbolic dimension is not supported; give its size "
                            "as a number in --input-shapes",
                            d, ir_expr_str(dim_of(n, 0, d)));
    dims[d] = is_sym(n, 0, d) ? dim_of(n, 0, d) : NULL;
  }
  return 0;
}

/* Reductions (sum, mean, max, ...): the kept dimensions are copied (at
 * their new positions without keepdims); a reduced dimension must be
 * constant. */
static int rule_reduce(const GNode *n, const TType *out, Expr **dims) {
  const int64_t *ax;
  int na = gattr_ints(&n->attrs, "axis", &ax), nd = arg(n, 0)->ndim;
  bool keep = gattr_int(&n->attrs, "keepdims", 0) != 0, exclude = gattr_int(&n->attrs, "exclude", 0) != 0;
  int o = 0;
  for (int d = 0; d < nd; d++) {
    bool red = na == 0;
    for (int i = 0; i < na; i++) red |= (ax[i] < 0 ? ax[i] + nd : ax[i]) == d;
    if (exclude && na) red = !red;
    if (red && is_sym(n, 0, d))
      return kiln_set_error("dimension %d (%s) is reduced: a reduction over a symbolic dimension is not supported",
                            d, ir_expr_str(dim_of(n, 0, d)));
    if (red && !keep) continue;
    if (o >= out->ndim) return kiln_set_error("the result's rank does not match the reduced axes");
    dims[o++] = red || !is_sym(n, 0, d) ? NULL : dim_of(n, 0, d);
  }
  return 0;
}

typedef struct SymRuleRow {
  const char *op;
  SymRule rule;
} SymRuleRow;

/* The ops with a rule of their own; every other op of the elementwise or
 * broadcast pattern takes rule_broadcast when its rank is its widest
 * argument's. */
static const SymRuleRow rules[] = {
    {"nn.conv2d", rule_conv},
    {"nn.contrib_conv2d_NCHWc", rule_conv},
    {"nn.max_pool2d", rule_pool},
    {"nn.avg_pool2d", rule_pool},
    {"nn.global_avg_pool2d", rule_global_pool},
    {"nn.global_max_pool2d", rule_global_pool},
    {"nn.dense", rule_dense},
    {"nn.contrib_dense_pack", rule_dense},
    {"nn.matmul", rule_matmul},
    {"nn.softmax", rule_same},
    {"nn.log_softmax", rule_same},
    {"nn.batch_norm", rule_same},
    {"nn.layer_norm", rule_same},
    {"nn.dropout", rule_same},
    {"reshape", rule_reshape},
    {"nn.batch_flatten", rule_batch_flatten},
    {"concatenate", rule_concat},
    {"transpose", rule_transpose},
    {"layout_transform", rule_layout_transform},
    {"strided_slice", rule_strided_slice},
    {"sum", rule_reduce},
    {"mean", rule_reduce},
    {"max", rule_reduce},
    {"min", rule_reduce},
    {"prod", rule_reduce},
};

static SymRule find_rule(const GNode *n, const TType *out) {
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (op_lookup(rules[i].op) == n->op) return rules[i].rule;
  if (n->op->pattern != PAT_ELEMWISE && n->op->pattern != PAT_BROADCAST) return NULL;
  for (int i = 0; i < n->nargs; i++)
    if (n->args[i]->type.ndim > out->ndim) return NULL;
  return rule_broadcast;
}

/* What a symbolic argument list looks like, for errors. */
static const char *args_str(const GNode *n) {
  StrBuf sb = {0};
  for (int i = 0; i < n->nargs; i++)
    if (ttype_is_symbolic(arg(n, i))) sb_printf(&sb, "%sargument %d is %s", sb.len ? ", " : "", i, ttype_str(arg(n, i)));
  const char *r = kstrdup(sb.data ? sb.data : "");
  sb_free(&sb);
  return r;
}

/* A call whose output dimensions are run-time shape values (the attribute
 * sym_dims names the value symbol of each such dimension): those
 * dimensions are the symbols, at their representative values. */
static int sym_value_dims(Graph *g, const GNode *n, const char *spec, TType *out, const char *nm) {
  kiln_arena_push(g->arena);
  SymDims *sd = KNEW(SymDims);
  kiln_arena_pop();
  const char *p = spec;
  bool has = false;
  const int64_t *reps = rep_vals(g);
  for (int d = 0; d < out->ndim; d++) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len) {
      kiln_arena_push(g->arena);
      Expr *e = sym_parse_postfix(g, p, len);
      if (e) e = ir_simplify(e);
      kiln_arena_pop();
      if (!e) return kiln_error_context("%s%s: sym_dims", n->op->name, nm);
      int64_t v = 0;
      if (!sym_eval(g, e, reps, &v) || v != out->shape[d])
        return kiln_set_error("%s%s: dimension %d is %s, which gives %lld at the representative values, but the op's "
                              "inference gives %lld",
                              n->op->name, nm, d, ir_expr_str(e), (long long)v, (long long)out->shape[d]);
      int64_t c;
      if (!ir_is_const_int(e, &c)) {
        sd->dim[d] = e;
        has = true;
      }
    }
    if (!end) {
      if (d + 1 != out->ndim)
        return kiln_set_error("%s%s: sym_dims '%s' names %d dimensions of %d", n->op->name, nm, spec, d + 1, out->ndim);
      break;
    }
    p = end + 1;
  }
  out->sym = has ? sd : NULL;
  return 0;
}

int sym_infer(Graph *g, const GNode *n, TType *out) {
  out->sym = NULL;
  const char *nm = n->name && *n->name ? kfmt(" (node '%s')", n->name) : "";
  const char *vd = gattr_str(&n->attrs, "sym_dims", NULL);
  if (vd) return sym_value_dims(g, n, vd, out, nm);
  bool any = false;
  for (int i = 0; i < n->nargs; i++) any |= ttype_is_symbolic(arg(n, i));
  if (!any) return 0;
  SymRule rule = find_rule(n, out);
  if (!rule)
    return kiln_set_error("%s%s does not take symbolic dimensions yet (%s); give the input's sizes as numbers in "
                          "--input-shapes for this model",
                          n->op->name, nm, args_str(n));
  Expr *dims[GRAPH_MAX_DIMS] = {0};
  kiln_arena_push(g->arena);
  int rc = rule(n, out, dims);
  SymDims *sd = KNEW(SymDims);
  const int64_t *reps = rep_vals(g);
  bool has = false;
  for (int d = 0; d < out->ndim && !rc; d++) {
    if (!dims[d]) {
      for (int s = 0; s < g->syms.len && !rc; s++) {
        const GSym *gs = g->syms.data[s];
        /* only a distinctive value says so: a bound-clamped one (N<=8)
         * meets real sizes (8 channels); the second import still checks */
        if (out->shape[d] == gs->rep && gs->rep >= 59 && gs->lo != gs->hi)
          rc = kiln_set_error("dimension %d of the result would be fixed at %lld, the representative size of symbol "
                              "'%s': Kiln cannot tell how it depends on '%s'",
                              d, (long long)out->shape[d], gs->name, gs->name);
      }
      continue;
    }
    Expr *e = ir_simplify(dims[d]);
    int64_t c, v;
    if (ir_is_const_int(e, &c)) {
      if (c != out->shape[d])
        rc = kiln_set_error("dimension %d is %lld by the symbolic rule but %lld by the op's inference", d, (long long)c,
                            (long long)out->shape[d]);
      continue;
    }
    if (!sym_eval(g, e, reps, &v) || v != out->shape[d])
      rc = kiln_set_error("dimension %d is %s, which gives %lld at the representative sizes, but the op's inference "
                          "gives %lld",
                          d, ir_expr_str(e), (long long)v, (long long)out->shape[d]);
    sd->dim[d] = e;
    has = true;
  }
  kiln_arena_pop();
  if (rc) return kiln_error_context("%s%s over symbolic dimensions (%s)", n->op->name, nm, args_str(n));
  out->sym = has ? sd : NULL;
  return 0;
}

/* ---- the batch as an outer loop ---- */

/* Whether dimension d of t is exactly the symbol's Var. */
static bool dim_is(const TType *t, int d, const GSym *s) {
  return t->sym && d < t->ndim && t->sym->dim[d] == s->var;
}

/* An axis attribute that must not be the batch's (0). */
static bool axis_not_batch(const GNode *n, const char *key, int64_t def) {
  int64_t a = gattr_int(&n->attrs, key, def);
  if (a < 0) a += n->type.ndim;
  return a != 0;
}

/* Ops that compute each sample from that sample alone (beside the
 * elementwise and broadcast patterns). */
static bool per_sample(const GNode *n, const GSym *s) {
  static const char *const plain[] = {"nn.conv2d", "nn.contrib_conv2d_NCHWc", "nn.max_pool2d", "nn.avg_pool2d",
                                      "nn.global_avg_pool2d", "nn.global_max_pool2d", "nn.dense",
                                      "nn.batch_flatten", "nn.batch_norm", "nn.dropout", "layout_transform"};
  for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
    if (op_lookup(plain[i]) == n->op) return true;
  if (op_lookup("nn.softmax") == n->op || op_lookup("nn.log_softmax") == n->op) return axis_not_batch(n, "axis", -1);
  if (op_lookup("nn.layer_norm") == n->op) return axis_not_batch(n, "axis", -1);
  if (op_lookup("concatenate") == n->op) return axis_not_batch(n, "axis", 0);
  if (n->op->id == OP_MATMUL) return !ttype_is_symbolic(&n->args[1]->type) && n->args[0]->type.ndim >= 2;
  if (op_lookup("transpose") == n->op) {
    const int64_t *ax;
    return gattr_ints(&n->attrs, "axes", &ax) > 0 && ax[0] == 0;
  }
  if (op_lookup("reshape") == n->op) {
    const int64_t *ns;
    return gattr_ints(&n->attrs, "newshape", &ns) > 0 && ns[0] == 0 && !gattr_int(&n->attrs, "allowzero", 0) &&
           !gattr_str(&n->attrs, "sym_newshape", NULL);
  }
  (void)s;
  return n->op->pattern == PAT_ELEMWISE || n->op->pattern == PAT_BROADCAST;
}

const GSym *graph_batch_symbol(const Graph *g) {
  if (g->syms.len != 1) return NULL;
  const GSym *s = g->syms.data[0];
  if (s->value_of) return NULL; /* a run-time value is bound from data, not from a batch dimension */
  for (int i = 0; i < g->nodes.len; i++) {
    const GNode *n = g->nodes.data[i];
    const TType *t = &n->type;
    if (ttype_is_symbolic(t)) {
      if (!dim_is(t, 0, s)) return NULL;
      for (int d = 1; d < t->ndim; d++)
        if (t->sym->dim[d]) return NULL;
    }
    if (n->kind != GN_CALL) continue;
    /* a size a data-dependent op reports is bound from data, not a batch */
    if (n->op->flags & OPF_DATA_DEPENDENT) return NULL;
    bool sym_arg = false;
    for (int a = 0; a < n->nargs; a++) sym_arg |= ttype_is_symbolic(&n->args[a]->type);
    if (sym_arg && (!ttype_is_symbolic(t) || !per_sample(n, s))) return NULL;
  }
  for (int i = 0; i < g->outputs.len; i++)
    if (!ttype_is_symbolic(&((GNode *)g->outputs.data[i])->type)) return NULL;
  return s;
}

Graph *graph_specialize(Graph *g, const int64_t *vals) {
  Graph *ng = graph_new();
  ng->next_const = g->next_const;
  graph_copy_boundary(ng, g);
  GNode **map = xcalloc((size_t)g->nodes.len + 1, sizeof(GNode *));
  int rc = 0;
  for (int i = 0; i < g->nodes.len && !rc; i++) {
    GNode *n = g->nodes.data[i], *r = NULL;
    if (n->kind == GN_VAR) {
      TType t = n->type;
      for (int d = 0; d < t.ndim; d++)
        if (t.sym && t.sym->dim[d] && !sym_eval(g, t.sym->dim[d], vals, &t.shape[d]))
          rc = kiln_set_error("input '%s': dimension %d has no value at the given sizes", n->name, d);
      t.sym = NULL;
      r = graph_var(ng, n->name, t);
    } else if (n->kind == GN_CONST) {
      r = graph_share_const(ng, n);
    } else if (op_lookup("reshape") == n->op && gattr_str(&n->attrs, "sym_newshape", NULL)) {
      /* the target's expressions at vals: a plain reshape */
      const char *st = gattr_str(&n->attrs, "sym_newshape", NULL);
      const int64_t *ns;
      int k = gattr_ints(&n->attrs, "newshape", &ns);
      int64_t v[GRAPH_MAX_DIMS];
      for (int d = 0; d < k && d < GRAPH_MAX_DIMS && !rc; d++) {
        size_t len = 0;
        const char *t = sym_newshape_entry(st, d, &len);
        Expr *e = t && len ? parse_postfix(n, t, len) : NULL;
        v[d] = ns[d];
        if (t && len && (!e || !sym_eval(g, e, vals, &v[d])))
          rc = kiln_error_context("reshape '%s': target entry %d at the given sizes", n->name, d);
      }
      GAttrs at = gattrs_new();
      ga_ints(&at, "newshape", k, v);
      ga_int(&at, "allowzero", gattr_int(&n->attrs, "allowzero", 0));
      GNode *x = map[n->args[0]->id];
      if (!rc) r = graph_call(ng, "reshape", 1, &x, at, n->name);
    } else {
      GNode **args = xcalloc((size_t)n->nargs + 1, sizeof(GNode *));
      for (int a = 0; a < n->nargs; a++) args[a] = map[n->args[a]->id];
      r = graph_copy_call(ng, n, args);
      free(args);
    }
    if (!r) rc = -1;
    map[n->id] = r;
  }
  for (int i = 0; i < g->outputs.len && !rc; i++)
    graph_add_named_output(ng, map[((GNode *)g->outputs.data[i])->id], graph_output_name(g, i));
  free(map);
  if (rc) {
    graph_free(ng);
    return NULL;
  }
  return ng;
}

int sym_postfix(StrBuf *sb, const Expr *e) {
  if (e->kind == EK_IntImm) {
    sb_printf(sb, "%s%lld", sb->len ? " " : "", (long long)e->int_value);
    return 0;
  }
  if (e->kind == EK_Var) {
    sb_printf(sb, "%s%s", sb->len ? " " : "", e->var.name);
    return 0;
  }
  if (e->kind == EK_Cast) return sym_postfix(sb, e->bin.a);
  if (e->kind == EK_Select) { /* cond t f sel */
    if (sym_postfix(sb, e->select.cond) || sym_postfix(sb, e->select.t) || sym_postfix(sb, e->select.f)) return -1;
    sb_printf(sb, " sel");
    return 0;
  }
  for (size_t i = 0; i < sizeof rpn_ops / sizeof rpn_ops[0]; i++)
    if (rpn_ops[i].kind == e->kind) {
      if (sym_postfix(sb, e->bin.a) || sym_postfix(sb, e->bin.b)) return -1;
      sb_printf(sb, " %s", rpn_ops[i].tok);
      return 0;
    }
  return kiln_set_error("shape expression %s: the runtime cannot evaluate it", ir_expr_str((Expr *)e));
}

Expr *sym_parse_postfix(const Graph *g, const char *s, size_t len) { return postfix_expr(g, NULL, s, len); }

void graph_copy_syms(Graph *ng, const Graph *og) {
  for (int i = 0; i < og->syms.len; i++) {
    const GSym *os = og->syms.data[i];
    if (graph_sym_find(ng, os->name)) continue;
    kiln_arena_push(ng->arena);
    GSym *s = KNEW(GSym);
    *s = *os;
    s->name = kstrdup(os->name);
    s->var = ir_var(s->name, DT_I32);
    if (os->value_of) s->value_of = kstrdup(os->value_of);
    av_push(&ng->syms, s);
    kiln_arena_pop();
  }
}

TType sym_copy_type(Graph *ng, const Graph *og, const TType *t) {
  TType r = *t;
  if (!ttype_is_symbolic(t)) {
    r.sym = NULL;
    return r;
  }
  PtrMap vmap = {0};
  graph_copy_syms(ng, og);
  for (int i = 0; i < og->syms.len; i++) {
    const GSym *os = og->syms.data[i];
    pm_put(&vmap, os->var, graph_sym_find(ng, os->name)->var);
  }
  kiln_arena_push(ng->arena);
  SymDims *sd = KNEW(SymDims);
  for (int d = 0; d < t->ndim; d++) sd->dim[d] = t->sym->dim[d] ? ir_substitute(t->sym->dim[d], &vmap) : NULL;
  kiln_arena_pop();
  pm_free(&vmap);
  r.sym = sd;
  return r;
}
