/*
 * knob.h - the knob core of auto-tuning: config spaces and config
 * entities, tasks' workloads, what a template is, tuning records and their
 * JSON.  It sits below the operator library (src/topi's templates declare
 * their knobs with it) and the graph (dispatch reads records with it); the
 * tuning engine (tuners, measurement, the tuning loop, features) is
 * src/autotune/autotune.h, above the graph.
 *
 * A *template* (one per task name, e.g. "conv2d_NCHWc.x86") declares knobs
 * for a workload: split (`sp`, an extent cut into N parts), reorder (`re`, a
 * permutation), annotate (`an`, one annotation per axis) and other-option
 * (`ot`, a list of candidate values).  The knobs, in declaration order, form
 * a ConfigSpace; one choice per knob is a ConfigEntity, from which the
 * template builds its schedule.  Everything here follows AutoTVM so that its
 * records mean the same thing to Kiln:
 *   - a config index maps to knob choices mixed-radix, first knob least
 *     significant (index = c0 + n0 * (c1 + n1 * (c2 + ...)));
 *   - the choices of a knob are enumerated in TVM's order (a split's
 *     candidate factors ascending, the part next to the remainder varying
 *     fastest; permutations lexicographic; ot candidates as listed);
 *   - a split entity is written [-1, f1, ..., fk]: -1 stands for the
 *     outermost remainder;
 *   - an entity is JSON [["tile_ic", "sp", [-1, 16]], ["unroll_kw", "ot",
 *     true], ...], a workload ["TENSOR", shape, dtype], ints, int lists,
 *     strings and null in TVM's argument order.
 *
 * Everything is allocated in the current arena (base.h).  Errors are a -1 /
 * NULL return with a message naming the knob and what was expected.
 *
 * Files:
 *   space.c      knobs, config spaces, config entities, their JSON
 *   workload.c   tasks' workloads and their keys, FLOPs, descriptions
 *   template.c   what every template shares: space, fallback, instantiate
 *   pyjson.c     JSON text as Python's json.dumps writes it
 *   records.c    tuning records, v0.1 and v0.2, read and written
 * The template table itself is src/topi/templates.c, beside the
 * templates (template_lookup, topi.h).
 *
 * The graph layer's use of a template, in order:
 *   1. tm = template_lookup("conv2d_NCHWc.x86") (or depthwise_conv2d_
 *      NCHWc.x86, dense_nopack.x86, dense_pack.x86), used when
 *      template_serves(tm, target);
 *   2. wl = wl_conv2d(task, NCHW data shape, OIHW kernel shape, ...) or
 *      wl_dense(task, M, N, K, ...): the key records are matched by;
 *   3. cfg = the best record for wl->key, else template_fallback(tm, t, wl)
 *      (tm->check(t, cfg, wl) says whether a record's config fits);
 *   4. alter layout with the config's blocks: conv data NCHW ->
 *      NCHW[ic_bn]c and kernel OIHW -> OIHW[ic_bn]i[oc_bn]o with ic_bn =
 *      cfg_split_inner(cfg, "tile_ic"), oc_bn = cfg_split_inner(cfg,
 *      "tile_oc") (topi_x86_pack_* make them; fold the kernel's); the
 *      output is NCHW[oc_bn]c.  Depthwise: the same, kernel [OC/oc_bn, 1,
 *      KH, KW, 1, oc_bn].  dense_pack: weight [N/bn, K, bn], bn =
 *      cfg_split_inner(cfg, "tile_x") (topi_x86_pack_dense_weight);
 *   5. anchor = tm->compute(t, wl, cfg, n, inputs in those layouts), then
 *      the group's elementwise/broadcast ops on it, s = te_create_schedule
 *      over the group's outputs, tm->schedule(t, s, cfg, anchor, nout,
 *      outs): the epilogue is inlined into the anchor's register block.
 */
#ifndef KILN_KNOB_H
#define KILN_KNOB_H

#include "../target/target.h"
#include "../te/te.h"

struct cJSON;

/* ===== space.c: knobs, config spaces, config entities ===== */

typedef enum KnobKind { KNOB_SPLIT, KNOB_REORDER, KNOB_ANNOTATE, KNOB_OTHER } KnobKind;

/* The value of an other-option knob: an int, a bool or a string. */
typedef enum OptKind { OPT_INT, OPT_BOOL, OPT_STR } OptKind;
typedef struct OptVal {
  OptKind kind;
  int64_t i;     /* OPT_INT, OPT_BOOL (0/1) */
  const char *s; /* OPT_STR */
} OptVal;

static inline OptVal opt_int(int64_t v) { return (OptVal){OPT_INT, v, NULL}; }
static inline OptVal opt_bool(bool v) { return (OptVal){OPT_BOOL, v ? 1 : 0, NULL}; }
static inline OptVal opt_str(const char *s) { return (OptVal){OPT_STR, 0, s}; }

/* One knob's choice. */
typedef struct KnobEntity {
  const char *name;
  KnobKind kind;
  int n;             /* split: parts; reorder, annotate: axes */
  int64_t *ints;     /* split: sizes, [0] = -1 (remainder); reorder: permutation */
  const char **anns; /* annotate: "none", "unroll", "vec", "parallel", ... */
  OptVal val;        /* other option */
} KnobEntity;

/* A knob of a space: its name, kind and every choice, in TVM's order. */
typedef struct Knob {
  const char *name;
  KnobKind kind;
  int64_t extent;   /* split: the axis extent */
  const char *policy;
  int64_t nchoices;
  KnobEntity *choices;
} Knob;

typedef struct ConfigSpace {
  int nknobs;
  Knob *knobs; /* declaration order = least significant first */
  int cap;
} ConfigSpace;

/* A full config: one entity per knob of the space, in the same order. */
typedef struct ConfigEntity {
  int64_t index;            /* its index in the space; -1 if unknown */
  const char *template_key; /* "direct" (the v0.1 "t"), may be NULL */
  const char *code_hash;    /* may be NULL */
  bool is_fallback;         /* made by a template's fallback heuristic */
  int n;
  KnobEntity *e;
  int cap;
} ConfigEntity;

/* Split policies: "factors" (parts multiply to a divisor of the extent,
 * product equal to it: no tail), "power2" (powers of two up to the
 * extent, tails allowed), "verbose" (both), "candidate" (the listed
 * entities).  With another policy, candidates (cand/ncand) are appended
 * after the generated choices, those not among them already (a template's
 * row-block tails beside the divisors).  filter, if set, keeps a choice
 * when it returns true. */
typedef bool (*SplitFilter)(const int64_t *sizes, int nparts, void *ud);
typedef struct SplitOpts {
  const char *policy;     /* NULL = "factors" */
  int nparts;             /* >= 2 (TVM's num_outputs) */
  int64_t max_factor;     /* 0 = none */
  enum { SPLIT_TAIL_DEFAULT, SPLIT_TAIL_ALLOW, SPLIT_TAIL_FORBID } tail; /* default: forbidden
                          for factors, allowed otherwise (TVM's no_tail) */
  SplitFilter filter;
  void *filter_ud;
  int ncand;              /* candidate policy (or extra choices): entities of nparts sizes */
  const int64_t *cand;    /* ncand * nparts, [0] of each is -1 or ignored */
} SplitOpts;

void space_init(ConfigSpace *cs);
int space_define_split(ConfigSpace *cs, const char *name, int64_t extent, const SplitOpts *opt);
/* Reorder policies: "identity", "all" (every permutation, lexicographic),
 * "candidate" (ncand permutations of naxes). */
int space_define_reorder(ConfigSpace *cs, const char *name, int naxes, const char *policy,
                         int ncand, const int *cand);
/* Annotate policies: "try_unroll" (none/unroll per axis), "try_unroll_vec"
 * (none/unroll/vec, vec only on the last axis), "candidate" (ncand rows of
 * naxes strings). */
int space_define_annotate(ConfigSpace *cs, const char *name, int naxes, const char *policy,
                          int ncand, const char *const *cand);
/* An other-option knob (TVM's define_knob). */
int space_define_knob(ConfigSpace *cs, const char *name, int ncand, const OptVal *cand);
const Knob *space_knob(const ConfigSpace *cs, const char *name);
/* The number of configs: the product of the knobs' choice counts
 * (saturates at INT64_MAX). */
int64_t space_size(const ConfigSpace *cs);
/* index -> entity (mixed radix, first knob least significant). */
ConfigEntity *space_get(const ConfigSpace *cs, int64_t index);
/* entity -> index; -1 with a reason if a knob is missing or its value is
 * not one of the knob's choices.  A split whose first part is not -1 must
 * multiply to the extent. */
int64_t space_index_of(const ConfigSpace *cs, const ConfigEntity *cfg);
/* "tile_ic: [-1, 16]; ..." (for messages). */
const char *space_knob_desc(const Knob *k);

/* Entities and configs. */
ConfigEntity *config_new(void);
KnobEntity *config_set_split(ConfigEntity *cfg, const char *name, int n, const int64_t *sizes);
KnobEntity *config_set_other(ConfigEntity *cfg, const char *name, OptVal v);
KnobEntity *config_set(ConfigEntity *cfg, const KnobEntity *e); /* copies */
const KnobEntity *config_get(const ConfigEntity *cfg, const char *name);
/* A split knob's sizes; NULL + error if missing or not a split.  The
 * innermost part (the block size for layout knobs like tile_ic). */
const int64_t *cfg_split(const ConfigEntity *cfg, const char *name, int *nparts);
int64_t cfg_split_inner(const ConfigEntity *cfg, const char *name); /* -1 + error */
/* An ot knob as an integer (bools are 0/1); def if the knob is absent. */
int64_t cfg_other_int(const ConfigEntity *cfg, const char *name, int64_t def);
bool config_equal(const ConfigEntity *a, const ConfigEntity *b);

/* JSON.  Entity lists in TVM's text: [["tile_ic", "sp", [-1, 16]], ...]. */
char *config_entity_json(const ConfigEntity *cfg); /* arena string */
ConfigEntity *config_entity_from_json(const char *text);
/* The record's config object: v0.2 {"index": i, "code_hash": null,
 * "entity": [...]} is what config_json writes; config_from_json reads that
 * and v0.1's {"i": i, "t": key, "c": hash, "e": [...]}. */
char *config_json(const ConfigEntity *cfg);
ConfigEntity *config_from_json(const char *text);
ConfigEntity *config_entity_from_cjson(const struct cJSON *entities);
ConfigEntity *config_from_cjson(const struct cJSON *obj);

/* ===== workload.c: tasks and their workload keys ===== */

typedef enum WArgKind { WARG_TENSOR, WARG_INT, WARG_INTS, WARG_STR, WARG_NULL, WARG_FLOAT } WArgKind;

typedef struct WArg {
  WArgKind kind;
  int n;          /* tensor: rank; ints: count */
  int64_t *ints;  /* tensor: shape; ints: values */
  int64_t i;      /* int */
  double f;       /* float */
  const char *s;  /* string; tensor: dtype ("float32") */
} WArg;

/* A task's workload: the task name and its arguments in TVM's order. */
typedef struct Workload {
  const char *name; /* "conv2d_NCHWc.x86" */
  int nargs;
  WArg *args;
  const char *key; /* canonical JSON ["name", args...] (made by wl_finish) */
} Workload;

Workload *wl_new(const char *name);
void wl_add_tensor(Workload *wl, int ndim, const int64_t *shape, const char *dtype);
void wl_add_int(Workload *wl, int64_t v);
void wl_add_ints(Workload *wl, int n, const int64_t *v);
void wl_add_str(Workload *wl, const char *s);
void wl_add_null(Workload *wl);
void wl_add_float(Workload *wl, double v);
/* Compute the canonical key; returns wl. */
Workload *wl_finish(Workload *wl);
/* The arguments as TVM's record "args" JSON array (arena string). */
char *wl_args_json(const Workload *wl);
/* Parse a task from a record's task name and args array. */
Workload *wl_from_json(const char *name, const char *args_json);
Workload *wl_from_cjson(const char *name, const struct cJSON *args);
bool wl_equal(const Workload *a, const Workload *b);

/* Argument access with checks (NULL / -1 + error naming the task). */
const WArg *wl_arg(const Workload *wl, int i, WArgKind kind);

/* TVM 0.6's CUDA workloads (TopHub's logs), in its argument order:
 *   topi_nn_conv2d: data NCHW, kernel OIHW, strides [2], padding [2]
 *     (h, w; [4] top, left, bottom, right when asymmetric), dilation [2],
 *     layout "NCHW", out_dtype
 *   topi_nn_depthwise_conv2d_nchw: data NCHW, kernel [C, multiplier, KH,
 *     KW], strides, padding, dilation, out_dtype
 *   topi_nn_dense: data [M, K], weight [N, K], bias (null), out_dtype
 *     (wl_dense with that name) */
Workload *wl_cuda_conv2d(const char *task, const int64_t dshape[4], const int64_t kshape[4], const int strides[2],
                         const int padding[4], const int dilation[2], const char *dtype, const char *out_dtype);

/* TVM's workloads for the x86 tasks, in its argument order:
 *   conv2d_NCHWc.x86, depthwise_conv2d_NCHWc.x86:
 *     data NCHW tensor, kernel OIHW tensor, strides [2], padding [4]
 *     (top, left, bottom, right), dilation [2], data_layout "NCHW",
 *     out_layout "NCHW", out_dtype
 *   dense_nopack.x86, dense_pack.x86:
 *     data [M, K] tensor, weight [N, K] tensor, bias (null), out_dtype */
Workload *wl_conv2d(const char *task, const int64_t dshape[4], const int64_t kshape[4],
                    const int strides[2], const int padding[4], const int dilation[2],
                    const char *dtype, const char *out_dtype);
/*   conv2d_NCHWc.x86 reading a channel-padded input (alter_layout pads
 *     24 channels to 32): the same with its real input channel count
 *     appended (only when fewer than the data's) */
Workload *wl_conv2d_real(const char *task, const int64_t dshape[4], const int64_t kshape[4], const int strides[2],
                         const int padding[4], const int dilation[2], int64_t real_ic, const char *dtype,
                         const char *out_dtype);
Workload *wl_dense(const char *task, int64_t M, int64_t N, int64_t K, const char *dtype,
                   const char *out_dtype);
/*   group_conv2d_NCHWc.x86: as conv2d_NCHWc.x86 with groups after dilation:
 *     data NCHW, kernel [OC, IC / groups, KH, KW], strides, padding,
 *     dilation, groups, "NCHW", "NCHW", out_dtype (TVM's
 *     group_conv2d_nchw.x86 is data, kernel, strides, padding, dilation,
 *     groups, out_dtype: the layouts say the task is keyed by NCHW) */
Workload *wl_group_conv2d(const char *task, const int64_t dshape[4], const int64_t kshape[4],
                          const int strides[2], const int padding[4], const int dilation[2],
                          int64_t groups, const char *dtype, const char *out_dtype);

/*   batch_matmul.x86: a [batch, M, K] tensor, b [batch, K, N] tensor (ONNX
 *     MatMul's operands; TVM's batch_matmul.x86 takes b as [batch, N, K]),
 *     out_shape (null), out_dtype */
Workload *wl_batch_matmul(const char *task, int64_t batch, int64_t M, int64_t N, int64_t K,
                          const char *dtype, const char *out_dtype);
typedef struct BatchMatmulWorkload {
  int64_t batch, M, N, K;
  DType dtype, out_dtype;
} BatchMatmulWorkload;
int wl_batch_matmul_parse(const Workload *wl, BatchMatmulWorkload *out);

/* The convolution a conv workload describes, checked. */
typedef struct Conv2DWorkload {
  int64_t N, IC, IH, IW, OC, KH, KW, OH, OW;
  int sh, sw, pt, pl, pb, pr, dh, dw;
  int64_t multiplier; /* depthwise: OC / IC */
  int64_t groups;     /* 1; IC for depthwise; the workload's for a grouped task */
  bool depthwise;
  DType dtype, out_dtype;
  int64_t real_ic; /* the input channels the reduction reads: IC, or fewer for a channel-padded input */
} Conv2DWorkload;
/* Reads the x86 forms and the CUDA forms above (a depthwise kernel of
 * topi_nn_depthwise_conv2d_nchw is [C, multiplier, KH, KW]). */
int wl_conv2d_parse(const Workload *wl, Conv2DWorkload *out);
typedef struct DenseWorkload {
  int64_t M, N, K;
  DType dtype, out_dtype;
} DenseWorkload;
int wl_dense_parse(const Workload *wl, DenseWorkload *out);

/* ===== template.c: what a tunable template is ===== */

/* A tunable template: one row of the template table (src/topi/templates.c,
 * beside the templates).  Every hook is given the Target compiled for. */
typedef struct Template {
  const char *name;       /* the task name: "conv2d_NCHWc.x86" */
  const char *anchor_tag; /* the tag of the compute it schedules */
  const char *key;        /* the target key it schedules for: "cpu" */
  /* TVM 0.6's template key (a record's "t"): one task name may have
   * several templates ("topi_nn_conv2d": "direct" and "winograd"); NULL
   * for a task with one template. */
  const char *template_key;
  /* Declare the knobs (in TVM's order) for a workload. */
  int (*define_space)(const Target *t, ConfigSpace *cs, const Workload *wl);
  /* Fill cfg (a fresh config_new()) with the heuristic config. */
  int (*fallback)(const Target *t, ConfigEntity *cfg, const Workload *wl);
  /* 0 if cfg can be used for wl, else -1 and the reason. */
  int (*check)(const Target *t, const ConfigEntity *cfg, const Workload *wl);
  /* The anchor's inputs as placeholders in the template's layout for cfg
   * (conv: data NCHW[ic_bn]c, kernel OIHW[ic_bn]i[oc_bn]o; dense: data,
   * weight): what a measured candidate takes. */
  int (*placeholders)(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in);
  /* The anchor compute over inputs already in the template's layout
   * (dense: data, weight, optional bias), attributes from wl; NULL + error. */
  Tensor *(*compute)(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in);
  /* Schedule a fused group: anchor is the template's compute, outs the
   * group's outputs (the anchor followed by elementwise/broadcast ops). */
  int (*schedule)(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *anchor, int nout, Tensor **outs);
  /* Optional: a candidate that is not placeholders + compute + schedule
   * (templates written in a binding's language, test templates);
   * template_instantiate calls it instead. */
  int (*instantiate)(const Target *t, const Workload *wl, const ConfigEntity *cfg, Schedule **s, int *nargs,
                     Tensor ***args);
} Template;

/* Define tm's space for wl into a fresh space (NULL + error). */
ConfigSpace *template_space(const Template *tm, const Target *t, const Workload *wl);
/* The fallback config for wl, with its index in the space when it has one. */
ConfigEntity *template_fallback(const Template *tm, const Target *t, const Workload *wl);
/* The task as a standalone function (for measuring and features): check
 * the config, make the placeholders, the compute over them, a schedule of
 * it; *args are the inputs then the output.  Written once for every
 * template (tm->instantiate when the template has its own). */
int template_instantiate(const Template *tm, const Target *t, const Workload *wl, const ConfigEntity *cfg, Schedule **s,
                         int *nargs, Tensor ***args);
/* Whether tm schedules for t (t has tm->key). */
bool template_serves(const Template *tm, const Target *t);

/* ===== workload.c (more) ===== */

/* FLOPs of a conv/dense workload (multiply and add counted), 0 if unknown. */
double wl_flops(const Workload *wl);
/* "[(1,64,56,56),(64,64,3,3)] s1 p1" for convs, "[(1,512),(1000,512)]" for
 * dense, else the args JSON (arena string). */
const char *wl_describe(const Workload *wl);

/* ===== pyjson.c: JSON as Python's json.dumps writes it ===== */

/* repr() of a float (shortest round-trip text; Infinity/NaN as json.dumps). */
void pyjson_float(StrBuf *sb, double v);
/* A string, ASCII-escaped. */
void pyjson_str(StrBuf *sb, const char *s);
/* Any value; whole numbers print as ints. */
void pyjson_value(StrBuf *sb, const struct cJSON *j);
char *pyjson_dumps(const struct cJSON *j); /* arena string */
/* 1 and *out set when j is a JSON number holding an integer that int64_t
 * represents (|v| < 2^63), else 0: converting a double outside that range
 * is undefined behaviour, so every integer a record carries is read here. */
int pyjson_int64(const struct cJSON *j, int64_t *out);

/* ===== records.c: tuning records ===== */

/* Measure error numbers (DESIGN §3, AutoTVM's MeasureErrorNo). */
typedef enum MeasureErrorNo {
  MEASURE_NO_ERROR = 0,
  MEASURE_INSTANTIATION_ERROR = 1,
  MEASURE_COMPILE_HOST = 2,
  MEASURE_COMPILE_DEVICE = 3,
  MEASURE_RUNTIME_DEVICE = 4,
  MEASURE_WRONG_ANSWER = 5,
  MEASURE_BUILD_TIMEOUT = 6,
  MEASURE_RUN_TIMEOUT = 7,
  MEASURE_UNKNOWN_ERROR = 8,
} MeasureErrorNo;
const char *measure_error_name(int error_no);

/* The op family a task name tunes, whatever backend wrote it. */
typedef enum TaskKind { TASK_OTHER, TASK_CONV2D, TASK_DEPTHWISE_CONV2D, TASK_DENSE, TASK_BATCH_MATMUL } TaskKind;
TaskKind record_task_kind(const char *task_name);
const char *task_kind_name(TaskKind k);

typedef struct TuneRecord {
  const char *target;      /* "llvm -mcpu=x86-64-v4", "cuda -model=unknown" */
  Workload *wl;            /* task name and args; wl->key names the task */
  const char *kwargs;      /* the kwargs object as JSON text ("{}") */
  const char *v1_workload; /* v0.1: its "workload" element as JSON text */
  ConfigEntity *config;    /* index, template_key (v0.1 "t"), code_hash, entities */
  int ncosts;
  double *costs;           /* seconds per run, one per repeat */
  int error_no;            /* MeasureErrorNo */
  double all_cost;         /* seconds spent building and running */
  double timestamp;        /* seconds since the epoch */
  int version;             /* 1 or 2: the form it was read in */
  TaskKind kind;           /* from the task name */
  const char *file;        /* where it was read ("" if not) */
  int line;
} TuneRecord;

/* One line, v0.1 or v0.2; NULL + error. */
TuneRecord *record_parse(const char *line);
/* The record as a v0.2 line (what Kiln writes), or as v0.1 (no newline). */
char *record_json(const TuneRecord *r);
char *record_json_v01(const TuneRecord *r);
/* Mean cost in seconds; INFINITY for a failed measurement. */
double record_cost(const TuneRecord *r);
/* Every record of a file (blank lines and '#' lines skipped) pushed to
 * out, with file and line set; -1 + "path:line: reason" on a bad line. */
int records_load(const char *path, AVec *out);
/* records_load for resuming a log: a last line that ends without a newline
 * and does not parse (a tune interrupted while writing it) is left out,
 * and *torn_at is set to its byte offset (else -1), so the caller can warn
 * and cut it off before appending. */
int records_load_resume(const char *path, AVec *out, long *torn_at);
/* Drop the records superseded by a newer record (larger timestamp, or
 * the same and later in the list) of the same target, workload and
 * config: a config measured again is judged by its newest measurement
 * (tuning re-measures its best candidates at the end). */
void records_keep_latest(AVec *recs);
/* Append v0.2 lines to a file (created if missing). */
int records_append(const char *path, int n, TuneRecord *const *recs);

#endif
