/*
 * cse.c - common subexpression elimination: two calls of the same op with
 * the same argument nodes and equal attributes become one.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

static bool attrs_equal(const GAttrs *a, const GAttrs *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++) {
    const GAttr *x = &a->a[i], *y = gattr_find(b, x->key);
    if (!y || x->kind != y->kind) return false;
    switch (x->kind) {
    case GA_INT:
      if (x->i != y->i) return false;
      break;
    case GA_FLOAT:
      if (x->f != y->f) return false;
      break;
    case GA_STR:
      if (strcmp(x->s, y->s)) return false;
      break;
    case GA_INTS:
      if (x->n != y->n || memcmp(x->ints, y->ints, sizeof(int64_t) * (size_t)x->n)) return false;
      break;
    case GA_FLOATS:
      if (x->n != y->n || memcmp(x->floats, y->floats, sizeof(double) * (size_t)x->n)) return false;
      break;
    }
  }
  return true;
}

typedef struct {
  AVec made; /* new call nodes made so far */
} Cse;

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  Cse *c = ud;
  for (int i = 0; i < c->made.len; i++) {
    GNode *m = c->made.data[i];
    if (m->op != old->op || m->nargs != old->nargs) continue;
    bool same = true;
    for (int a = 0; a < m->nargs && same; a++) same = m->args[a] == args[a];
    if (same && attrs_equal(&m->attrs, &old->attrs)) return m;
  }
  GNode *r = graph_copy_call(ng, old, args);
  if (r) av_push(&c->made, r);
  return r;
}

Graph *pass_cse(Graph *g, const PassContext *pc) {
  (void)pc;
  KArena *a = kiln_arena_new();
  kiln_arena_push(a);
  Cse c = {{0}};
  Graph *r = graph_rewrite(g, rewrite, &c);
  kiln_arena_pop();
  kiln_arena_free(a);
  return r;
}
