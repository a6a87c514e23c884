/*
 * debug_executor.c - per-operator profiling of a graph executor (TVM's
 * debug runtime), with one more column: the tuning task behind each node.
 *
 * kiln_debug_profile reuses the executor's bound operator calls and times
 * each with CLOCK_MONOTONIC read just before and after it, so the timers
 * cost two clock reads per operator and the sum of the rows stays close to
 * a plain run.  As TVM's time_evaluator: one untimed warm-up run, then
 * `repeat` measurements, each of `number` whole runs over the graph in
 * order; an operator's time in a measurement is its mean over those runs,
 * and the report gives the mean (and deviation) over measurements.  Each
 * call's start relative to the start of its run is averaged too, which
 * places the operators on the Chrome trace's timeline.
 *
 * The report (KilnProfile) copies what it shows, so it outlives the
 * executor, and formats itself lazily as TVM's table (sorted by time,
 * columns padded to the widest cell plus two, times rounded to 3 decimals
 * as Python prints them, closing with Total_time), CSV, Chrome trace JSON
 * or plain JSON rows for bindings.
 *
 * Exports: kiln_debug_profile, kiln_profile_num_rows, _row, _total_us,
 * _run_us, _format, _write, _free.
 */
#include "runtime_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NUM_FORMATS 4

struct KilnProfile {
  uint32_t tag;           /* KILN_TAG_PROFILE (runtime_internal.h) */
  KArena *arena;          /* the rows' strings and shapes */
  int num_rows;
  KilnProfileRow *rows;   /* run order */
  int *sorted;            /* row indices by time, descending */
  int number, repeat;
  double total_us;        /* sum of the rows' times */
  double run_us;          /* mean wall time of one timed run */
  char *text[NUM_FORMATS]; /* formatted on demand (heap) */
};

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static char *dup_in(KArena *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = kiln_arena_alloc(a, n);
  memcpy(p, s, n);
  return p;
}

/* "conv2d_NCHWc.x86 [...] · records.json:12", either part alone, or "-". */
static const char *task_text(KArena *a, const GraphNode *nd) {
  const char *t = nd->kiln_task && *nd->kiln_task ? nd->kiln_task : NULL;
  const char *c = nd->kiln_config && *nd->kiln_config ? nd->kiln_config : NULL;
  if (!t && !c) return "-";
  if (!t || !c) return dup_in(a, t ? t : c);
  size_t n = strlen(t) + strlen(c) + 8;
  char *s = kiln_arena_alloc(a, n);
  snprintf(s, n, "%s \xc2\xb7 %s", t, c); /* U+00B7 middle dot */
  return s;
}

static void sort_rows(KilnProfile *p) {
  p->sorted = kiln_arena_alloc(p->arena, (size_t)p->num_rows * sizeof(int) + 1);
  for (int i = 0; i < p->num_rows; i++) p->sorted[i] = i;
  /* by time, descending, ties in run order: an insertion sort (stable, no
   * global state for a comparator; a model has hundreds of rows at most) */
  for (int i = 1; i < p->num_rows; i++) {
    int v = p->sorted[i], j = i;
    while (j > 0) {
      const KilnProfileRow *a = &p->rows[p->sorted[j - 1]], *b = &p->rows[v];
      if (a->time_us > b->time_us || (a->time_us == b->time_us && a->node < b->node)) break;
      p->sorted[j] = p->sorted[j - 1];
      j--;
    }
    p->sorted[j] = v;
  }
}

/* What one timed run calls, in order: the graph's own operators (the
 * batch-1 kernels of a batched graph, from sample `from`), or variant v's
 * operators on samples [at, at + its batch).  Rows row0.. are the
 * segment's operators; a variant that runs twice adds both runs to the
 * same rows. */
typedef struct Segment {
  KilnGraphExecutor *x;
  int v; /* -1: the graph's own operators */
  int64_t at;
  int row0;
} Segment;

/* The segments of a run at the current batch: with batched variants (a
 * batch of 8 with variants at 4 and 8 runs the batch-8 kernels alone; 7
 * runs three samples through the batch-1 kernels, then the batch-4
 * kernels), as kiln_graph_executor_run runs them; else the graph alone.
 * The variants' executors exist after the warm-up run. */
static int segments(KilnGraphExecutor *ex, Segment *seg, int max, int *nrows, int64_t *from) {
  const JsonGraph *g = &ex->g;
  int64_t upto = g->num_variants && ex->batch > 1 ? kiln_graph_batch_split(ex) : 0;
  int n = 0, rows = 0;
  int *row_of = g->num_variants ? xcalloc((size_t)g->num_variants, sizeof *row_of) : NULL;
  for (int v = 0; v < g->num_variants; v++) row_of[v] = -1;
  *from = upto;
  if (upto < ex->batch || !g->num_variants) {
    seg[n++] = (Segment){ex, -1, 0, 0};
    rows = ex->num_ops;
  }
  int64_t at = 0;
  for (int v = g->num_variants - 1; v >= 0; v--)
    while (upto - at >= g->variant_batch[v] && n < max) {
      KilnGraphExecutor *sub = ex->variant_ex ? ex->variant_ex[v] : NULL;
      if (!sub) {
        free(row_of);
        return kiln_set_error("debug_profile: the batched variant at batch %lld has no executor after the warm-up run",
                              (long long)g->variant_batch[v]);
      }
      if (row_of[v] < 0) row_of[v] = rows, rows += sub->num_ops;
      seg[n++] = (Segment){sub, v, at, row_of[v]};
      at += g->variant_batch[v];
    }
  free(row_of);
  *nrows = rows;
  return n;
}

int kiln_debug_profile(KilnGraphExecutor *ex, int number, int repeat, KilnProfile **out) {
  if (!out) return kiln_set_error("debug_profile: out is NULL");
  *out = NULL;
  if (!ex) return kiln_set_error("debug_profile: the executor is NULL");
  if (number < 1 || repeat < 1)
    return kiln_set_error("debug_profile: number and repeat must be at least 1, got %d and %d",
                          number, repeat);
  bool gpu = ex->dev.device_type != kDLCPU;
  /* the warm-up run: also reports a failing operator before any timing */
  if (kiln_graph_executor_run(ex) || kiln_graph_executor_sync(ex)) return -1;
  Segment seg[64];
  int nrows = 0;
  int64_t from = 0;
  int nseg = segments(ex, seg, 64, &nrows, &from);
  if (nseg < 0) return -1;

  double *sum = xcalloc((size_t)nrows + 1, sizeof *sum);      /* this measurement, ns */
  double *mean = xcalloc((size_t)nrows + 1, sizeof *mean);    /* over measurements, us */
  double *sq = xcalloc((size_t)nrows + 1, sizeof *sq);        /* sum of squares, us^2 */
  double *start = xcalloc((size_t)nrows + 1, sizeof *start);  /* sum of start offsets, ns */
  double run_ns = 0;
  int rc = 0;
  for (int r = 0; r < repeat && !rc; r++) {
    memset(sum, 0, (size_t)nrows * sizeof *sum);
    for (int k = 0; k < number && !rc; k++) {
      if (ex->str_run) kiln_strings_run_reset(ex);
      if (ex->num_late && kiln_graph_sym_begin(ex)) {
        rc = kiln_error_context("debug_profile");
        break;
      }
      int64_t run0 = now_ns();
      for (int sg = 0; sg < nseg && !rc; sg++) {
        Segment *S = &seg[sg];
        KilnGraphExecutor *x = S->x;
        if (S->v >= 0 && !kiln_graph_variant_bind(ex, S->v, S->at)) {
          rc = kiln_error_context("debug_profile: the batched variant at batch %lld",
                                  (long long)ex->g.variant_batch[S->v]);
          break;
        }
        if (S->v < 0) ex->batch_from = from;
        for (int i = 0; i < x->num_ops; i++) {
          GraphOp *op = &x->ops[i];
          int64_t t0 = now_ns();
          int fail = kiln_graph_op_exec(x, op);
          if (!fail && gpu) fail = kiln_device_sync(x->dev); /* the kernel's time, not its launch's */
          int64_t t1 = now_ns();
          if (!fail && op->after) fail = kiln_graph_sym_report(x, op); /* a size its data decided */
          if (fail) {
            rc = kiln_graph_op_error(x, op);
            break;
          }
          sum[S->row0 + i] += (double)(t1 - t0);
          start[S->row0 + i] += (double)(t0 - run0);
        }
        ex->batch_from = 0;
        if (!rc && S->v >= 0 && kiln_graph_variant_collect(ex, S->v, S->at)) rc = kiln_error_context("debug_profile");
      }
      run_ns += (double)(now_ns() - run0);
    }
    for (int i = 0; i < nrows; i++) {
      double us = sum[i] / number / 1000.0;
      mean[i] += us;
      sq[i] += us * us;
    }
  }
  if (rc) {
    free(sum);
    free(mean);
    free(sq);
    free(start);
    return -1;
  }

  KilnProfile *p = xcalloc(1, sizeof *p);
  p->tag = KILN_TAG_PROFILE;
  p->arena = kiln_arena_new();
  p->number = number;
  p->repeat = repeat;
  p->num_rows = nrows;
  p->rows = kiln_arena_alloc(p->arena, (size_t)nrows * sizeof(KilnProfileRow) + 1);
  double runs = (double)number * repeat;
  for (int sg = 0; sg < nseg; sg++) {
    const Segment *S = &seg[sg];
    bool again = false; /* a variant's second run: its rows are made */
    for (int j = 0; j < sg; j++) again |= seg[j].x == S->x;
    if (again) continue;
    KilnGraphExecutor *x = S->x;
    for (int i = 0; i < x->num_ops; i++) {
      const GraphOp *op = &x->ops[i];
      const GraphNode *nd = &x->g.nodes[op->node];
      const DLTensor *o = &x->entries[nd->first_entry];
      int ri = S->row0 + i;
      KilnProfileRow *row = &p->rows[ri];
      row->node = op->node;
      /* a variant's rows carry its batch, as its kernels do (b8_fused_...) */
      char vname[512];
      if (S->v >= 0) snprintf(vname, sizeof vname, "b%lld_%s", (long long)ex->g.variant_batch[S->v], nd->name);
      row->name = dup_in(p->arena, S->v < 0 ? nd->name : vname);
      row->func_name = dup_in(p->arena, nd->func_name);
      row->ops = row->func_name;
      row->op_list = nd->kiln_ops && *nd->kiln_ops ? dup_in(p->arena, nd->kiln_ops) : row->func_name;
      row->task = task_text(p->arena, nd);
      row->time_us = mean[ri] / repeat;
      double var = sq[ri] / repeat - row->time_us * row->time_us;
      row->std_us = var > 0 ? sqrt(var) : 0;
      row->start_us = start[ri] / runs / 1000.0;
      row->ndim = o->ndim;
      int64_t *shape = kiln_arena_alloc(p->arena, (size_t)o->ndim * sizeof(int64_t) + 1);
      if (o->ndim) memcpy(shape, o->shape, (size_t)o->ndim * sizeof(int64_t));
      row->shape = shape;
      row->dtype = o->dtype;
      row->num_inputs = nd->num_inputs;
      row->num_outputs = nd->num_outputs;
      p->total_us += row->time_us;
    }
  }
  for (int i = 0; i < nrows; i++)
    p->rows[i].percent = p->total_us > 0 ? 100.0 * p->rows[i].time_us / p->total_us : 0;
  p->run_us = run_ns / runs / 1000.0;
  sort_rows(p);
  free(sum);
  free(mean);
  free(sq);
  free(start);
  *out = p;
  return 0;
}

int kiln_profile_num_rows(const KilnProfile *p) { return p ? p->num_rows : 0; }

const KilnProfileRow *kiln_profile_row(const KilnProfile *p, int index) {
  if (!p || index < 0 || index >= p->num_rows) {
    kiln_set_error("profile_row: row %d does not exist (the profile has %d rows)", index,
                   p ? p->num_rows : 0);
    return NULL;
  }
  return &p->rows[index];
}

double kiln_profile_total_us(const KilnProfile *p) { return p ? p->total_us : 0; }

double kiln_profile_run_us(const KilnProfile *p) { return p ? p->run_us : 0; }

int kiln_profile_free(KilnProfile *p) {
  if (!p) return 0;
  p->tag = KILN_TAG_NONE;
  for (int i = 0; i < NUM_FORMATS; i++) free(p->text[i]);
  kiln_arena_free(p->arena);
  free(p);
  return 0;
}

/* ---- formatting ---- */

/* x rounded to 3 decimals as Python's str(round(x, 3)) prints it:
 * "107147.0", "5776.86", "0.003". */
static void put_time(StrBuf *sb, double x) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.3f", x);
  size_t n = strlen(buf);
  while (n > 0 && buf[n - 1] == '0') n--;
  if (n > 0 && buf[n - 1] == '.') n++; /* keep one zero: "107147.0" */
  buf[n] = 0;
  sb_puts(sb, buf);
}

enum { NCOLS = 9 };
static const char *const col_names[NCOLS] = {"Node Name", "Ops",     "Time(us)", "Time(%)", "Shape",
                                             "Inputs",    "Outputs", "Op List",  "Task"};

/* The cells of row r (heap strings in cells[]). */
static void row_cells(const KilnProfileRow *r, char **cells) {
  StrBuf sb = {0};
  cells[0] = xstrdup(r->name);
  cells[1] = xstrdup(r->ops);
  put_time(&sb, r->time_us);
  cells[2] = sb_steal(&sb);
  put_time(&sb, r->percent);
  cells[3] = sb_steal(&sb);
  kiln_put_shape(&sb, r->ndim, r->shape, 1);
  cells[4] = sb_steal(&sb);
  sb_printf(&sb, "%d", r->num_inputs);
  cells[5] = sb_steal(&sb);
  sb_printf(&sb, "%d", r->num_outputs);
  cells[6] = sb_steal(&sb);
  cells[7] = xstrdup(r->op_list);
  cells[8] = xstrdup(r->task);
}

/* Display width: UTF-8 continuation bytes take no column. */
static size_t width(const char *s) {
  size_t w = 0;
  for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
  return w;
}

static char *format_table(const KilnProfile *p) {
  int nlines = p->num_rows + 3; /* header, dashes, rows, total */
  char ***cells = xcalloc((size_t)nlines, sizeof *cells);
  for (int l = 0; l < nlines; l++) cells[l] = xcalloc(NCOLS, sizeof(char *));
  for (int c = 0; c < NCOLS; c++) {
    cells[0][c] = xstrdup(col_names[c]);
    size_t n = strlen(col_names[c]);
    cells[1][c] = xmalloc(n + 1);
    memset(cells[1][c], '-', n);
    cells[1][c][n] = 0;
  }
  for (int i = 0; i < p->num_rows; i++) row_cells(&p->rows[p->sorted[i]], cells[i + 2]);
  StrBuf t = {0};
  put_time(&t, p->total_us);
  char *total = sb_steal(&t);
  const char *last[NCOLS] = {"Total_time", "-", total, "-", "-", "-", "-", "-", "-"};
  for (int c = 0; c < NCOLS; c++) cells[nlines - 1][c] = xstrdup(last[c]);
  free(total);
  size_t w[NCOLS] = {0};
  for (int l = 0; l < nlines; l++)
    for (int c = 0; c < NCOLS; c++)
      if (width(cells[l][c]) > w[c]) w[c] = width(cells[l][c]);
  StrBuf sb = {0};
  for (int l = 0; l < nlines; l++) {
    size_t start = sb.len;
    for (int c = 0; c < NCOLS; c++) {
      sb_puts(&sb, cells[l][c]);
      sb_indent(&sb, (int)(w[c] + 2 - width(cells[l][c])));
    }
    while (sb.len > start && sb.data[sb.len - 1] == ' ') sb.data[--sb.len] = 0;
    sb_putc(&sb, '\n');
  }
  for (int l = 0; l < nlines; l++) {
    for (int c = 0; c < NCOLS; c++) free(cells[l][c]);
    free(cells[l]);
  }
  free(cells);
  return sb_steal(&sb);
}

static void put_csv_cell(StrBuf *sb, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    sb_puts(sb, s);
    return;
  }
  sb_putc(sb, '"');
  for (; *s; s++) {
    if (*s == '"') sb_putc(sb, '"');
    sb_putc(sb, *s);
  }
  sb_putc(sb, '"');
}

static char *format_csv(const KilnProfile *p) {
  StrBuf sb = {0};
  for (int c = 0; c < NCOLS; c++) {
    if (c) sb_putc(&sb, ',');
    put_csv_cell(&sb, col_names[c]);
  }
  sb_puts(&sb, "\r\n");
  for (int i = 0; i < p->num_rows; i++) {
    char *cells[NCOLS];
    row_cells(&p->rows[p->sorted[i]], cells);
    for (int c = 0; c < NCOLS; c++) {
      if (c) sb_putc(&sb, ',');
      put_csv_cell(&sb, cells[c]);
      free(cells[c]);
    }
    sb_puts(&sb, "\r\n");
  }
  return sb_steal(&sb);
}

static cJSON *shape_json(const KilnProfileRow *r) {
  cJSON *a = cJSON_CreateArray();
  for (int d = 0; d < r->ndim; d++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)r->shape[d]));
  return a;
}

static cJSON *row_json(const KilnProfileRow *r, int with_times) {
  cJSON *o = cJSON_CreateObject();
  char dt[48];
  if (with_times) {
    cJSON_AddNumberToObject(o, "node", r->node);
    cJSON_AddStringToObject(o, "name", r->name);
    cJSON_AddNumberToObject(o, "time_us", r->time_us);
    cJSON_AddNumberToObject(o, "std_us", r->std_us);
    cJSON_AddNumberToObject(o, "percent", r->percent);
    cJSON_AddNumberToObject(o, "start_us", r->start_us);
  } else {
    cJSON_AddNumberToObject(o, "node", r->node);
  }
  cJSON_AddStringToObject(o, "func_name", r->func_name);
  cJSON_AddStringToObject(o, "ops", r->ops);
  cJSON_AddStringToObject(o, "op_list", r->op_list);
  cJSON_AddItemToObject(o, "shape", shape_json(r));
  cJSON_AddStringToObject(o, "dtype", kiln_dtype_format(r->dtype, dt, sizeof dt));
  cJSON_AddNumberToObject(o, "inputs", r->num_inputs);
  cJSON_AddNumberToObject(o, "outputs", r->num_outputs);
  cJSON_AddStringToObject(o, "task", r->task);
  return o;
}

static char *print_json(cJSON *root, int pretty) {
  char *s = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
  KASSERT(s != NULL);
  char *copy = xstrdup(s);
  cJSON_free(s);
  cJSON_Delete(root);
  return copy;
}

static char *format_trace(const KilnProfile *p) {
  cJSON *events = cJSON_CreateArray();
  for (int i = 0; i < p->num_rows; i++) {
    const KilnProfileRow *r = &p->rows[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", r->name);
    cJSON_AddStringToObject(e, "cat", "op");
    cJSON_AddStringToObject(e, "ph", "X");
    cJSON_AddNumberToObject(e, "ts", r->start_us);
    cJSON_AddNumberToObject(e, "dur", r->time_us);
    cJSON_AddNumberToObject(e, "pid", 1);
    cJSON_AddNumberToObject(e, "tid", 1);
    cJSON_AddItemToObject(e, "args", row_json(r, 0));
    cJSON_AddItemToArray(events, e);
  }
  return print_json(events, 1);
}

static char *format_json(const KilnProfile *p) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "number", p->number);
  cJSON_AddNumberToObject(root, "repeat", p->repeat);
  cJSON_AddNumberToObject(root, "total_us", p->total_us);
  cJSON_AddNumberToObject(root, "run_us", p->run_us);
  cJSON *rows = cJSON_AddArrayToObject(root, "rows");
  for (int i = 0; i < p->num_rows; i++) cJSON_AddItemToArray(rows, row_json(&p->rows[i], 1));
  return print_json(root, 0);
}

int kiln_profile_format(KilnProfile *p, KilnProfileFormat format, const char **text) {
  if (!p || !text) return kiln_set_error("profile_format: the profile or text is NULL");
  *text = NULL;
  if ((int)format < 0 || (int)format >= NUM_FORMATS)
    return kiln_set_error("profile_format: format %d is not one of table (0), csv (1), trace (2), "
                          "json (3)", (int)format);
  if (!p->text[format]) {
    switch (format) {
    case KILN_PROFILE_TABLE: p->text[format] = format_table(p); break;
    case KILN_PROFILE_CSV: p->text[format] = format_csv(p); break;
    case KILN_PROFILE_TRACE: p->text[format] = format_trace(p); break;
    case KILN_PROFILE_JSON: p->text[format] = format_json(p); break;
    }
  }
  *text = p->text[format];
  return 0;
}

int kiln_profile_write(KilnProfile *p, KilnProfileFormat format, const char *path) {
  const char *text;
  if (!path) return kiln_set_error("profile_write: the path is NULL");
  if (kiln_profile_format(p, format, &text)) return -1;
  if (kiln_write_file(path, text, strlen(text))) return kiln_error_context("profile_write");
  return 0;
}
