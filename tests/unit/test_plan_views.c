/*
 * test_plan_views.c - the memory planner's concatenation views
 * (kiln_graph_plan_memory_views), checked by running the plan: a simulated
 * memory of 64-byte units, each holding the tag of the entry whose value is
 * there.  Every node, in order, first checks that each input's bytes hold
 * that input's value (an entry's value is its own tag in every unit; an
 * alias's is its input's; a concatenation's is its inputs' values end to
 * end), then writes its outputs -- except an alias and a concatenation
 * whose inputs are views, which compute nothing.  A plan that lets two live
 * values overlap, frees a view's storage early or puts a view at the wrong
 * offset fails that check.  Random graphs of kernels, aliases, in-place
 * kernels and concatenations (with one reader or several, and inputs read
 * by it alone or not) are planned and
 * run, and a corrupted copy of each plan must fail.
 */
#include <stdlib.h>
#include <string.h>

#include "kiln/runtime.h"
#include "test.h"

#define UNIT 64
#define MAX_NODES 48
#define MAX_IN 4

typedef struct PlanGraph {
  int n;
  KilnPlanNode nodes[MAX_NODES];
  int32_t inputs[MAX_NODES][MAX_IN];
  uint64_t bytes[MAX_NODES]; /* one output per node: entry e is node e's */
  int nheads;
  int32_t heads[2];
} PlanGraph;

static uint32_t rng_next(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

/* Entry e's value, in units: its tag, or what an alias or a concatenation
 * passes on.  Returns the number of units written to val. */
static int value_of(const PlanGraph *g, int e, int *val) {
  const KilnPlanNode *nd = &g->nodes[e];
  if (nd->kind == KILN_PLAN_ALIAS) return value_of(g, nd->inputs[0], val);
  if (nd->kind == KILN_PLAN_CONCAT) {
    int n = 0;
    for (int i = 0; i < nd->num_inputs; i++) n += value_of(g, nd->inputs[i], val + n);
    return n;
  }
  int n = (int)(g->bytes[e] / UNIT);
  for (int u = 0; u < n; u++) val[u] = e;
  return n;
}

/* Whether entry e's bytes in mem hold its value; else 1 with why. */
static int wrong_value(const PlanGraph *g, const int32_t *sid, const uint64_t *off, const int *mem,
                       int units, int *val, int n, int e, char *why, size_t why_len) {
  int nv = value_of(g, e, val);
  const int *at = mem + (size_t)sid[e] * units + off[e] / UNIT;
  for (int u = 0; u < nv; u++)
    if (at[u] != val[u]) {
      snprintf(why, why_len, "node %d reads entry %d: unit %d holds %d, expected %d", n, e, u,
               at[u], val[u]);
      return 1;
    }
  return 0;
}

/* Run the plan on simulated memory, then read the heads; 0 if every read
 * finds its value, else 1 with the first wrong read in *why. */
static int run_plan(const PlanGraph *g, const int32_t *sid, const uint64_t *off, int nstorage,
                    char *why, size_t why_len) {
  int units = 0;
  for (int e = 0; e < g->n; e++) units += (int)((off[e] + g->bytes[e]) / UNIT);
  int *mem = malloc((size_t)nstorage * (size_t)units * sizeof *mem);
  int *val = malloc((size_t)units * sizeof *val);
  for (int i = 0; i < nstorage * units; i++) mem[i] = -1;
  int bad = 0;
  for (int n = 0; n < g->n && !bad; n++) {
    const KilnPlanNode *nd = &g->nodes[n];
    int views = nd->kind == KILN_PLAN_CONCAT;
    for (int i = 0; i < nd->num_inputs; i++) views &= sid[nd->inputs[i]] == sid[n];
    for (int i = 0; i < nd->num_inputs && !bad; i++)
      bad = wrong_value(g, sid, off, mem, units, val, n, nd->inputs[i], why, why_len);
    if (nd->kind == KILN_PLAN_ALIAS || views) continue;
    int nv = value_of(g, n, val);
    int *at = mem + (size_t)sid[n] * units + off[n] / UNIT;
    memcpy(at, val, (size_t)nv * sizeof *val);
  }
  for (int h = 0; h < g->nheads && !bad; h++)
    bad = wrong_value(g, sid, off, mem, units, val, g->n, g->heads[h], why, why_len);
  free(mem);
  free(val);
  return bad;
}

/* A random graph: two arguments, then kernels (some in place), aliases and
 * concatenations of 2-4 fresh kernels' outputs (sometimes one of them
 * read by a second kernel, which keeps the copy; one or two readers of the
 * concatenation), each feeding later nodes; heads the last node
 * and one other. */
static void random_graph(PlanGraph *g, uint32_t *s) {
  memset(g, 0, sizeof *g);
  int n = 0;
#define ADD(kind_, nin_, bytes_)                                                                   \
  (g->nodes[n] = (KilnPlanNode){(kind_), (nin_), g->inputs[n], n, 1, 0}, g->bytes[n] = (bytes_), n++)
  ADD(KILN_PLAN_ARG, 0, UNIT * (1 + rng_next(s) % 4));
  ADD(KILN_PLAN_ARG, 0, UNIT * (1 + rng_next(s) % 4));
  while (n < MAX_NODES - 16) {
    int r = (int)(rng_next(s) % 10);
    int pick = n - 1 - (int)(rng_next(s) % (n < 4 ? n : 4)); /* a recent entry */
    if (r < 4) { /* a kernel of one or two inputs */
      g->inputs[n][0] = pick;
      g->inputs[n][1] = (int32_t)(rng_next(s) % (uint32_t)n);
      int two = rng_next(s) % 2;
      uint64_t b = rng_next(s) % 3 ? g->bytes[pick] : UNIT * (1 + rng_next(s) % 6);
      g->nodes[n].inplace_input = b == g->bytes[pick] && rng_next(s) % 2 ? 1 : 0;
      ADD(KILN_PLAN_OP, 1 + two, b);
    } else if (r < 5) { /* an alias */
      g->inputs[n][0] = pick;
      ADD(KILN_PLAN_ALIAS, 1, g->bytes[pick]);
    } else { /* producers (each after a kernel of its own), then their concatenation */
      int k = 2 + (int)(rng_next(s) % 3), prod[MAX_IN];
      uint64_t total = 0;
      for (int i = 0; i < k; i++) {
        g->inputs[n][0] = pick;
        ADD(KILN_PLAN_OP, 1, UNIT * (1 + rng_next(s) % 3));
        g->inputs[n][0] = n - 1;
        uint64_t b = UNIT * (1 + rng_next(s) % 5);
        total += b;
        prod[i] = n;
        ADD(KILN_PLAN_OP, 1, b);
      }
      if (rng_next(s) % 4 == 0) { /* a second reader of one producer: no views */
        g->inputs[n][0] = prod[rng_next(s) % (uint32_t)k];
        ADD(KILN_PLAN_OP, 1, UNIT);
      }
      for (int i = 0; i < k; i++) g->inputs[n][i] = prod[i];
      ADD(KILN_PLAN_CONCAT, k, total);
      int c = n - 1;
      g->inputs[n][0] = c; /* its reader, sometimes two */
      ADD(KILN_PLAN_OP, 1, UNIT * (1 + rng_next(s) % 4));
      if (rng_next(s) % 3 == 0) {
        g->inputs[n][0] = c;
        ADD(KILN_PLAN_OP, 1, UNIT);
      }
    }
  }
#undef ADD
  g->n = n;
  g->nheads = 2;
  g->heads[0] = n - 1;
  g->heads[1] = 2 + (int)(rng_next(s) % (uint32_t)(n - 3));
}

static int plan(const PlanGraph *g, int32_t *sid, uint64_t *off, KilnMemoryPlan *p) {
  return kiln_graph_plan_memory_views(g->n, g->nodes, g->n, g->bytes, NULL, g->nheads, g->heads,
                                      sid, off, p);
}

/* Which concatenations get views: the rule's cases one by one. */
static void test_plan_views_rule(void) {
  /* e0 arg; e1, e2 kernels of e0; e3 = concat(e1, e2); e4 reads e3 */
  PlanGraph g = {0};
  g.n = 5;
  int32_t in1[] = {0}, in3[] = {1, 2}, in4[] = {3};
  g.nodes[0] = (KilnPlanNode){KILN_PLAN_ARG, 0, NULL, 0, 1, 0};
  g.nodes[1] = (KilnPlanNode){KILN_PLAN_OP, 1, in1, 1, 1, 0};
  g.nodes[2] = (KilnPlanNode){KILN_PLAN_OP, 1, in1, 2, 1, 0};
  g.nodes[3] = (KilnPlanNode){KILN_PLAN_CONCAT, 2, in3, 3, 1, 0};
  g.nodes[4] = (KilnPlanNode){KILN_PLAN_OP, 1, in4, 4, 1, 0};
  uint64_t b[5] = {256, 128, 192, 320, 64};
  memcpy(g.bytes, b, sizeof b);
  g.nheads = 1;
  g.heads[0] = 4;
  int32_t sid[6]; /* the graph grows to 6 entries below */
  uint64_t off[6];
  KilnMemoryPlan p;
  char why[200];
  CHECK_OK(plan(&g, sid, off, &p));
  CHECK_INT(p.num_views, 2);
  CHECK_INT(sid[1], sid[3]);
  CHECK_INT(sid[2], sid[3]);
  CHECK_INT(off[1], 0);
  CHECK_INT(off[2], 128);
  CHECK_INT(off[3], 0);
  CHECK(sid[0] != sid[3] && sid[4] != sid[3]);
  CHECK_MSG(!run_plan(&g, sid, off, p.num_storage, why, sizeof why), "%s", why);
  /* without views (the plain planner) the concatenation is a kernel */
  CHECK_OK(kiln_graph_plan_memory(g.n, g.nodes, g.n, g.bytes, NULL, 1, g.heads, sid, &p));
  CHECK_INT(p.num_views, 0);
  CHECK(sid[1] != sid[3] && sid[2] != sid[3]);
  /* each rule: the output a head, an input not at a 64-byte multiple, an
   * input an argument, the sizes not adding up */
  g.heads[0] = 3;
  CHECK_OK(plan(&g, sid, off, &p));
  CHECK_INT(p.num_views, 0);
  g.heads[0] = 4;
  g.bytes[1] = 100;
  g.bytes[3] = 292;
  CHECK_OK(plan(&g, sid, off, &p));
  CHECK_INT(p.num_views, 0);
  g.bytes[1] = 128;
  g.bytes[3] = 320;
  in3[0] = 0;
  g.bytes[3] = 448;
  CHECK_OK(plan(&g, sid, off, &p));
  CHECK_INT(p.num_views, 0);
  in3[0] = 1;
  CHECK_OK(plan(&g, sid, off, &p));
  CHECK_INT(p.num_views, 0);
  g.bytes[3] = 320;
  /* two readers of the output: views still */
  int32_t in5[] = {3};
  g.nodes[5] = (KilnPlanNode){KILN_PLAN_OP, 1, in5, 5, 1, 0};
  g.bytes[5] = 64;
  g.n = 6;
  g.heads[1] = 5;
  g.nheads = 2;
  CHECK_OK(plan(&g, sid, off, &p));
  CHECK_INT(p.num_views, 2);
  CHECK_MSG(!run_plan(&g, sid, off, p.num_storage, why, sizeof why), "%s", why);
  /* an input with a second reader: the copy stays */
  in5[0] = 2;
  CHECK_OK(plan(&g, sid, off, &p));
  CHECK_INT(p.num_views, 0);
  CHECK_MSG(!run_plan(&g, sid, off, p.num_storage, why, sizeof why), "%s", why);
  in5[0] = 3;
  CHECK(kiln_graph_plan_memory_views(g.n, g.nodes, g.n, g.bytes, NULL, 2, g.heads, sid, NULL,
                                     &p) != 0);
  CHECK_STR(kiln_last_error(), "plan_memory: storage_offset is NULL");
}

/* Random graphs: every plan runs right, and a corrupted one does not. */
static void test_plan_views_random(void) {
  uint32_t s = 0x9e3779b9u;
  int with_views = 0, caught = 0;
  for (int trial = 0; trial < 300; trial++) {
    PlanGraph g;
    random_graph(&g, &s);
    int32_t sid[MAX_NODES];
    uint64_t off[MAX_NODES];
    KilnMemoryPlan p;
    char why[200];
    CHECK_OK(plan(&g, sid, off, &p));
    CHECK_MSG(!run_plan(&g, sid, off, p.num_storage, why, sizeof why), "trial %d: %s", trial, why);
    int32_t plain[MAX_NODES];
    uint64_t zero[MAX_NODES] = {0};
    KilnMemoryPlan q;
    CHECK_OK(kiln_graph_plan_memory(g.n, g.nodes, g.n, g.bytes, NULL, g.nheads, g.heads, plain, &q));
    CHECK_MSG(!run_plan(&g, plain, zero, q.num_storage, why, sizeof why), "trial %d: %s", trial, why);
    if (!p.num_views) continue;
    with_views++;
    /* corrupt it: a view one unit off, or the storage holding a view given
     * to a kernel computed before the concatenation reads it (as if freed) */
    int32_t bsid[MAX_NODES];
    uint64_t boff[MAX_NODES];
    memcpy(bsid, sid, sizeof sid);
    memcpy(boff, off, sizeof off);
    int c = -1;
    for (int n = 0; n < g.n && c < 0; n++)
      if (g.nodes[n].kind == KILN_PLAN_CONCAT && sid[g.nodes[n].inputs[0]] == sid[n]) c = n;
    if (trial % 2) {
      boff[g.nodes[c].inputs[1]] -= UNIT;
    } else { /* the kernel before the last producer */
      int first = g.nodes[c].inputs[0], victim = g.nodes[c].inputs[g.nodes[c].num_inputs - 1] - 1;
      bsid[victim] = sid[c];
      boff[victim] = off[first];
    }
    if (run_plan(&g, bsid, boff, p.num_storage, why, sizeof why)) caught++;
  }
  CHECK_MSG(with_views > 50, "only %d of 300 random graphs had views", with_views);
  CHECK_INT(caught, with_views);
}

const TestCase plan_views_tests[] = {
    {"rule", test_plan_views_rule},
    {"random", test_plan_views_random},
    {NULL, NULL},
};
