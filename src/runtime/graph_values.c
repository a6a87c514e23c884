/*
 * graph_values.c - the model's inputs and outputs as values: tensors,
 * sequences of tensors and optionals (docs/sequences.md).
 *
 * The structure of each sequence and optional is fixed at compile time and
 * written to the graph JSON as attrs.kiln_values, one line per model input
 * and output in order, "in|out KIND NAME", KIND one of tensor, seq(N),
 * opt(none), opt(tensor), opt(seq(N)).  The elements are the graph's own
 * tensor inputs ("NAME[i]"; an optional tensor is the input NAME) and
 * consecutive outputs, so the executor's tensor machinery (binding, sizes
 * from data, planning) runs unchanged; this file maps values to tensors
 * and checks what a caller hands in against the compiled structure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

static const char *kind_text(const KilnValueInfo *v) {
  static __thread char buf[64];
  if (v->kind == KILN_VALUE_TENSOR) return "a tensor";
  if (v->kind == KILN_VALUE_SEQUENCE) {
    snprintf(buf, sizeof buf, "a sequence of %d tensor%s", v->num_tensors, v->num_tensors == 1 ? "" : "s");
    return buf;
  }
  if (!v->has_value) return "an empty optional";
  if (v->holds == KILN_VALUE_TENSOR) return "an optional holding a tensor";
  snprintf(buf, sizeof buf, "an optional holding a sequence of %d", v->num_tensors);
  return buf;
}

/* The --input-shapes entry that compiles input value v. */
static const char *compile_text(const KilnValueInfo *v, int present, int n) {
  static __thread char buf[256];
  if (v->kind == KILN_VALUE_OPTIONAL && !present) snprintf(buf, sizeof buf, "--input-shapes \"%s:none\"", v->name);
  else if (v->kind == KILN_VALUE_SEQUENCE || v->holds == KILN_VALUE_SEQUENCE)
    snprintf(buf, sizeof buf, "--input-shapes \"%s:seq(%d)\"", v->name, n);
  else snprintf(buf, sizeof buf, "no \"%s:none\" in --input-shapes", v->name);
  return buf;
}

/* "KIND NAME" -> v (tensor_names and first_tensor set by the caller). */
static int parse_line(const char *kind, KilnValueInfo *v) {
  int n = 0, used = 0;
  memset(v, 0, sizeof *v);
  v->has_value = 1;
  v->first_tensor = -1;
  if (!strncmp(kind, "tensor ", 7)) {
    v->kind = v->holds = KILN_VALUE_TENSOR;
    v->num_tensors = 1;
    used = 7;
  } else if (sscanf(kind, "seq(%d) %n", &n, &used) == 1 && used > 0) {
    v->kind = v->holds = KILN_VALUE_SEQUENCE;
    v->num_tensors = n;
  } else if (!strncmp(kind, "opt(none) ", 10)) {
    v->kind = KILN_VALUE_OPTIONAL;
    v->holds = KILN_VALUE_TENSOR;
    v->has_value = 0;
    used = 10;
  } else if (!strncmp(kind, "opt(tensor) ", 12)) {
    v->kind = KILN_VALUE_OPTIONAL;
    v->holds = KILN_VALUE_TENSOR;
    v->num_tensors = 1;
    used = 12;
  } else if (sscanf(kind, "opt(seq(%d)) %n", &n, &used) == 1 && used > 0) {
    v->kind = KILN_VALUE_OPTIONAL;
    v->holds = KILN_VALUE_SEQUENCE;
    v->num_tensors = n;
  } else {
    return -1;
  }
  if (n < 0 || !kind[used]) return -1;
  v->name = kind + used;
  return 0;
}

int kiln_graph_values_init(KilnGraphExecutor *ex) {
  const JsonGraph *g = &ex->g;
  ex->num_in_values = ex->num_out_values = 0;
  if (!g->num_value_lines) return 0; /* every value a tensor: made on each call */
  ex->in_values = kiln_arena_alloc(ex->arena, sizeof(KilnValueInfo) * ((size_t)g->num_value_lines + 1));
  ex->out_values = kiln_arena_alloc(ex->arena, sizeof(KilnValueInfo) * ((size_t)g->num_value_lines + 1));
  int next_head = 0;
  for (int i = 0; i < g->num_value_lines; i++) {
    const char *l = g->value_lines[i];
    bool in = !strncmp(l, "in ", 3), out = !strncmp(l, "out ", 4);
    KilnValueInfo *v = in ? &ex->in_values[ex->num_in_values] : &ex->out_values[ex->num_out_values];
    if ((!in && !out) || parse_line(l + (in ? 3 : 4), v))
      return kiln_set_error("graph JSON: attrs.kiln_values[%d] \"%.80s\": expected \"in|out KIND NAME\" with KIND "
                            "tensor, seq(N), opt(none), opt(tensor) or opt(seq(N))",
                            i, l);
    const char **names = kiln_arena_alloc(ex->arena, sizeof(char *) * ((size_t)v->num_tensors + 1));
    for (int k = 0; k < v->num_tensors; k++) {
      bool elem = v->kind == KILN_VALUE_SEQUENCE || v->holds == KILN_VALUE_SEQUENCE;
      size_t len = strlen(v->name) + 24;
      char *s = kiln_arena_alloc(ex->arena, len);
      if (elem) snprintf(s, len, "%s[%d]", v->name, k);
      else snprintf(s, len, "%s", v->name);
      names[k] = s;
      if (in && !pm_get(&ex->arg_by_name, s))
        return kiln_set_error("graph JSON: attrs.kiln_values[%d]: input '%s' has no tensor input '%s'", i, v->name, s);
    }
    v->tensor_names = names;
    if (out) {
      v->first_tensor = next_head;
      next_head += v->num_tensors;
      ex->num_out_values++;
    } else {
      ex->num_in_values++;
    }
  }
  if (next_head != g->num_heads)
    return kiln_set_error("graph JSON: attrs.kiln_values gives the outputs %d tensors, the graph has %d", next_head,
                          g->num_heads);
  return 0;
}

/* Without kiln_values: one tensor value per input (output), made here. */
static const KilnValueInfo *plain_value(const KilnGraphExecutor *ex, bool in, int index, KilnValueInfo *v) {
  KilnTensorInfo ti;
  if (in ? kiln_graph_executor_input_info(ex, index, &ti) : kiln_graph_executor_output_info(ex, index, &ti)) return NULL;
  memset(v, 0, sizeof *v);
  v->name = ti.name;
  v->kind = v->holds = KILN_VALUE_TENSOR;
  v->has_value = 1;
  v->num_tensors = 1;
  v->first_tensor = in ? -1 : index;
  /* ti.name is the executor's (stable while it lives); the list is this
   * thread's until the next call */
  static __thread const char *one[1];
  one[0] = ti.name;
  v->tensor_names = one;
  return v;
}

KILN_API int kiln_graph_executor_num_input_values(const KilnGraphExecutor *ex) {
  if (!ex) return kiln_set_error("num_input_values: a NULL executor");
  return ex->g.num_value_lines ? ex->num_in_values : kiln_graph_executor_num_inputs(ex);
}

KILN_API int kiln_graph_executor_num_output_values(const KilnGraphExecutor *ex) {
  if (!ex) return kiln_set_error("num_output_values: a NULL executor");
  return ex->g.num_value_lines ? ex->num_out_values : kiln_graph_executor_num_outputs(ex);
}

static int value_info(const KilnGraphExecutor *ex, bool in, int index, KilnValueInfo *info) {
  const char *what = in ? "input_value_info" : "output_value_info";
  if (!ex || !info) return kiln_set_error("%s: a NULL argument", what);
  int n = in ? kiln_graph_executor_num_input_values(ex) : kiln_graph_executor_num_output_values(ex);
  if (index < 0 || index >= n)
    return kiln_set_error("%s: index %d is out of range (the model has %d %s value%s)", what, index, n,
                          in ? "input" : "output", n == 1 ? "" : "s");
  if (!ex->g.num_value_lines) return plain_value(ex, in, index, info) ? 0 : -1;
  *info = in ? ex->in_values[index] : ex->out_values[index];
  return 0;
}

KILN_API int kiln_graph_executor_input_value_info(const KilnGraphExecutor *ex, int index, KilnValueInfo *info) {
  return value_info(ex, true, index, info);
}

KILN_API int kiln_graph_executor_output_value_info(const KilnGraphExecutor *ex, int index, KilnValueInfo *info) {
  return value_info(ex, false, index, info);
}

KILN_API int kiln_graph_executor_input_value_index(const KilnGraphExecutor *ex, const char *name, int *index) {
  if (!ex || !name || !index) return kiln_set_error("input_value_index: a NULL argument");
  if (!ex->g.num_value_lines) return kiln_graph_executor_input_index(ex, name, index);
  for (int i = 0; i < ex->num_in_values; i++)
    if (!strcmp(ex->in_values[i].name, name)) {
      *index = i;
      return 0;
    }
  StrBuf sb = {0};
  for (int i = 0; i < ex->num_in_values; i++) sb_printf(&sb, "%s%s", i ? ", " : "", ex->in_values[i].name);
  kiln_set_error("the model has no input '%s' (its inputs: %s)", name, sb.data ? sb.data : "none");
  sb_free(&sb);
  return -1;
}

KILN_API int kiln_graph_executor_set_input_value(KilnGraphExecutor *ex, int index, int present,
                                                 const DLTensor *const *tensors, int n) {
  KilnValueInfo v;
  if (value_info(ex, true, index, &v)) return kiln_error_context("set_input_value");
  if (present && n > 0 && !tensors) return kiln_set_error("set_input_value: input '%s': tensors is NULL", v.name);
  if (!present && v.kind != KILN_VALUE_OPTIONAL)
    return kiln_set_error("input '%s' is %s: it cannot be empty (only an optional can)", v.name, kind_text(&v));
  if (present && v.kind == KILN_VALUE_TENSOR && n != 1)
    return kiln_set_error("input '%s' is a tensor: give one tensor, not %d", v.name, n);
  if ((present ? 1 : 0) != v.has_value || (present && n != v.num_tensors))
    return kiln_set_error("input '%s' was compiled as %s, but got %s%d tensor%s: compile the model for it with %s",
                          v.name, kind_text(&v), present ? "" : "none (an empty optional) instead of ",
                          present ? n : v.num_tensors, (present ? n : v.num_tensors) == 1 ? "" : "s",
                          compile_text(&v, present, n));
  for (int k = 0; present && k < n; k++) {
    if (!tensors[k]) return kiln_set_error("input '%s': element %d is NULL", v.name, k);
    if (kiln_graph_executor_set_input_by_name(ex, v.tensor_names[k], tensors[k])) {
      if (v.kind == KILN_VALUE_TENSOR) return -1;
      return kiln_error_context("input '%s' element %d ('%s')", v.name, k, v.tensor_names[k]);
    }
  }
  return 0;
}
