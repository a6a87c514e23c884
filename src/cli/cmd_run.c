/*
 * cmd_run.c - kiln run MODEL.so: load a compiled module, set its inputs
 * (from .npz/.npy/.pb files, or filled), run it, and print or save the
 * outputs, the timing (tvmc's --print-time statistics) or a per-node
 * profile that names each kernel's tuning task and config.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "frontend/onnx/onnx_model.h"
#include "npy.h"

static Opt opts[] = {
    {"--inputs", "-i", OPT_MULTI, "FILE", "input values: .npz (by name), .npy or ONNX .pb (by name or position; a sequence or optional input: its SequenceProto/OptionalProto .pb); repeatable", false, NULL, NULL, 0},
    {"--fill-mode", NULL, OPT_VALUE, "MODE", "without --inputs: fill the inputs with random (default), zeros or ones", false, NULL, NULL, 0},
    {"--output", "-o", OPT_VALUE, "OUT.npz", "save the outputs, by the model's output names (a sequence's elements as NAME[i])", false, NULL, NULL, 0},
    {"--print-time", NULL, OPT_FLAG, NULL, "print mean, median, max, min and std of the run time in ms", false, NULL, NULL, 0},
    {"--repeat", NULL, OPT_VALUE, "N", "measurements for --print-time/--profile (default 1)", false, NULL, NULL, 0},
    {"--number", NULL, OPT_VALUE, "N", "runs per measurement (default 1)", false, NULL, NULL, 0},
    {"--print-top", NULL, OPT_VALUE, "K", "print the top-K classes of output 0", false, NULL, NULL, 0},
    {"--profile", NULL, OPT_FLAG, NULL, "profile each kernel (debug executor) and print the table", false, NULL, NULL, 0},
    {"--profile-csv", NULL, OPT_VALUE, "FILE", "with --profile: also write the table as CSV", false, NULL, NULL, 0},
    {"--profile-trace", NULL, OPT_VALUE, "FILE", "with --profile: also write a Chrome trace (chrome://tracing)", false, NULL, NULL, 0},
    {"--threads", NULL, OPT_VALUE, "N", "worker threads, 1 to 1024 (default: KILN_NUM_THREADS or all cores)", false, NULL, NULL, 0},
    {"--device", NULL, OPT_VALUE, "DEVICE", "cpu, cuda[:N] or opencl[:N]: where the model runs (the kind it was compiled for; N: the device's index, default 0)", false, NULL, NULL, 0},
    {NULL, NULL, 0, NULL, NULL, false, NULL, NULL, 0},
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

static void fill(DLTensor *t, const char *mode) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  DLDataType d = t->dtype;
  for (int64_t i = 0; i < n; i++) {
    double v = !strcmp(mode, "zeros") ? 0 : !strcmp(mode, "ones") ? 1 : (d.code == kDLFloat ? rnd() : (double)(int)(rnd() * 10));
    char *p = (char *)t->data;
    if (d.code == kDLFloat && d.bits == 32) ((float *)p)[i] = (float)v;
    else if (d.code == kDLFloat && d.bits == 64) ((double *)p)[i] = v;
    else if (d.code == kDLInt && d.bits == 64) ((int64_t *)p)[i] = (int64_t)v;
    else if (d.code == kDLInt && d.bits == 32) ((int32_t *)p)[i] = (int32_t)v;
    else if (d.bits == 8 || d.bits == 1) ((uint8_t *)p)[i] = d.bits == 1 ? (v != 0) : (uint8_t)v;
  }
}

static const char *shape_text(int ndim, const int64_t *shape) {
  static __thread char buf[256];
  size_t k = 0;
  k += (size_t)snprintf(buf + k, sizeof buf - k, "[");
  for (int i = 0; i < ndim && k < sizeof buf; i++) k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%lld", i ? "," : "", (long long)shape[i]);
  snprintf(buf + k, sizeof buf - k, "]");
  return buf;
}

/* A tensor from an ONNX TensorProto (text too) as a new Kiln array. */
static int tensor_from_onnx(const OnnxTensor *ot, DLTensor **t) {
  DType dt;
  DLDevice cpu = {kDLCPU, 0};
  if (ot->elem_type == ONNX_DT_STRING) /* text: its own array (docs/strings.md) */
    return kiln_array_from_strings(ot->ndim, ot->dims, ot->strings, t);
  if (onnx_tensor_dtype(ot, &dt) || kiln_array_empty(ot->ndim, ot->dims, dt, cpu, t)) return -1;
  if (ot->nbytes && kiln_array_copy_from_bytes(*t, ot->data, ot->nbytes)) {
    kiln_array_free(*t);
    *t = NULL;
    return -1;
  }
  return 0;
}

/* Whether the model has a sequence or optional input or output. */
static bool has_structure(KilnGraphExecutor *ex) {
  for (int io = 0; io < 2; io++) {
    int n = io ? kiln_graph_executor_num_output_values(ex) : kiln_graph_executor_num_input_values(ex);
    for (int i = 0; i < n; i++) {
      KilnValueInfo v;
      if (!(io ? kiln_graph_executor_output_value_info(ex, i, &v) : kiln_graph_executor_input_value_info(ex, i, &v)) &&
          v.kind != KILN_VALUE_TENSOR)
        return true;
    }
  }
  return false;
}

/* A model with sequences or optionals: a .pb file is the next input value
 * not given yet (or the one its name names): a TensorProto, SequenceProto
 * or OptionalProto, by that value's kind (docs/sequences.md). */
static int set_value_from_pb(Command *cmd, KilnGraphExecutor *ex, const char *path, bool *given) {
  int nv = kiln_graph_executor_num_input_values(ex), vi = -1, rc = 0;
  KilnValueInfo v;
  for (int i = 0; i < nv && vi < 0; i++) {
    kiln_graph_executor_input_value_info(ex, i, &v);
    bool all = true;
    for (int k = 0; k < v.num_tensors; k++) {
      int idx;
      if (!kiln_graph_executor_input_index(ex, v.tensor_names[k], &idx)) all &= given[idx];
    }
    /* an empty optional has no tensors: given once its file was read */
    if (!all || (!v.num_tensors && !given[kiln_graph_executor_num_inputs(ex) + i])) vi = i;
  }
  if (vi < 0) return cli_error(cmd, "input file '%s': the model has only %d input(s), all already given", path, nv);
  kiln_graph_executor_input_value_info(ex, vi, &v);
  KArena *a = kiln_arena_new();
  kiln_arena_push(a);
  DLTensor **ts = NULL;
  int n = 0, present = 1;
  if (v.kind == KILN_VALUE_TENSOR) {
    OnnxTensor *ot = onnx_tensor_load_pb(path);
    int named;
    if (ot && ot->name && *ot->name && !kiln_graph_executor_input_value_index(ex, ot->name, &named)) {
      vi = named;
      kiln_graph_executor_input_value_info(ex, vi, &v);
    }
    ts = KNEWN(DLTensor *, 2);
    if (!ot || tensor_from_onnx(ot, &ts[0])) rc = cli_error(cmd, "%s", kiln_get_error());
    else n = 1;
  } else {
    OnnxValue *ov = onnx_value_load_pb(path, v.kind == KILN_VALUE_OPTIONAL);
    if (!ov) {
      rc = cli_error(cmd, "input file '%s' for input '%s' (%s): %s", path, v.name,
                     v.kind == KILN_VALUE_SEQUENCE ? "a sequence" : "an optional", kiln_get_error());
    } else {
      present = ov->present;
      ts = KNEWN(DLTensor *, ov->n + 1);
      for (int k = 0; k < ov->n && !rc; k++, n++)
        if (tensor_from_onnx(ov->tensors[k], &ts[k])) rc = cli_error(cmd, "%s: element %d: %s", path, k, kiln_get_error());
    }
  }
  if (!rc && kiln_graph_executor_set_input_value(ex, vi, present, (const DLTensor *const *)ts, n))
    rc = cli_error(cmd, "input file '%s': %s", path, kiln_last_error());
  for (int k = 0; !rc && k < v.num_tensors; k++) {
    int idx;
    if (!kiln_graph_executor_input_index(ex, v.tensor_names[k], &idx)) given[idx] = true;
  }
  if (!rc) given[kiln_graph_executor_num_inputs(ex) + vi] = true;
  for (int k = 0; k < n; k++) kiln_array_free(ts[k]);
  kiln_arena_pop();
  kiln_arena_free(a);
  return rc;
}

/* Set one input from a file; pos is the next positional input index. */
static int set_from_file(Command *cmd, KilnGraphExecutor *ex, const char *path, int *pos, bool *given) {
  size_t len = strlen(path);
  int nin = kiln_graph_executor_num_inputs(ex);
  if (len > 4 && !strcmp(path + len - 4, ".npz")) {
    int n;
    NamedArray *arr;
    if (npz_load(path, &n, &arr)) return cli_error(cmd, "%s", kiln_get_error());
    for (int i = 0; i < n; i++) {
      int idx;
      if (kiln_graph_executor_input_index(ex, arr[i].name, &idx)) {
        int rc = cli_error(cmd, "%s: %s", path, kiln_last_error());
        npz_free(n, arr);
        return rc;
      }
      if (kiln_graph_executor_set_input(ex, idx, arr[i].array)) {
        int rc = cli_error(cmd, "%s: input '%s': %s", path, arr[i].name, kiln_last_error());
        npz_free(n, arr);
        return rc;
      }
      given[idx] = true;
    }
    npz_free(n, arr);
    return 0;
  }
  DLTensor *t = NULL;
  const char *name = NULL;
  if (len > 3 && !strcmp(path + len - 3, ".pb") && has_structure(ex)) return set_value_from_pb(cmd, ex, path, given);
  KArena *a = kiln_arena_new();
  kiln_arena_push(a);
  int rc = 0;
  if (len > 3 && !strcmp(path + len - 3, ".pb")) {
    OnnxTensor *ot = onnx_tensor_load_pb(path);
    if (!ot || tensor_from_onnx(ot, &t)) rc = cli_error(cmd, "%s: %s", path, kiln_get_error());
    else if (ot->name && *ot->name) name = kstrdup(ot->name);
  } else if (len > 4 && !strcmp(path + len - 4, ".npy")) {
    if (npy_load(path, &t)) rc = cli_error(cmd, "%s", kiln_get_error());
  } else {
    rc = cli_error(cmd, "input file '%s': expected .npz, .npy or .pb", path);
  }
  int idx = -1;
  if (!rc && name && kiln_graph_executor_input_index(ex, name, &idx)) idx = -1;
  if (!rc && idx < 0) {
    while (*pos < nin && given[*pos]) (*pos)++;
    if (*pos >= nin) rc = cli_error(cmd, "input file '%s': the model has only %d input(s), all already given", path, nin);
    idx = *pos;
  }
  if (!rc && kiln_graph_executor_set_input(ex, idx, t)) {
    KilnTensorInfo info;
    kiln_graph_executor_input_info(ex, idx, &info);
    rc = cli_error(cmd, "input file '%s' for input '%s': %s", path, info.name, kiln_last_error());
  }
  if (!rc) given[idx] = true;
  kiln_array_free(t);
  kiln_arena_pop();
  kiln_arena_free(a);
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void print_top(DLTensor *out, long k) {
  if (out->dtype.code != kDLFloat || out->dtype.bits != 32 || out->ndim < 1) return;
  int64_t classes = out->shape[out->ndim - 1], rows = 1;
  for (int i = 0; i < out->ndim - 1; i++) rows *= out->shape[i];
  if (k > classes) k = classes;
  const float *p = out->data;
  if (k == 1 && rows > 1) { /* a batch: the predicted classes on one line */
    printf("predicted classes:");
    for (int64_t r = 0; r < rows; r++) {
      int64_t best = 0;
      for (int64_t c = 1; c < classes; c++)
        if (p[r * classes + c] > p[r * classes + best]) best = c;
      printf(" %lld", (long long)best);
    }
    printf("\n");
    return;
  }
  for (int64_t r = 0; r < rows; r++) {
    if (rows > 1) printf("row %lld: ", (long long)r);
    printf("top-%ld classes:", k);
    char *used = calloc((size_t)classes, 1);
    if (!used) {
      printf(" (out of memory)\n");
      return;
    }
    for (long j = 0; j < k; j++) {
      int64_t best = -1;
      for (int64_t c = 0; c < classes; c++)
        if (!used[c] && (best < 0 || p[r * classes + c] > p[r * classes + best])) best = c;
      used[best] = 1;
      printf(" %lld (%.4g)", (long long)best, p[r * classes + best]);
    }
    free(used);
    printf("\n");
  }
}

static int run(Command *cmd, int npos, const char **pos) {
  (void)npos;
  long repeat, number, top, threads;
  int urc;
  /* --repeat and --number are counts of runs an int holds; the timing
   * statistics keep one double per repeat */
  if ((urc = cli_int_range(cmd, "--repeat", 1, 1, INT_MAX, &repeat)) ||
      (urc = cli_int_range(cmd, "--number", 1, 1, INT_MAX, &number)) || (urc = cli_int(cmd, "--print-top", 0, &top)) ||
      (urc = cli_int_range(cmd, "--threads", 0, 1, 1024, &threads)) || (urc = cli_requires(cmd, "--profile-csv", "--profile")) ||
      (urc = cli_requires(cmd, "--profile-trace", "--profile")))
    return urc;
  Opt *in = cli_opt(cmd, "--inputs");
  const char *mode = cli_opt(cmd, "--fill-mode")->set ? cli_opt(cmd, "--fill-mode")->value : "random";
  if (strcmp(mode, "random") && strcmp(mode, "zeros") && strcmp(mode, "ones"))
    return cli_usage(cmd, "--fill-mode must be random, zeros or ones, got '%s'", mode);
  if (in->set && cli_opt(cmd, "--fill-mode")->set)
    return cli_usage(cmd, "--fill-mode fills the inputs only when no --inputs is given: give every input in the --inputs "
                          "files, or drop --inputs");
  if (threads > 0) kiln_set_num_threads((int)threads);
  KilnModule *m;
  if (kiln_module_load(pos[0], &m)) return cli_error(cmd, "%s", kiln_last_error());
  Opt *dv = cli_opt(cmd, "--device");
  const char *built = cli_module_target(m);
  /* DEVICE is a kind, with ":N" for its N-th device */
  char kind[32] = "";
  long dev_id = 0;
  if (dv->set) {
    const char *colon = strchr(dv->value, ':');
    size_t klen = colon ? (size_t)(colon - dv->value) : strlen(dv->value);
    char *end = NULL;
    if (colon) dev_id = strtol(colon + 1, &end, 10);
    if (klen >= sizeof kind || (colon && (!colon[1] || *end || dev_id < 0 || dev_id > 1023))) {
      kiln_module_free(m);
      return cli_usage(cmd, "--device takes KIND or KIND:N (cpu, cuda:1, opencl:0), got '%s'", dv->value);
    }
    memcpy(kind, dv->value, klen);
    kind[klen] = 0;
  }
  int want = dv->set ? kiln_device_type_from_name(kind) : -1;
  if (dv->set && want != kiln_device_type_from_name(built)) {
    int rc = want < 0 ? cli_error(cmd, "--device: %s", kiln_last_error())
                      : cli_error(cmd, "%s was compiled for %s; it cannot run on %s (compile it with --target %s)", pos[0],
                                  built, kind, kind);
    kiln_module_free(m);
    return rc;
  }
  KilnGraphExecutor *ex;
  DLDevice run_dev = {(DLDeviceType)kiln_device_type_from_name(built), (int32_t)dev_id};
  if (kiln_graph_executor_create_on(m, run_dev, &ex)) {
    int rc = cli_error(cmd, "%s: %s", pos[0], kiln_last_error());
    kiln_module_free(m);
    return rc;
  }
  int rc = 0, nin = kiln_graph_executor_num_inputs(ex), nout = kiln_graph_executor_num_outputs(ex);
  /* per input tensor, then per input value (an empty optional has no tensor) */
  bool *given = calloc((size_t)nin + (size_t)kiln_graph_executor_num_input_values(ex) + 1, sizeof(bool));
  if (!given) rc = cli_error(cmd, "out of memory");
  int next = 0;
  for (int i = 0; i < in->nvalues && !rc; i++) rc = set_from_file(cmd, ex, in->values[i], &next, given);
  /* with --inputs, every input comes from the files: a missing one is a
   * mistake, not something to make up */
  for (int i = 0; i < nin && !rc && in->set; i++) {
    if (given[i]) continue;
    KilnTensorInfo info;
    kiln_graph_executor_input_info(ex, i, &info);
    rc = cli_error(cmd, "input '%s' (%s) is not in the --inputs file(s): give every input of the model (%d in all), or "
                        "drop --inputs to fill them all (--fill-mode)",
                   info.name, shape_text(info.ndim, info.shape), nin);
  }
  if (!rc && !in->set && nin > 0)
    fprintf(stderr, "kiln run: no --inputs given: filling the %d input(s) with %s%s\n", nin,
            !strcmp(mode, "random") ? "random values (seeded, the same each run)" : mode,
            !strcmp(mode, "random") ? "; give real data with --inputs FILE" : "");
  for (int i = 0; i < nin && !rc; i++) {
    if (given[i]) continue;
    KilnTensorInfo info;
    kiln_graph_executor_input_info(ex, i, &info);
    DLTensor *t;
    DLDevice cpu = {kDLCPU, 0};
    /* text has no random values: empty strings */
    if (kiln_dtype_is_string(info.dtype) ? kiln_array_from_strings(info.ndim, info.shape, NULL, &t)
                                         : kiln_array_empty(info.ndim, info.shape, info.dtype, cpu, &t)) {
      rc = cli_error(cmd, "%s", kiln_last_error());
      break;
    }
    if (!kiln_dtype_is_string(info.dtype)) fill(t, mode);
    kiln_graph_executor_set_input(ex, i, t);
    kiln_array_free(t);
  }
  if (!rc && kiln_graph_executor_run(ex)) rc = cli_error(cmd, "%s", kiln_last_error());
  if (!rc && cli_opt(cmd, "--print-time")->set) {
    double *t = calloc((size_t)repeat, sizeof(double));
    if (!t) rc = cli_error(cmd, "--repeat %ld: cannot hold %ld timings in memory; use a smaller --repeat", repeat, repeat);
    for (long r = 0; r < repeat && !rc; r++) {
      double t0 = kiln_now_seconds();
      for (long k = 0; k < number && !rc; k++)
        if (kiln_graph_executor_run(ex)) rc = cli_error(cmd, "%s", kiln_last_error());
      if (!rc && kiln_graph_executor_sync(ex)) rc = cli_error(cmd, "%s", kiln_last_error());
      t[r] = (kiln_now_seconds() - t0) * 1e3 / (double)number;
    }
    if (!rc) {
      double mean = 0, sd = 0;
      for (long r = 0; r < repeat; r++) mean += t[r];
      mean /= (double)repeat;
      for (long r = 0; r < repeat; r++) sd += (t[r] - mean) * (t[r] - mean);
      sd = sqrt(sd / (double)repeat);
      qsort(t, (size_t)repeat, sizeof(double), cmp_double);
      double med = repeat % 2 ? t[repeat / 2] : 0.5 * (t[repeat / 2 - 1] + t[repeat / 2]);
      printf("Execution time summary:\n %-10s %-10s %-10s %-10s %-10s\n", "mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)");
      printf(" %-10.4f %-11.4f %-10.4f %-10.4f %-10.4f\n", mean, med, t[repeat - 1], t[0], sd);
    }
    free(t);
  }
  if (!rc && cli_opt(cmd, "--profile")->set) {
    KilnProfile *p;
    const char *text;
    if (kiln_debug_profile(ex, (int)number, (int)repeat, &p) || kiln_profile_format(p, KILN_PROFILE_TABLE, &text)) {
      rc = cli_error(cmd, "%s", kiln_last_error());
    } else {
      fputs(text, stdout);
      Opt *csv = cli_opt(cmd, "--profile-csv"), *tr = cli_opt(cmd, "--profile-trace");
      if (csv->set && kiln_profile_write(p, KILN_PROFILE_CSV, csv->value)) rc = cli_error(cmd, "%s", kiln_last_error());
      if (tr->set && kiln_profile_write(p, KILN_PROFILE_TRACE, tr->value)) rc = cli_error(cmd, "%s", kiln_last_error());
      kiln_profile_free(p);
    }
  }
  NamedArray *outs = calloc((size_t)nout + 1, sizeof(NamedArray));
  if (!outs) {
    free(given);
    kiln_graph_executor_free(ex);
    kiln_module_free(m);
    return cli_error(cmd, "out of memory");
  }
  for (int i = 0; i < nout && !rc; i++) {
    /* the model's output name (a repeated name gets its index) */
    KilnTensorInfo oi;
    kiln_graph_executor_output_info(ex, i, &oi);
    /* an element of a sequence or optional output: "y[0]" (docs/sequences.md) */
    for (int v = 0, nv = kiln_graph_executor_num_output_values(ex); v < nv; v++) {
      KilnValueInfo vi;
      if (!kiln_graph_executor_output_value_info(ex, v, &vi) && i >= vi.first_tensor && i < vi.first_tensor + vi.num_tensors)
        oi.name = vi.tensor_names[i - vi.first_tensor];
    }
    bool dup = false;
    for (int k = 0; k < i; k++) dup |= outs[k].name && !strcmp(outs[k].name, oi.name);
    size_t len = strlen(oi.name) + 24;
    if (!(outs[i].name = malloc(len))) {
      rc = cli_error(cmd, "out of memory");
      break;
    }
    if (dup) snprintf(outs[i].name, len, "%s_%d", oi.name, i);
    else snprintf(outs[i].name, len, "%s", oi.name);
    if (kiln_graph_executor_get_output(ex, i, &outs[i].array)) rc = cli_error(cmd, "%s", kiln_last_error());
  }
  if (!rc && top > 0 && nout > 0) print_top(outs[0].array, top);
  Opt *o = cli_opt(cmd, "--output");
  if (!rc && o->set) {
    if (npz_save(o->value, nout, outs)) rc = cli_error(cmd, "%s", kiln_get_error());
  }
  bool structured = has_structure(ex);
  if (!rc && !o->set && top == 0 && !cli_opt(cmd, "--profile")->set && !cli_opt(cmd, "--print-time")->set && structured) {
    /* a value a line: a sequence's elements after its length, an empty optional as none */
    for (int v = 0, nv = kiln_graph_executor_num_output_values(ex); v < nv; v++) {
      KilnValueInfo vi;
      kiln_graph_executor_output_value_info(ex, v, &vi);
      printf("output %d (%s): ", v, vi.name);
      if (vi.kind == KILN_VALUE_OPTIONAL) printf(vi.has_value ? "optional holding " : "none (an empty optional)");
      if (vi.holds == KILN_VALUE_SEQUENCE && vi.has_value) printf("sequence of %d%s", vi.num_tensors, vi.num_tensors ? ": " : "");
      for (int k = 0; k < vi.num_tensors; k++) {
        DLTensor *t = outs[vi.first_tensor + k].array;
        printf("%s%s %s", k ? ", " : "", shape_text(t->ndim, t->shape),
               kiln_dtype_is_string(t->dtype) ? "string" : t->dtype.code == kDLFloat ? "float" : "int");
      }
      printf("\n");
    }
  }
  if (!rc && !o->set && top == 0 && !cli_opt(cmd, "--profile")->set && !cli_opt(cmd, "--print-time")->set && !structured) {
    for (int i = 0; i < nout; i++) {
      DLTensor *t = outs[i].array;
      printf("output %d (%s): %s %s", i, outs[i].name, shape_text(t->ndim, t->shape),
             kiln_dtype_is_string(t->dtype) ? "string" : t->dtype.code == kDLFloat ? "float" : "int");
      printf("\n");
    }
  }
  npz_free(nout, outs);
  free(given);
  kiln_graph_executor_free(ex);
  kiln_module_free(m);
  return rc;
}

Command cmd_run = {"run", "MODEL.so [options]",
                   "Run a compiled model on inputs from files (or filled), print or save its outputs, time or profile it.",
                   1, 1, opts, run};
