/*
 * export_c.c - a model as standalone C: no runtime, no allocation, one
 * call (DESIGN.md §8 "Deploy as plain C"; docs/deploy_c.md for users).
 *
 * The fused groups are built exactly as for the shared library
 * (graph_build_group: the same templates, tuning records, Winograd and
 * fallback configs), then generated as plain kernels (codegen_c_plain_*:
 * static functions over pointers, static shapes, no argument checks).
 * What the graph executor does at run time happens here at export time:
 *
 *   - the memory plan: every intermediate tensor and every kernel's
 *     scratch area gets an offset in one workspace the caller provides,
 *     placed greedily by size over live ranges (TVM's USMP greedy_by_size:
 *     the largest first, each at the lowest offset that no tensor live at
 *     the same time occupies); inputs and outputs are the caller's arrays,
 *     so NAME_WORKSPACE_BYTES is the intermediates alone.  A channel
 *     concatenation whose inputs the graph executor's planner makes views
 *     (kiln_graph_plan_memory_views over the kernels, concat_views) gets
 *     one buffer live from its first input on, each input is written in
 *     place there and its kernel is not called;
 *   - the executor: NAME_run calls the kernels in graph order, straight
 *     line, each with its pointers (AOT, as TVM's AOT executor);
 *   - the parameters: C const arrays (or offsets into NAME.bin).
 *
 * Nothing in the generated code writes a global, so NAME_run is reentrant:
 * two threads with two workspaces may run at once.
 */
#include "export_c.h"
#include "strategy.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int cexport_isa_lanes(int isa) {
  switch ((CExportIsa)isa) {
  case CEXPORT_ISA_GENERIC:
    return 4;
  case CEXPORT_ISA_AVX2:
    return 8;
  case CEXPORT_ISA_AVX512:
    return 16;
  case CEXPORT_ISA_NATIVE:
    break;
  }
  return 0;
}

static const char *c_keywords[] = {"auto", "break", "case", "char", "const", "continue", "default", "do", "double",
                                   "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
                                   "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
                                   "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "workspace",
                                   "weights", NULL};

/* A C identifier for a model name, unique among used (string keys). */
static const char *c_ident(const char *name, PtrMap *used) {
  StrBuf sb = {0};
  for (const char *p = name; *p; p++) {
    char ch = *p;
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
    sb_putc(&sb, ok ? ch : '_');
  }
  if (!sb.len || (sb.data[0] >= '0' && sb.data[0] <= '9') || sb.data[0] == '_') {
    char *d = sb_steal(&sb);
    sb_printf(&sb, "v_%s", d);
    free(d);
  }
  for (int i = 0; c_keywords[i]; i++)
    if (!strcmp(sb.data, c_keywords[i])) sb_putc(&sb, '_');
  const char *id = kstrdup(sb.data);
  for (int k = 2; pm_has(used, id); k++) id = kfmt("%s_%d", sb.data, k);
  pm_put(used, id, (void *)1);
  sb_free(&sb);
  return id;
}

static bool is_c_identifier(const char *s) {
  if (!s || !*s || (*s >= '0' && *s <= '9')) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return false;
  return true;
}

static int check_dtype(DType t, const char *what, const char *name) {
  bool ok = dt_is_bool(t) || (t.lanes == 1 && ((t.code == kDLFloat && (t.bits == 32 || t.bits == 64)) ||
                                               ((t.code == kDLInt || t.code == kDLUInt) &&
                                                (t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64))));
  if (!ok)
    return kiln_set_error("standalone C: %s '%s' has dtype %s, which plain C99 cannot hold (supported: float32, "
                          "float64, int8-64, uint8-64, bool)",
                          what, name, dt_str(t));
  return 0;
}

static void fill_tensor(CTensor *t, GNode *n, const char *name, PtrMap *used) {
  t->name = name;
  t->cname = c_ident(name, used);
  t->type = n->type;
  t->bytes = ttype_numel(&n->type) * (dt_is_bool(n->type.dtype) ? 1 : dt_bytes(n->type.dtype));
}

/* ---- the memory plan ---- */

typedef struct Buf {
  int64_t bytes, offset;
  int first, last; /* live from kernel first to kernel last, both included */
  int kernel;      /* whose output (or, for scratch, whose scratch) */
  bool scratch;
  int view;        /* 1 + the concatenation kernel whose buffer holds it at
                    * view_at (placed with that buffer), else 0 */
  int64_t view_at;
} Buf;

static int by_size(const void *a, const void *b) {
  const Buf *x = *(Buf *const *)a, *y = *(Buf *const *)b;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return x->first - y->first;
}

/* Greedy by size: the largest buffer first, each at the lowest aligned
 * offset where it overlaps no placed buffer live at the same time. */
static int64_t plan_offsets(Buf *bufs, int n) {
  Buf **order = xcalloc((size_t)n + 1, sizeof *order);
  for (int i = 0; i < n; i++) order[i] = &bufs[i];
  qsort(order, (size_t)n, sizeof *order, by_size);
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    Buf *b = order[i];
    if (b->view) continue;
    int64_t off = 0;
    for (bool moved = true; moved;) {
      moved = false;
      for (int j = 0; j < i; j++) {
        Buf *p = order[j];
        if (p->view) continue;
        bool live_together = p->first <= b->last && b->first <= p->last;
        if (live_together && off < p->offset + p->bytes && p->offset < off + b->bytes) {
          off = (p->offset + p->bytes + CEXPORT_ALIGN - 1) / CEXPORT_ALIGN * CEXPORT_ALIGN;
          moved = true;
        }
      }
    }
    b->offset = off;
    if (off + b->bytes > total) total = off + b->bytes;
  }
  free(order);
  return (total + CEXPORT_ALIGN - 1) / CEXPORT_ALIGN * CEXPORT_ALIGN;
}

/* The kernels as the graph executor's planner sees them: one entry a
 * node, the inputs and weights first (KILN_PLAN_ARG), then one node a
 * kernel (KILN_PLAN_CONCAT where graph_concat_view holds, else
 * KILN_PLAN_OP); the heads are the model's outputs. */
typedef struct PlanGraph {
  int n, nargs; /* nodes (= entries); the inputs and weights among them */
  KilnPlanNode *nodes;
  uint64_t *bytes;
  int32_t **ins; /* each kernel's input entries */
  int32_t *heads;
  int nheads;
} PlanGraph;

static void plan_graph_init(PlanGraph *pg, CExport *x, Graph *g, AVec *groups, GroupInfo *infos, PtrMap *entry_of,
                            const GraphBuildOptions *bo) {
  int nargs = x->nin + x->nweights, nk = groups->len, ne = nargs + nk;
  pg->n = ne;
  pg->nargs = nargs;
  pg->nodes = xcalloc((size_t)ne + 1, sizeof *pg->nodes);
  pg->bytes = xcalloc((size_t)ne + 1, sizeof *pg->bytes);
  pg->ins = xcalloc((size_t)nk + 1, sizeof *pg->ins);
  pg->heads = xcalloc((size_t)x->nout + 1, sizeof *pg->heads);
  pg->nheads = x->nout;
  for (int i = 0; i < nargs; i++) {
    pg->nodes[i] = (KilnPlanNode){KILN_PLAN_ARG, 0, NULL, i, 1, 0};
    pg->bytes[i] = (uint64_t)(i < x->nin ? x->in[i].bytes : x->weights[i - x->nin].bytes);
  }
  for (int k = 0; k < nk; k++) {
    GroupInfo *info = &infos[k];
    FusedGroup *fg = groups->data[k];
    pg->ins[k] = xcalloc((size_t)info->inputs.len + 1, sizeof **pg->ins);
    for (int a = 0; a < info->inputs.len; a++)
      pg->ins[k][a] = (int32_t)(intptr_t)pm_get(entry_of, info->inputs.data[a]) - 1;
    int kind = graph_concat_view(g, fg, info, bo) ? KILN_PLAN_CONCAT : KILN_PLAN_OP;
    pg->nodes[nargs + k] = (KilnPlanNode){kind, info->inputs.len, pg->ins[k], nargs + k, 1, 0};
    pg->bytes[nargs + k] =
        (uint64_t)(ttype_numel(&fg->out->type) * (dt_is_bool(fg->out->type.dtype) ? 1 : dt_bytes(fg->out->type.dtype)));
  }
  for (int o = 0; o < x->nout; o++) pg->heads[o] = (int32_t)(intptr_t)pm_get(entry_of, g->outputs.data[o]) - 1;
}

static void plan_graph_free(PlanGraph *pg) {
  for (int k = 0; k < pg->n - pg->nargs; k++) free(pg->ins[k]);
  free(pg->ins);
  free(pg->heads);
  free(pg->bytes);
  free(pg->nodes);
}

/* The concatenations that compute nothing, as the graph executor's plan
 * has them (kiln_graph_plan_memory_views: the rule exists once): view[k]
 * is 1 + the concatenation kernel whose buffer holds kernel k's output
 * (at at[k]), and view[c] is -1 for that concatenation.  An input of a
 * concatenation is a view when it shares the concatenation's storage. */
static void concat_views(const PlanGraph *pg, int *view, int64_t *at) {
  int32_t *sid = xcalloc((size_t)pg->n + 1, sizeof *sid);
  uint64_t *off = xcalloc((size_t)pg->n + 1, sizeof *off);
  if (kiln_graph_plan_memory_views(pg->n, pg->nodes, pg->n, pg->bytes, NULL, pg->nheads, pg->heads, sid, off, NULL) ==
      0) {
    for (int c = pg->nargs; c < pg->n; c++) {
      const KilnPlanNode *nd = &pg->nodes[c];
      for (int i = 0; nd->kind == KILN_PLAN_CONCAT && i < nd->num_inputs; i++) {
        int32_t e = nd->inputs[i];
        if (sid[e] != sid[nd->first_output]) continue;
        KASSERT(e >= pg->nargs);
        view[e - pg->nargs] = c - pg->nargs + 1;
        at[e - pg->nargs] = (int64_t)off[e];
        view[c - pg->nargs] = -1;
      }
    }
  }
  free(sid);
  free(off);
}

/* What the graph executor's plan (TVM's GraphPlanMemory, without views)
 * would give the kernels' outputs of the same graph, for comparison. */
static int64_t graph_executor_bytes(const PlanGraph *pg) {
  int32_t *sid = xcalloc((size_t)pg->n + 1, sizeof *sid);
  int64_t total = -1;
  KilnMemoryPlan plan;
  if (kiln_graph_plan_memory(pg->n, pg->nodes, pg->n, pg->bytes, NULL, pg->nheads, pg->heads, sid, &plan) == 0) {
    /* the storage the kernels' outputs use (inputs and weights have their own) */
    int64_t *size = xcalloc((size_t)plan.num_storage + 1, sizeof *size);
    for (int e = pg->nargs; e < pg->n; e++)
      if ((int64_t)pg->bytes[e] > size[sid[e]]) size[sid[e]] = (int64_t)pg->bytes[e];
    total = 0;
    for (int s = 0; s < plan.num_storage; s++) total += size[s];
    free(size);
  }
  free(sid);
  return total;
}

/* ---- NAME.c ---- */

static const char *isa_names[] = {"native", "generic", "avx2", "avx512"};
static const char *threads_names[] = {"none", "pthreads", "openmp"};

static void emit_prelude(CExport *x, StrBuf *c) {
  const CExportOptions *o = x->opt;
  sb_printf(c,
            "/*\n * %s.c - the model %s as standalone C, generated by Kiln %s (%s).\n"
            " * isa %s, threads %s%s, weights %s.  The API is in %s.h.\n */\n",
            x->prefix, o->model ? o->model : "(graph)", KILN_VERSION_STRING, CEXPORT_FORMAT, x->isa_name, x->threads_name,
            o->freestanding ? ", freestanding" : "", o->separate_weights ? "separate" : "embedded", x->prefix);
  sb_printf(c, "#include \"%s.h\"\n\n#include <stddef.h>\n#include <stdint.h>\n", x->prefix);
  if (!o->freestanding) sb_puts(c, "#include <math.h>\n#include <string.h>\n");
  if (o->threads == CTHREADS_PTHREADS) sb_puts(c, "#include <pthread.h>\n");
  sb_puts(c, "\n#if defined(__GNUC__) || defined(__clang__)\n"
             "#define KILN_ALIGN64 __attribute__((aligned(64)))\n"
             "#define KILN_PRAGMA(x) _Pragma(#x)\n"
             "#define KILN_UNROLL(n) KILN_PRAGMA(GCC unroll n)\n"
             "#else\n#define KILN_ALIGN64\n#define KILN_UNROLL(n)\n#endif\n");
  if (o->isa != CEXPORT_ISA_GENERIC) /* vectors wider than the ISA's pass between static functions only */
    sb_puts(c, "#if defined(__clang__)\n#pragma clang diagnostic ignored \"-Wunknown-warning-option\"\n#endif\n"
               "#if defined(__GNUC__) || defined(__clang__)\n#pragma GCC diagnostic ignored \"-Wpsabi\"\n#endif\n");
  sb_putc(c, '\n');
  if (o->freestanding) sb_printf(c, "#include \"kiln_math.h\"\n\n");
  if (o->threads == CTHREADS_PTHREADS) {
    sb_printf(c,
              "/* A parallel loop: tasks 1..n-1 on threads of their own, task 0 on the\n"
              " * caller's; a thread that cannot start runs its task inline. */\n"
              "typedef struct { int (*fn)(int, int, void *); void *c; int task, ntask, rc; } kiln_task_arg;\n"
              "static void *kiln_task_main(void *p) {\n  kiln_task_arg *a = (kiln_task_arg *)p;\n"
              "  a->rc = a->fn(a->task, a->ntask, a->c);\n  return 0;\n}\n"
              "static int kiln_parallel(int (*fn)(int, int, void *), void *c) {\n"
              "  enum { N = %s_NUM_THREADS };\n  pthread_t th[N];\n  kiln_task_arg a[N];\n  int started[N], rc = 0, i;\n"
              "  for (i = 1; i < N; i++) {\n    a[i].fn = fn; a[i].c = c; a[i].task = i; a[i].ntask = N; a[i].rc = 0;\n"
              "    started[i] = pthread_create(&th[i], 0, kiln_task_main, &a[i]) == 0;\n"
              "    if (!started[i]) a[i].rc = fn(i, N, c);\n  }\n"
              "  rc = fn(0, N, c);\n"
              "  for (i = 1; i < N; i++) {\n    if (started[i]) pthread_join(th[i], 0);\n    rc |= a[i].rc;\n  }\n"
              "  return rc;\n}\n\n",
              x->upper);
  }
  if (!o->separate_weights) {
    sb_puts(c, "/* the weights (in the weights files) */\n");
    for (int i = 0; i < x->nweights; i++)
      sb_printf(c, "extern const union %s_w%d { unsigned char b[%lld]; %s v[%lld]; } %s_w%d;\n", x->prefix, i,
                (long long)x->weights[i].bytes, cexport_ctype(x->weights[i].type.dtype),
                (long long)ttype_numel(&x->weights[i].type), x->prefix, i);
    sb_putc(c, '\n');
  }
}

/* Where a node's data lives while NAME_run runs. */
typedef enum LocKind { LOC_INPUT, LOC_OUTPUT, LOC_WEIGHT, LOC_BUFFER } LocKind;
typedef struct Loc {
  LocKind kind;
  int index; /* into x->in, x->out, x->weights, or the plan's buffers */
} Loc;

static void put_loc(PtrMap *where, GNode *n, LocKind kind, int index) {
  Loc *l = KNEW(Loc);
  l->kind = kind;
  l->index = index;
  pm_put(where, n, l);
}

/* The C expression of a node's data inside NAME_run. */
static const char *data_ref(CExport *x, GNode *n, PtrMap *where, Buf *bufs) {
  const Loc *l = pm_get(where, n);
  KASSERT(l);
  const char *ct = cexport_ctype(n->type.dtype);
  switch (l->kind) {
  case LOC_INPUT:
    return kfmt("(%s *)%s", ct, x->in[l->index].cname);
  case LOC_OUTPUT:
    return x->out[l->index].cname;
  case LOC_WEIGHT:
    if (x->opt->separate_weights)
      return kfmt("(%s *)(void *)(kiln_w + %lld)", ct, (long long)x->weights[l->index].offset);
    return kfmt("(%s *)%s_w%d.v", ct, x->prefix, l->index);
  case LOC_BUFFER:
    break;
  }
  return kfmt("(%s *)(void *)(kiln_ws + %lld)", ct, (long long)bufs[l->index].offset);
}

/* Whether a kernel writes model output o itself (else NAME_run copies it). */
static bool written_by_kernel(Graph *g, PtrMap *where, int o) {
  GNode *n = g->outputs.data[o];
  const Loc *l = pm_get(where, n);
  return n->kind == GN_CALL && l && l->kind == LOC_OUTPUT && l->index == o;
}

static void emit_signature(CExport *x, StrBuf *c, bool decl) {
  sb_printf(c, "int %s_run(", x->prefix);
  for (int i = 0; i < x->nin; i++) sb_printf(c, "const %s *%s, ", cexport_ctype(x->in[i].type.dtype), x->in[i].cname);
  for (int i = 0; i < x->nout; i++) sb_printf(c, "%s *%s, ", cexport_ctype(x->out[i].type.dtype), x->out[i].cname);
  sb_puts(c, "void *workspace");
  if (x->opt->separate_weights) sb_puts(c, ", const void *weights");
  sb_puts(c, decl ? ");\n" : ") {\n");
}

static const char *shape_str(const TType *t) {
  StrBuf sb = {0};
  sb_putc(&sb, '{');
  for (int d = 0; d < t->ndim; d++) sb_printf(&sb, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  if (!t->ndim) sb_puts(&sb, "1");
  sb_putc(&sb, '}');
  const char *r = kstrdup(sb.data);
  sb_free(&sb);
  return r;
}

static const char *json_str(const char *s) {
  StrBuf sb = {0};
  sb_putc(&sb, '"');
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\')
      sb_printf(&sb, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      sb_printf(&sb, "\\u%04x", *s);
    else
      sb_putc(&sb, *s);
  }
  sb_putc(&sb, '"');
  const char *r = kstrdup(sb.data);
  sb_free(&sb);
  return r;
}

/* A string that may sit inside a C comment. */
static const char *comment_safe(const char *s) {
  char *r = kstrdup(s ? s : "");
  for (char *p = r; *p; p++)
    if (p[0] == '*' && p[1] == '/') p[1] = '|';
  return r;
}

static char *header_text(CExport *x) {
  StrBuf h = {0};
  const CExportOptions *o = x->opt;
  const char *U = x->upper;
  sb_printf(&h, "/*\n * %s.h - the model %s as standalone C (Kiln %s, %s).\n *\n", x->prefix,
            comment_safe(o->model ? o->model : "(graph)"), KILN_VERSION_STRING, CEXPORT_FORMAT);
  sb_printf(&h,
            " * One call runs the model:\n *\n *   int %s_run(inputs..., outputs..., void *workspace%s);\n *\n"
            " * - inputs and outputs are dense row-major arrays of the shapes and types\n"
            " *   below, in the model's order; the outputs are written, the inputs only read;\n"
            " * - workspace: %s_WORKSPACE_BYTES bytes aligned to %s_WORKSPACE_ALIGN, owned by\n"
            " *   the caller (static, stack or heap); nothing else is allocated;\n",
            x->prefix, o->separate_weights ? ", const void *weights" : "", U, U);
  if (o->separate_weights)
    sb_printf(&h,
              " * - weights: the contents of %s.bin (%s_WEIGHTS_BYTES bytes, loaded or mapped\n"
              " *   by the caller, aligned to %s_WORKSPACE_ALIGN); %s_weights_check verifies them;\n",
              x->prefix, U, U, x->prefix);
  sb_printf(&h,
            " * - returns 0, or -1 for a NULL or misaligned workspace%s%s.\n"
            " * No global state is written: calls with different workspaces may run\n"
            " * at the same time on different threads.\n */\n",
            o->separate_weights ? " or weights, -2 for\n *   weights of another export" : "",
            o->threads == CTHREADS_PTHREADS ? ", -3 when a kernel failed" : "");
  sb_printf(&h, "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n", U, U);
  sb_printf(&h, "#define %s_VERSION \"%s (Kiln %s)\"\n", U, CEXPORT_FORMAT, KILN_VERSION_STRING);
  sb_printf(&h, "/* FNV-1a 64 of %s.c and the weights: which export this is */\n", x->prefix);
  sb_printf(&h, "#define %s_CHECKSUM \"%016llx\"\n", U, (unsigned long long)x->checksum);
  sb_printf(&h, "#define %s_ISA \"%s\"\n#define %s_THREADS \"%s\"\n#define %s_FREESTANDING %d\n", U, x->isa_name, U,
            x->threads_name, U, o->freestanding ? 1 : 0);
  if (o->threads == CTHREADS_PTHREADS)
    sb_printf(&h, "#ifndef %s_NUM_THREADS\n#define %s_NUM_THREADS 4 /* threads of a parallel loop; -D to change */\n#endif\n", U, U);
  sb_printf(&h, "\n#define %s_WORKSPACE_BYTES %lld\n#define %s_WORKSPACE_ALIGN %d\n", U, (long long)x->workspace_bytes, U,
            CEXPORT_ALIGN);
  if (o->separate_weights)
    sb_printf(&h, "#define %s_WEIGHTS_BYTES %lld\n#define %s_WEIGHTS_FILE \"%s.bin\"\n", U,
              (long long)(x->weights_bytes + CEXPORT_BIN_HEADER), U, x->prefix);
  sb_printf(&h, "\n#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n", U, x->nin, U, x->nout);
  for (int io = 0; io < 2; io++) {
    int n = io ? x->nout : x->nin;
    CTensor *ts = io ? x->out : x->in;
    const char *kind = io ? "OUTPUT" : "INPUT";
    for (int i = 0; i < n; i++) {
      CTensor *t = &ts[i];
      sb_printf(&h, "\n/* %s %d: %s */\n", io ? "output" : "input", i, comment_safe(t->name));
      sb_printf(&h, "#define %s_%s%d_NAME %s\n", U, kind, i, json_str(t->name));
      sb_printf(&h, "#define %s_%s%d_DTYPE \"%s\"\n", U, kind, i, dt_is_bool(t->type.dtype) ? "bool" : dt_str(t->type.dtype));
      sb_printf(&h, "#define %s_%s%d_NDIM %d\n", U, kind, i, t->type.ndim);
      sb_printf(&h, "#define %s_%s%d_SHAPE %s\n", U, kind, i, shape_str(&t->type));
      sb_printf(&h, "#define %s_%s%d_ELEMS %lld\n", U, kind, i, (long long)ttype_numel(&t->type));
      sb_printf(&h, "#define %s_%s%d_BYTES %lld\n", U, kind, i, (long long)t->bytes);
    }
  }
  sb_puts(&h, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  emit_signature(x, &h, true);
  if (o->separate_weights)
    sb_printf(&h,
              "/* 0 if weights (size bytes) are %s.bin of this export, else -1 (reads every byte). */\n"
              "int %s_weights_check(const void *weights, size_t size);\n",
              x->prefix, x->prefix);
  sb_printf(&h, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* %s_H */\n", U);
  return sb_steal(&h);
}

/* ---- the export ---- */

int graph_export_c(Graph *g, const CExportOptions *opt, const char *dir, CExportStats *stats) {
  if (graph_require_static(g, "--emit c")) return -1;
  if (!is_c_identifier(opt->prefix))
    return kiln_set_error("--prefix '%s' is not a C identifier (letters, digits and _, not starting with a digit)",
                          opt->prefix ? opt->prefix : "");
  if (opt->threads == CTHREADS_PTHREADS && opt->freestanding)
    return kiln_set_error("--freestanding cannot use --threads pthreads (pthreads is part of the C library); use "
                          "--threads none");
  char *path = xstrdup(dir); /* and its parents, as mkdir -p */
  for (char *p = path + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      mkdir(path, 0755);
      *p = '/';
    }
  mkdir(path, 0755);
  free(path);
  struct stat st;
  if (stat(dir, &st) || !S_ISDIR(st.st_mode)) return kiln_set_error("cannot create the output directory '%s'", dir);
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  int rc = 0;
  CExport x;
  memset(&x, 0, sizeof x);
  x.opt = opt;
  x.dir = dir;
  x.prefix = opt->prefix;
  char *up = kstrdup(opt->prefix);
  for (char *p = up; *p; p++)
    if (*p >= 'a' && *p <= 'z') *p = (char)(*p - 'a' + 'A');
  x.upper = up;
  /* --isa native with a target that names its CPU: the code is for that
   * CPU (-march=it), as its kernels are; else the ISA's own flags */
  const char *mcpu = opt->isa == CEXPORT_ISA_NATIVE && opt->target ? opt->target->attr[TA_MCPU] : NULL;
  x.isa_name = mcpu ? mcpu : isa_names[opt->isa];
  x.isa_flags = mcpu ? kfmt("-march=%s", mcpu) : cexport_isa_flags(opt->isa);
  x.threads_name = threads_names[opt->threads];

  AVec groups = {0};
  graph_fuse(g, opt->opt_level, &groups);
  GraphBuildOptions bo;
  memset(&bo, 0, sizeof bo);
  bo.opt_level = opt->opt_level;
  DispatchContext *own = opt->dispatch ? NULL : dispatch_context_new(); /* for the kernels */
  bo.dispatch = opt->dispatch ? opt->dispatch : own;
  bo.no_vector = opt->isa == CEXPORT_ISA_GENERIC;
  bo.target = opt->target;
  GroupInfo *infos = KNEWN(GroupInfo, groups.len + 1);
  LoweredFunc **funcs = KNEWN(LoweredFunc *, groups.len + 1);
  for (int i = 0; i < groups.len && !rc; i++) {
    FusedGroup *fg = groups.data[i];
    if (fg->kernel != fg->id) { /* the same function as an earlier group: its kernel */
      graph_build_share_group(fg, &infos[fg->kernel], &infos[i]);
      continue;
    }
    funcs[i] = graph_build_group(fg, &bo, &infos[i]);
    if (!funcs[i]) rc = -1;
  }
  dispatch_context_free(own);
  bo.dispatch = NULL;
  AVec params = {0};
  if (!rc) graph_build_params(g, &groups, infos, &params);

  /* the C boundary: inputs, outputs, weights */
  PtrMap used = {0};
  pm_init_str(&used);
  PtrMap where = {0}; /* GNode -> Loc */
  AVec vars = {0};
  for (int i = 0; i < g->nodes.len; i++)
    if (((GNode *)g->nodes.data[i])->kind == GN_VAR) av_push(&vars, g->nodes.data[i]);
  x.nin = vars.len;
  x.nout = g->outputs.len;
  x.nweights = params.len;
  x.in = KNEWN(CTensor, x.nin + 1);
  x.out = KNEWN(CTensor, x.nout + 1);
  x.weights = KNEWN(CTensor, x.nweights + 1);
  x.weight_nodes = (GNode **)params.data;
  for (int i = 0; i < x.nin && !rc; i++) {
    GNode *n = vars.data[i];
    fill_tensor(&x.in[i], n, n->name, &used);
    rc = check_dtype(n->type.dtype, "input", n->name);
    put_loc(&where, n, LOC_INPUT, i);
  }
  for (int i = 0; i < x.nout && !rc; i++) {
    GNode *n = g->outputs.data[i];
    /* the C parameter is output<i>: the graph keeps the name of the node
     * that computes an output, not the model's name for it */
    fill_tensor(&x.out[i], n, kfmt("output%d", i), &used);
    if (n->kind == GN_CALL && n->name && *n->name) x.out[i].name = n->name;
    rc = check_dtype(n->type.dtype, "output", x.out[i].name);
  }
  int64_t woff = 0;
  for (int i = 0; i < x.nweights && !rc; i++) {
    GNode *n = params.data[i];
    fill_tensor(&x.weights[i], n, kfmt("p%d", i), &used);
    x.weights[i].offset = woff;
    woff += (x.weights[i].bytes + CEXPORT_ALIGN - 1) / CEXPORT_ALIGN * CEXPORT_ALIGN;
    rc = check_dtype(n->type.dtype, "weight", n->name ? n->name : x.weights[i].name);
    put_loc(&where, n, LOC_WEIGHT, i);
  }
  x.weights_bytes = woff;
  x.nkernels = groups.len;

  /* the kernels */
  CPlainUnit *unit = NULL;
  int64_t *scratch_need = KNEWN(int64_t, groups.len + 1);
  char *kernels = NULL, *helpers = NULL;
  CDialect dialect = {opt->isa == CEXPORT_ISA_GENERIC, opt->freestanding, opt->threads, 4096};
  if (!rc) {
    unit = codegen_c_plain_new(&dialect);
    for (int i = 0; i < groups.len && !rc; i++) {
      FusedGroup *fg = groups.data[i];
      if (fg->kernel != fg->id)
        scratch_need[i] = scratch_need[fg->kernel];
      else
        rc = codegen_c_plain_kernel(unit, funcs[i], fg->func_name, &scratch_need[i]);
    }
    kernels = codegen_c_plain_finish(unit, &helpers);
  }

  /* the plan: each kernel's output (unless it is a model output) and its
   * scratch are buffers live from their first to their last use */
  int nbuf = 0;
  Buf *bufs = KNEWN(Buf, 2 * groups.len + 1);
  int *view = KNEWN(int, groups.len + 1);
  int64_t *view_at = KNEWN(int64_t, groups.len + 1);
  PtrMap entry_of = {0}; /* for the graph executor's plan: GNode -> 1 + entry */
  PlanGraph pg = {0};
  if (!rc) {
    for (int i = 0; i < x.nin; i++) pm_put(&entry_of, vars.data[i], (void *)(intptr_t)(1 + i));
    for (int i = 0; i < x.nweights; i++) pm_put(&entry_of, params.data[i], (void *)(intptr_t)(1 + x.nin + i));
    for (int k = 0; k < groups.len; k++)
      pm_put(&entry_of, ((FusedGroup *)groups.data[k])->out, (void *)(intptr_t)(1 + x.nin + x.nweights + k));
    plan_graph_init(&pg, &x, g, &groups, infos, &entry_of, &bo);
    concat_views(&pg, view, view_at);
  }
  for (int k = 0; k < groups.len && !rc; k++) {
    FusedGroup *fg = groups.data[k];
    int oi = av_find(&g->outputs, fg->out);
    if (oi >= 0) {
      put_loc(&where, fg->out, LOC_OUTPUT, oi);
    } else {
      Buf *b = &bufs[nbuf];
      b->bytes = ttype_numel(&fg->out->type) * (dt_is_bool(fg->out->type.dtype) ? 1 : dt_bytes(fg->out->type.dtype));
      b->first = b->last = k;
      b->kernel = k;
      for (int j = k + 1; j < groups.len; j++)
        if (av_find(&infos[j].inputs, fg->out) >= 0) b->last = j;
      b->view = view[k] > 0 ? view[k] : 0;
      b->view_at = view_at[k];
      put_loc(&where, fg->out, LOC_BUFFER, nbuf);
      nbuf++;
    }
    if (scratch_need[k] > 0) bufs[nbuf++] = (Buf){scratch_need[k], 0, k, k, k, true, 0, 0};
  }
  /* a concatenation's buffer is live from its first input on */
  for (int b = 0; b < nbuf; b++)
    for (int v = 0; v < nbuf; v++)
      if (!bufs[b].scratch && bufs[v].view == bufs[b].kernel + 1 && bufs[v].first < bufs[b].first)
        bufs[b].first = bufs[v].first;
  if (!rc) x.workspace_bytes = plan_offsets(bufs, nbuf);
  for (int b = 0; b < nbuf; b++)
    for (int v = 0; v < nbuf; v++)
      if (!bufs[b].scratch && bufs[v].view == bufs[b].kernel + 1) bufs[v].offset = bufs[b].offset + bufs[v].view_at;

  /* NAME.c */
  StrBuf c = {0};
  if (!rc) {
    emit_prelude(&x, &c);
    if (*helpers) sb_printf(&c, "%s\n", helpers);
    sb_puts(&c, kernels);
    bool copies = false;
    for (int o = 0; o < x.nout; o++) copies |= !written_by_kernel(g, &where, o);
    if (opt->freestanding && copies)
      sb_puts(&c, "static void kiln_copy(void *dst, const void *src, size_t n) {\n"
                  "  unsigned char *d = (unsigned char *)dst;\n  const unsigned char *s = (const unsigned char *)src;\n"
                  "  while (n--) *d++ = *s++;\n}\n\n");
    if (opt->separate_weights) {
      sb_printf(&c, "int %s_weights_check(const void *weights, size_t size) {\n", x.prefix);
      sb_printf(&c, "  const unsigned char *w = (const unsigned char *)weights;\n  uint64_t h = 0x%016llxull;\n  size_t i;\n",
                (unsigned long long)CEXPORT_FNV_INIT);
      sb_printf(&c, "  if (!w || size != (size_t)%s_WEIGHTS_BYTES) return -1;\n", x.upper);
      sb_printf(&c, "  for (i = %d; i < size; i++) h = (h ^ w[i]) * 0x100000001b3ull;\n", CEXPORT_BIN_HEADER);
      sb_printf(&c, "  for (i = 0; i < 8; i++)\n    if (w[16 + i] != (unsigned char)(h >> (8 * i))) return -1;\n");
      sb_printf(&c, "  for (i = 0; i < 8; i++)\n    if (w[i] != (unsigned char)\"KILNWTS1\"[i]) return -1;\n  return 0;\n}\n\n");
    }
    emit_signature(&x, &c, false);
    sb_printf(&c, "  char *kiln_ws = (char *)workspace;\n");
    sb_printf(&c, "  if (!kiln_ws || ((uintptr_t)kiln_ws & %d)) return -1;\n", CEXPORT_ALIGN - 1);
    if (opt->separate_weights) {
      sb_printf(&c, "  const char *kiln_w = (const char *)weights;\n");
      sb_printf(&c, "  if (!kiln_w || ((uintptr_t)kiln_w & %d)) return -1;\n", CEXPORT_ALIGN - 1);
      sb_printf(&c, "  /* the export's checksum is in the file's header (%s_weights_check reads it all) */\n", x.prefix);
      sb_printf(&c, "  {\n    static const unsigned char id[8] = {");
      sb_puts(&c, "@KILN_ID@"); /* the checksum, once known (it covers this text with the mark) */
      sb_printf(&c, "};\n    int i;\n    for (i = 0; i < 8; i++)\n      if ((unsigned char)kiln_w[24 + i] != id[i]) return -2;\n  }\n");
      sb_printf(&c, "  kiln_w += %d;\n", CEXPORT_BIN_HEADER);
    }
    for (int i = 0; i < x.nin; i++) sb_printf(&c, "  (void)%s;\n", x.in[i].cname);
    sb_printf(&c, "  (void)kiln_ws;\n");
    for (int k = 0; k < groups.len; k++) {
      FusedGroup *fg = groups.data[k];
      GroupInfo *info = &infos[k];
      if (view[k] < 0) { /* the function stays (another group may call it), referenced */
        sb_printf(&c, "  (void)%s; /* %d: %s: its inputs were written in place */\n",
                  ((FusedGroup *)groups.data[fg->kernel])->func_name, k, comment_safe(fg->name));
        continue;
      }
      sb_printf(&c, "  /* %d: %s", k, comment_safe(fg->name));
      if (info->task) sb_printf(&c, "  [%s, config %s]", comment_safe(info->task), comment_safe(info->config_source));
      sb_puts(&c, " */\n");
      sb_printf(&c, "  if (%s(", ((FusedGroup *)groups.data[fg->kernel])->func_name);
      for (int a = 0; a < info->inputs.len; a++) sb_printf(&c, "%s, ", data_ref(&x, info->inputs.data[a], &where, bufs));
      sb_printf(&c, "%s, ", data_ref(&x, fg->out, &where, bufs));
      int sb_i = -1;
      for (int b = 0; b < nbuf; b++)
        if (bufs[b].scratch && bufs[b].kernel == k) sb_i = b;
      if (sb_i >= 0)
        sb_printf(&c, "kiln_ws + %lld)) return -3;\n", (long long)bufs[sb_i].offset);
      else
        sb_puts(&c, "(char *)0)) return -3;\n");
    }
    /* model outputs no kernel writes: inputs, weights, repeats */
    for (int o = 0; o < x.nout; o++) {
      GNode *n = g->outputs.data[o];
      if (written_by_kernel(g, &where, o)) continue;
      sb_printf(&c, "  %s(%s, %s, %lld);\n", opt->freestanding ? "kiln_copy" : "memcpy", x.out[o].cname,
                data_ref(&x, n, &where, bufs), (long long)x.out[o].bytes);
    }
    sb_puts(&c, "  return 0;\n}\n");
  }

  /* the kernel and plan descriptions for metadata.json */
  for (int k = 0; k < groups.len && !rc; k++) {
    FusedGroup *fg = groups.data[k];
    sb_printf(&x.meta_kernels, "%s\n    {\"name\": %s, \"task\": %s, \"config\": %s, \"scratch_bytes\": %lld}",
              k ? "," : "", json_str(fg->name), infos[k].task ? json_str(infos[k].task) : "null",
              infos[k].config_source ? json_str(infos[k].config_source) : "null", (long long)scratch_need[k]);
  }
  for (int b = 0; b < nbuf && !rc; b++) {
    FusedGroup *fg = groups.data[bufs[b].kernel];
    sb_printf(&x.meta_plan, "%s\n    {\"buffer\": %s, \"offset\": %lld, \"bytes\": %lld, \"live\": [%d, %d]}", b ? "," : "",
              json_str(bufs[b].scratch ? kfmt("%s scratch", fg->name) : fg->name), (long long)bufs[b].offset,
              (long long)bufs[b].bytes, bufs[b].first, bufs[b].last);
  }

  AVec csources = {0};
  if (!rc) {
    x.checksum = cexport_fnv(CEXPORT_FNV_INIT, c.data, c.len);
    rc = cexport_write_weights(&x, &csources); /* continues the checksum */
  }
  if (!rc && opt->separate_weights) {
    char *mark = strstr(c.data, "@KILN_ID@");
    KASSERT(mark);
    StrBuf id = {0};
    for (int b = 0; b < 8; b++) sb_printf(&id, "%s0x%02x", b ? ", " : "", (unsigned)((x.checksum >> (8 * b)) & 0xff));
    StrBuf final = {0};
    sb_putn(&final, c.data, (size_t)(mark - c.data));
    sb_puts(&final, id.data);
    sb_puts(&final, mark + strlen("@KILN_ID@"));
    sb_free(&id);
    sb_free(&c);
    c = final;
  }
  if (!rc) rc = kiln_write_file(kfmt("%s/%s.c", dir, x.prefix), c.data, c.len);
  if (!rc) {
    char *h = header_text(&x);
    rc = kiln_write_file(kfmt("%s/%s.h", dir, x.prefix), h, strlen(h));
    free(h);
  }
  if (!rc && opt->freestanding) {
    const char *m = cexport_math_source();
    rc = kiln_write_file(kfmt("%s/kiln_math.h", dir), m, strlen(m));
  }
  if (!rc) {
    x.graph_plan_bytes = graph_executor_bytes(&pg);
    for (int b = 0; b < nbuf; b++)
      if (!bufs[b].scratch) x.naive_bytes += bufs[b].bytes;
    av_insert(&csources, 0, kfmt("%s.c", x.prefix));
    rc = cexport_write_build_files(&x, &csources);
  }
  if (!rc && stats) {
    memset(stats, 0, sizeof *stats);
    for (int i = 0; i < groups.len; i++) stats->nkernels += ((FusedGroup *)groups.data[i])->kernel == ((FusedGroup *)groups.data[i])->id;
    stats->nparams = x.nweights;
    for (int i = 0; i < x.nweights; i++) stats->param_bytes += (size_t)x.weights[i].bytes;
    stats->workspace_bytes = x.workspace_bytes;
    stats->graph_plan_bytes = x.graph_plan_bytes;
    stats->naive_bytes = x.naive_bytes;
  }
  sb_free(&c);
  sb_free(&x.meta_kernels);
  sb_free(&x.meta_plan);
  free(kernels);
  free(helpers);
  pm_free(&used);
  pm_free(&where);
  pm_free(&entry_of);
  plan_graph_free(&pg);
  kiln_arena_pop();
  kiln_arena_free(scratch);
  return rc;
}
