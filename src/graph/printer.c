/*
 * printer.c - the graph as Relay-style text, so a TVM user reads it at a
 * glance:
 *
 *   fn (%data: Tensor[(1, 3, 224, 224), float32], %p0: ...) -> Tensor[(1, 1000), float32] {
 *     %0 = nn.conv2d(%data, %p0, strides=[2, 2], padding=[3, 3, 3, 3])  (then its type)
 *     ...
 *     %41
 *   }
 *
 * Variables and non-scalar constants are the function's parameters; scalar
 * constants print inline as literals.
 */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

static void print_attr(StrBuf *sb, const GAttr *a) {
  sb_printf(sb, "%s=", a->key);
  switch (a->kind) {
  case GA_INT:
    sb_printf(sb, "%lld", (long long)a->i);
    break;
  case GA_FLOAT:
    sb_printf(sb, "%g", a->f);
    if (a->f == (double)(int64_t)a->f) sb_puts(sb, "f");
    break;
  case GA_STR:
    sb_printf(sb, "\"%s\"", a->s);
    break;
  case GA_INTS:
    sb_putc(sb, '[');
    for (int i = 0; i < a->n; i++) sb_printf(sb, "%s%lld", i ? ", " : "", (long long)a->ints[i]);
    sb_putc(sb, ']');
    break;
  case GA_FLOATS:
    sb_putc(sb, '[');
    for (int i = 0; i < a->n; i++) sb_printf(sb, "%s%g", i ? ", " : "", a->floats[i]);
    sb_putc(sb, ']');
    break;
  }
}

static void print_ref(StrBuf *sb, GNode *n, const int *num) {
  if (n->kind == GN_CALL) {
    sb_printf(sb, "%%%d", num[n->id]);
  } else if (gnode_is_scalar_const(n) && n->type.ndim == 0) {
    double v = gnode_scalar_value(n);
    if (dt_is_float(n->type.dtype))
      sb_printf(sb, "%gf", v);
    else
      sb_printf(sb, "%lld", (long long)v);
  } else {
    sb_printf(sb, "%%%s", n->name);
  }
}

char *graph_to_text(Graph *g) {
  StrBuf sb = {0};
  KArena *tmp = kiln_arena_new();
  kiln_arena_push(tmp);
  int *num = xcalloc((size_t)g->nodes.len + 1, sizeof(int));
  int k = 0;
  for (int i = 0; i < g->nodes.len; i++) {
    GNode *n = g->nodes.data[i];
    if (n->kind == GN_CALL) num[n->id] = k++;
  }
  sb_puts(&sb, "fn (");
  bool first = true;
  for (int i = 0; i < g->nodes.len; i++) {
    GNode *n = g->nodes.data[i];
    if (n->kind == GN_CALL || (n->kind == GN_CONST && n->type.ndim == 0 && gnode_is_scalar_const(n))) continue;
    sb_printf(&sb, "%s%%%s: %s", first ? "" : ", ", n->name, ttype_str(&n->type));
    first = false;
  }
  sb_puts(&sb, ") -> ");
  if (g->outputs.len == 1) {
    sb_puts(&sb, ttype_str(&((GNode *)g->outputs.data[0])->type));
  } else {
    sb_puts(&sb, "(");
    for (int i = 0; i < g->outputs.len; i++) sb_printf(&sb, "%s%s", i ? ", " : "", ttype_str(&((GNode *)g->outputs.data[i])->type));
    sb_puts(&sb, ")");
  }
  sb_puts(&sb, " {\n");
  for (int i = 0; i < g->nodes.len; i++) {
    GNode *n = g->nodes.data[i];
    if (n->kind != GN_CALL) continue;
    sb_printf(&sb, "  %%%d = %s(", num[n->id], n->op->name);
    for (int a = 0; a < n->nargs; a++) {
      if (a) sb_puts(&sb, ", ");
      print_ref(&sb, n->args[a], num);
    }
    for (int a = 0; a < n->attrs.n; a++) {
      sb_puts(&sb, ", ");
      print_attr(&sb, &n->attrs.a[a]);
    }
    sb_printf(&sb, ") /* ty=%s */;\n", ttype_str(&n->type));
  }
  sb_puts(&sb, "  ");
  if (g->outputs.len == 1) {
    print_ref(&sb, g->outputs.data[0], num);
  } else {
    sb_putc(&sb, '(');
    for (int i = 0; i < g->outputs.len; i++) {
      if (i) sb_puts(&sb, ", ");
      print_ref(&sb, g->outputs.data[i], num);
    }
    sb_putc(&sb, ')');
  }
  sb_puts(&sb, "\n}\n");
  free(num);
  kiln_arena_pop();
  kiln_arena_free(tmp);
  return sb_steal(&sb);
}

/* The inputs of a fused group are named %p0, %p1, ... inside its function;
 * scalar constants stay literals. */
static void print_group_ref(StrBuf *sb, GNode *n, FusedGroup *fg, PtrMap *local) {
  intptr_t k = (intptr_t)pm_get(local, n);
  if (k > 0) {
    sb_printf(sb, "%%%d", (int)k - 1);
    return;
  }
  int pi = av_find(&fg->inputs, n);
  if (pi >= 0 && !(gnode_is_scalar_const(n) && n->type.ndim == 0)) {
    int p = 0;
    for (int i = 0; i < pi; i++) {
      GNode *in = fg->inputs.data[i];
      if (!(gnode_is_scalar_const(in) && in->type.ndim == 0)) p++;
    }
    sb_printf(sb, "%%p%d", p);
    return;
  }
  int dummy[1] = {0};
  print_ref(sb, n, dummy);
}

char *graph_to_text_fused(Graph *g, AVec *groups) {
  StrBuf sb = {0};
  KArena *tmp = kiln_arena_new();
  kiln_arena_push(tmp);
  PtrMap gout = {0}; /* group output node -> group index + 1 */
  for (int i = 0; i < groups->len; i++) pm_put(&gout, ((FusedGroup *)groups->data[i])->out, (void *)(intptr_t)(i + 1));
  sb_puts(&sb, "fn (");
  bool first = true;
  for (int i = 0; i < g->nodes.len; i++) {
    GNode *n = g->nodes.data[i];
    if (n->kind != GN_VAR) continue;
    sb_printf(&sb, "%s%%%s: %s", first ? "" : ", ", n->name, ttype_str(&n->type));
    first = false;
  }
  sb_puts(&sb, ") {\n");
  for (int i = 0; i < groups->len; i++) {
    FusedGroup *fg = groups->data[i];
    sb_printf(&sb, "  %%%d = %s(", i, fg->func_name);
    bool f1 = true;
    for (int k = 0; k < fg->inputs.len; k++) {
      GNode *in = fg->inputs.data[k];
      if (gnode_is_scalar_const(in) && in->type.ndim == 0) continue;
      if (!f1) sb_puts(&sb, ", ");
      f1 = false;
      intptr_t gi = (intptr_t)pm_get(&gout, in);
      if (gi) sb_printf(&sb, "%%%d", (int)gi - 1);
      else sb_printf(&sb, "%%%s", in->name);
    }
    sb_printf(&sb, ") /* ty=%s */;\n", ttype_str(&fg->out->type));
  }
  sb_puts(&sb, "  ");
  for (int i = 0; i < g->outputs.len; i++) {
    GNode *o = g->outputs.data[i];
    intptr_t gi = (intptr_t)pm_get(&gout, o);
    if (i) sb_puts(&sb, ", ");
    if (gi) sb_printf(&sb, "%%%d", (int)gi - 1);
    else sb_printf(&sb, "%%%s", o->name);
  }
  sb_puts(&sb, "\n}\n");
  for (int i = 0; i < groups->len; i++) {
    FusedGroup *fg = groups->data[i];
    if (fg->kernel != fg->id) continue; /* a shared kernel, printed once */
    sb_printf(&sb, "\n%s = fn (", fg->func_name);
    int p = 0;
    for (int k = 0; k < fg->inputs.len; k++) {
      GNode *in = fg->inputs.data[k];
      if (gnode_is_scalar_const(in) && in->type.ndim == 0) continue;
      sb_printf(&sb, "%s%%p%d: %s", p ? ", " : "", p, ttype_str(&in->type));
      p++;
    }
    sb_printf(&sb, "%sPrimitive=1) -> %s {\n", p ? ", " : "", ttype_str(&fg->out->type));
    PtrMap local = {0};
    for (int k = 0; k < fg->nodes.len; k++) {
      GNode *n = fg->nodes.data[k];
      bool last = k == fg->nodes.len - 1;
      if (last)
        sb_printf(&sb, "  %s(", n->op->name);
      else
        sb_printf(&sb, "  %%%d = %s(", k, n->op->name);
      for (int a = 0; a < n->nargs; a++) {
        if (a) sb_puts(&sb, ", ");
        print_group_ref(&sb, n->args[a], fg, &local);
      }
      for (int a = 0; a < n->attrs.n; a++) {
        sb_puts(&sb, ", ");
        print_attr(&sb, &n->attrs.a[a]);
      }
      sb_puts(&sb, last ? ")\n" : ");\n");
      pm_put(&local, n, (void *)(intptr_t)(k + 1));
    }
    pm_free(&local);
    sb_puts(&sb, "}\n");
  }
  pm_free(&gout);
  kiln_arena_pop();
  kiln_arena_free(tmp);
  return sb_steal(&sb);
}
