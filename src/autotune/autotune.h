/*
 * autotune.h - the tuning engine: candidates built and run in worker
 * processes, the cost model's features, the tuners, and the tuning loop of
 * one task.  It stands above the graph (and uses the knob core, knob.h,
 * and the template table, src/topi/templates.c); nothing below includes
 * it.
 *
 * Files:
 *   measure.c    candidates built and run in worker processes
 *   feature.c    a config's features for the cost model
 *   tuner.c      the tuner table and what the tuners share (visited set)
 *   tuner_*.c    random, grid, genetic (ga) and XGBoost cost-model (xgb)
 *   tune.c       the tuning loop of one task: propose, measure, log
 *
 * The tuning side, in order (what `kiln tune` does per task):
 *   m = measurer_new(tm, target, wl, &mopt);  a work folder, worker settings
 *   t = tuner_new("xgb", tm, target, wl, space, seed);
 *   loop: n = tuner_next_batch(t, batch, idx); measurer_run(m, n, cfgs,
 *         results); records_append(log, ...); tuner_update(t, n, idx, gflops)
 * which autotune_tune() runs with resuming, early stopping and AutoTVM's
 * progress line.  Compile time reads the records back through
 * src/graph/backend/dispatch.c (ApplyHistoryBest).
 */
#ifndef KILN_AUTOTUNE_H
#define KILN_AUTOTUNE_H

#include "../knob/knob.h"
#include "../topi/topi.h"

/* ===== measure.c: building and running candidates ===== */

/* TVM's LocalBuilder/LocalRunner settings. */
typedef struct MeasureOptions {
  int number;           /* runs per measurement, averaged (default 4) */
  int repeat;           /* measurements; each gives one cost (default 3) */
  int min_repeat_ms;    /* raise number until a measurement lasts this long (0) */
  double timeout;       /* seconds a candidate may run, check included (10) */
  double build_timeout; /* seconds a build may take (10) */
  int parallel;         /* builds at once (0: the cores available) */
  int threads;          /* threads a candidate runs on (0: KILN_NUM_THREADS or all) */
  bool no_check;        /* skip the check against the unscheduled compute */
  bool baseline;        /* time the fallback config beside each candidate and
                         * scale the costs by its drift (default; measure.c) */
  bool keep_files;      /* keep the work folder (sources, logs) */
  bool in_process;      /* instantiate and generate each candidate's C in this process
                         * and let the worker compile it (templates a worker cannot
                         * run: those written in Python, src/api/api_template.c) */
  const char *worker;   /* worker program (NULL: $KILN_WORKER, else this program) */
  const char *cflags;   /* NULL: the compiler's defaults */
  const char *work_dir; /* NULL: a fresh temporary folder */
  int device_id;        /* GPU targets: the device candidates run on (0) */
} MeasureOptions;

typedef struct MeasureResult {
  int error_no;     /* MeasureErrorNo */
  int ncosts;
  double *costs;    /* seconds per run, one per repeat (arena) */
  double all_cost;  /* seconds: build and run */
  double timestamp; /* wall clock when measured */
  double scale;     /* the baseline's first time / its time now (1: none) */
  const char *msg;  /* the error, one line (arena), or NULL */
} MeasureResult;

void measure_options_default(MeasureOptions *o);

/* The program argument that turns a program into a measure worker: any
 * program that may tune (kiln, kiln_unit) starts main with
 *   if (argc > 1 && !strcmp(argv[1], AUTOTUNE_WORKER_ARG))
 *     return autotune_worker_main(argc - 2, argv + 2); */
#define AUTOTUNE_WORKER_ARG "--kiln-measure-worker"
int autotune_worker_main(int argc, char **argv);

/* On a GPU target, candidates run on the device (MeasureOptions.device_id
 * of the target's kind): 0 when it is there, else -1 + an error saying why
 * (no driver, no such device) - checked once before tuning, so a machine
 * without the device fails the tune rather than every candidate. */
int measure_device_check(const Target *t, const MeasureOptions *o);

/* A measurer for one task (heap; owns a work folder).  Candidates are
 * built by up to `parallel` worker processes at once, then run one at a
 * time, each in a fresh worker process with the time limits; nothing of a
 * candidate runs in the calling process.  Fills out[i] for cfgs[i];
 * returns -1 + error only when no worker could be started at all. */
typedef struct Measurer Measurer;
Measurer *measurer_new(const Template *tm, const Target *t, const Workload *wl, const MeasureOptions *o);
int measurer_run(Measurer *m, int n, ConfigEntity *const *cfgs, MeasureResult *out);
void measurer_free(Measurer *m);

/* ===== feature.c: features for the cost model ===== */

/* The length of a config's feature vector in a space (fixed per space). */
int feature_len(const ConfigSpace *cs);
/* A config's features: its knobs' values (split parts as log2, options,
 * permutations, annotations, choice positions) then, for the innermost
 * loops around the schedule's main statement (up to FEATURE_LOOPS,
 * innermost first), log2 extent, the loop kind (parallel, vectorized,
 * unrolled), log2 iterations inside and log2 bytes of each of the first
 * buffers touched inside it (TVM's itervar features, simplified).
 * Returns 0, or -1 + error (the schedule cannot be instantiated). */
#define FEATURE_LOOPS 10
int feature_extract(const Template *tm, const Target *t, const Workload *wl, const ConfigSpace *cs,
                    const ConfigEntity *cfg, float *out);

/* ===== tuner.c, tuner_*.c: the tuners ===== */

typedef struct Tuner Tuner;

/* A tuner kind: a row of function pointers (explicit list in tuner.c). */
typedef struct TunerKind {
  const char *name; /* "xgb", "ga", "random", "grid" */
  const char *help;
  int (*init)(Tuner *t);
  /* Fill out with up to n unvisited indices; returns how many. */
  int (*next_batch)(Tuner *t, int n, int64_t *out);
  /* Results of measured indices: score = GFLOP/s, 0 for a failure. */
  void (*update)(Tuner *t, int n, const int64_t *idx, const double *score);
  void (*destroy)(Tuner *t);
} TunerKind;

struct Tuner {
  const TunerKind *kind;
  const Template *tm;
  const Target *target;
  const Workload *wl;
  const ConfigSpace *space;
  int64_t size;       /* space_size */
  uint64_t rng;
  void *state;        /* the kind's own */
  /* visited: an open-addressing set of indices (heap) */
  int64_t *vset;
  int64_t vcap, nvisited;
};

const TunerKind *tuner_kind(const char *name); /* NULL + error naming the known ones */
int tuner_nkinds(void);
const TunerKind *tuner_kind_at(int i);
/* A tuner over a space (heap; the space and workload must outlive it). */
Tuner *tuner_new(const char *kind, const Template *tm, const Target *t, const Workload *wl, const ConfigSpace *cs,
                 uint64_t seed);
int tuner_next_batch(Tuner *t, int n, int64_t *out); /* marks them visited */
void tuner_update(Tuner *t, int n, const int64_t *idx, const double *score);
void tuner_free(Tuner *t);
/* Shared by the kinds. */
bool tuner_visited(const Tuner *t, int64_t idx);
void tuner_mark(Tuner *t, int64_t idx);
uint64_t tuner_rand(Tuner *t);      /* xorshift64* */
double tuner_randf(Tuner *t);       /* [0, 1) */
/* A random unvisited index, -1 when the space is exhausted. */
int64_t tuner_random_unvisited(Tuner *t);
/* Knob choice positions <-> index (mixed radix, first knob least significant). */
void tuner_index_to_genes(const ConfigSpace *cs, int64_t idx, int64_t *genes);
int64_t tuner_genes_to_index(const ConfigSpace *cs, const int64_t *genes);

extern const TunerKind tuner_random_kind, tuner_grid_kind, tuner_ga_kind, tuner_xgb_kind;

/* ===== tune.c: tuning one task ===== */

typedef struct TuneOptions {
  const char *tuner;    /* "xgb" (default), "ga", "random", "grid" */
  int trials;           /* measurements per task, those in the log included (default 1000) */
  int early_stopping;   /* stop after this many trials without a better config (0: never) */
  int verify;           /* re-measure up to this many of the best configs and the
                         * fallback at the end (default 8; 0: don't) */
  int batch;            /* candidates per round (0: measure.parallel) */
  const char *log_path; /* records are appended here, and resumed from */
  uint64_t seed;
  bool skip_fallback;   /* don't measure the fallback config first */
  double deadline;      /* kiln_now_seconds() after which no batch starts (0: none) */
  FILE *progress;       /* AutoTVM's progress line goes here (NULL: none) */
  const char *prefix;   /* "[Task  1/12] " */
  double flops;         /* the workload's FLOPs when the caller knows them (a Python
                         * template's cfg.add_flop); 0: wl_flops */
  MeasureOptions measure;
} TuneOptions;

typedef struct TuneSummary {
  int measured;          /* new measurements */
  int resumed;           /* measurements found in the log */
  int errors[MEASURE_UNKNOWN_ERROR + 1]; /* new measurements by error number */
  double best_cost;      /* seconds, INFINITY if none succeeded */
  double best_gflops;
  int64_t best_index;    /* -1 if none */
  int verified;          /* configs re-measured at the end */
  double fallback_cost;  /* the fallback config's newest cost (INFINITY if not measured) */
  double seconds;
  bool early_stopped;
} TuneSummary;

void tune_options_default(TuneOptions *o);
int autotune_tune(const Template *tm, const Target *t, const Workload *wl, const TuneOptions *o, TuneSummary *out);

#endif
