/*
 * test_sequences.c - sequences and optionals at the graph's boundary
 * (docs/sequences.md) through the importer, the build and the executor's
 * value API.
 *
 * tests/data/onnx/sequences.onnx (make_models.py): y = SequenceMap(s, t)
 * with body a + b (s a sequence of float [N], t a float [1]); h =
 * OptionalHasElement(o), oo = Identity(o) (o an optional float [2]).
 * Compiled with s of length 2 and symbolic element sizes, it runs at
 * several element shapes, each output checked in C; a wrong length, an
 * empty value for a sequence, a wrong element dtype and an empty value
 * for an optional compiled holding one are refused naming the input.
 * Compiled again with "o:none", o is empty: h is false and oo has no
 * tensor.
 */
#include <string.h>

#include "frontend/onnx/import.h"
#include "graph/backend/build.h"
#include "graph/graph.h"
#include "kiln/runtime.h"
#include "test.h"

static DLTensor *f32s(int64_t n, float base) {
  DLTensor *t = NULL;
  if (kiln_array_empty(1, &n, DT_F32, (DLDevice){kDLCPU, 0}, &t)) return NULL;
  for (int64_t i = 0; i < n; i++) ((float *)t->data)[i] = base + 0.25f * (float)i;
  return t;
}

/* Compile sequences.onnx with shapes into dir; an executor or NULL. */
static KilnGraphExecutor *build(const char *dir, const char *shapes, const char *tag, KilnModule **mod) {
  Graph *g = kiln_import_onnx(kfmt("%s/tests/data/onnx/sequences.onnx", test_root()), shapes);
  CHECK_MSG(g != NULL, "import (%s): %s", shapes, kiln_get_error());
  if (!g) return NULL;
  const char *so = kfmt("%s/%s.so", dir, tag);
  GraphBuildOptions bo;
  memset(&bo, 0, sizeof bo);
  bo.opt_level = 3;
  KilnGraphExecutor *ex = NULL;
  *mod = NULL;
  CHECK_OK(graph_build(g, &bo, so, NULL));
  graph_free(g);
  CHECK_OK(kiln_module_load(so, mod));
  if (*mod) CHECK_OK(kiln_graph_executor_create(*mod, &ex));
  return ex;
}

/* Output `index` is n floats equal to want[i] + add. */
static void check_f32(KilnGraphExecutor *ex, int index, const DLTensor *want, float add) {
  DLTensor *o = NULL;
  CHECK_OK(kiln_graph_executor_get_output(ex, index, &o));
  if (!o) return;
  CHECK_INT(o->ndim, 1);
  CHECK_MSG(o->shape[0] == want->shape[0], "output %d has %lld elements, expected %lld", index, (long long)o->shape[0],
            (long long)want->shape[0]);
  int bad = 0;
  for (int64_t i = 0; i < want->shape[0] && i < o->shape[0]; i++)
    bad += ((float *)o->data)[i] != ((float *)want->data)[i] + add;
  CHECK_MSG(bad == 0, "output %d: %d elements wrong", index, bad);
  kiln_array_free(o);
}

static void test_sequences_boundary(void) {
  char *dir = kiln_mkdtemp("kiln-sequences-");
  CHECK_NN(dir);
  if (!dir) return;
  KilnModule *mod = NULL;
  KilnGraphExecutor *ex = build(dir, "s:seq(2),s[0]:[A],s[1]:[B]", "present", &mod);
  if (ex) {
    KilnValueInfo v;
    CHECK_INT(kiln_graph_executor_num_input_values(ex), 3);
    CHECK_INT(kiln_graph_executor_num_output_values(ex), 3);
    CHECK_INT(kiln_graph_executor_num_inputs(ex), 4); /* s[0], s[1], t, o */
    CHECK_OK(kiln_graph_executor_input_value_info(ex, 0, &v));
    CHECK_STR(v.name, "s");
    CHECK_INT(v.kind, KILN_VALUE_SEQUENCE);
    CHECK_INT(v.num_tensors, 2);
    CHECK_STR(v.tensor_names[1], "s[1]");
    CHECK_OK(kiln_graph_executor_input_value_info(ex, 2, &v));
    CHECK_INT(v.kind, KILN_VALUE_OPTIONAL);
    CHECK_INT(v.holds, KILN_VALUE_TENSOR);
    CHECK_INT(v.has_value, 1);
    CHECK_OK(kiln_graph_executor_output_value_info(ex, 0, &v));
    CHECK_INT(v.kind, KILN_VALUE_SEQUENCE);
    CHECK_INT(v.first_tensor, 0);
    CHECK_OK(kiln_graph_executor_output_value_info(ex, 1, &v));
    CHECK_INT(v.first_tensor, 2);
    CHECK_OK(kiln_graph_executor_output_value_info(ex, 2, &v));
    CHECK_INT(v.kind, KILN_VALUE_OPTIONAL);
    CHECK_INT(v.first_tensor, 3);
    int si = -1, ti = -1, oi = -1;
    CHECK_OK(kiln_graph_executor_input_value_index(ex, "s", &si));
    CHECK_OK(kiln_graph_executor_input_value_index(ex, "t", &ti));
    CHECK_OK(kiln_graph_executor_input_value_index(ex, "o", &oi));
    CHECK(kiln_graph_executor_input_value_index(ex, "q", &si) != 0);
    CHECK_CONTAINS(kiln_last_error(), "the model has no input 'q' (its inputs: s, t, o)");
    si = 0;
    DLTensor *t = f32s(1, 10.0f), *o = f32s(2, -1.0f);
    CHECK_OK(kiln_graph_executor_set_input_value(ex, ti, 1, (const DLTensor *const[]){t}, 1));
    CHECK_OK(kiln_graph_executor_set_input_value(ex, oi, 1, (const DLTensor *const[]){o}, 1));
    /* element sizes change from run to run: one module */
    const int64_t sizes[3][2] = {{3, 5}, {4, 1}, {7, 7}};
    for (int r = 0; r < 3; r++) {
      DLTensor *a = f32s(sizes[r][0], (float)r), *b = f32s(sizes[r][1], 100.0f + (float)r);
      CHECK_OK(kiln_graph_executor_set_input_value(ex, si, 1, (const DLTensor *const[]){a, b}, 2));
      CHECK_OK(kiln_graph_executor_run(ex));
      check_f32(ex, 0, a, 10.0f);
      check_f32(ex, 1, b, 10.0f);
      DLTensor *h = NULL;
      CHECK_OK(kiln_graph_executor_get_output(ex, 2, &h));
      if (h) CHECK(*(uint8_t *)h->data == 1);
      kiln_array_free(h);
      check_f32(ex, 3, o, 0.0f);
      kiln_array_free(a);
      kiln_array_free(b);
    }
    /* the structure must be the compiled one; each error names the input */
    DLTensor *a = f32s(3, 0.0f);
    CHECK(kiln_graph_executor_set_input_value(ex, si, 1, (const DLTensor *const[]){a}, 1) != 0);
    CHECK_CONTAINS(kiln_last_error(), "input 's' was compiled as a sequence of 2 tensors, but got 1 tensor");
    CHECK_CONTAINS(kiln_last_error(), "--input-shapes \"s:seq(1)\"");
    CHECK(kiln_graph_executor_set_input_value(ex, si, 0, NULL, 0) != 0);
    CHECK_CONTAINS(kiln_last_error(), "input 's' is a sequence of 2 tensors: it cannot be empty");
    CHECK(kiln_graph_executor_set_input_value(ex, oi, 0, NULL, 0) != 0);
    CHECK_CONTAINS(kiln_last_error(), "input 'o' was compiled as an optional holding a tensor, but got none");
    CHECK_CONTAINS(kiln_last_error(), "\"o:none\"");
    DLTensor *bad = NULL;
    CHECK_OK(kiln_array_empty(1, (int64_t[]){3}, DT_I32, (DLDevice){kDLCPU, 0}, &bad));
    CHECK(kiln_graph_executor_set_input_value(ex, si, 1, (const DLTensor *const[]){a, bad}, 2) != 0);
    CHECK_CONTAINS(kiln_last_error(), "input 's' element 1 ('s[1]')");
    CHECK(kiln_graph_executor_set_input_value(ex, ti, 1, (const DLTensor *const[]){a}, 1) != 0); /* [3] for [1] */
    CHECK_CONTAINS(kiln_last_error(), "'t'");
    kiln_array_free(bad);
    kiln_array_free(a);
    kiln_array_free(t);
    kiln_array_free(o);
  }
  kiln_graph_executor_free(ex);
  kiln_module_free(mod);

  /* o compiled empty: h is false, oo carries no tensor */
  ex = build(dir, "s:seq(1),s[0]:[3],o:none", "none", &mod);
  if (ex) {
    KilnValueInfo v;
    CHECK_INT(kiln_graph_executor_num_inputs(ex), 2); /* s[0], t */
    CHECK_OK(kiln_graph_executor_output_value_info(ex, 2, &v));
    CHECK_INT(v.has_value, 0);
    CHECK_INT(v.num_tensors, 0);
    CHECK_INT(kiln_graph_executor_num_outputs(ex), 2);
    DLTensor *a = f32s(3, 1.0f), *t = f32s(1, 2.0f);
    CHECK_OK(kiln_graph_executor_set_input_value(ex, 0, 1, (const DLTensor *const[]){a}, 1));
    CHECK_OK(kiln_graph_executor_set_input_value(ex, 1, 1, (const DLTensor *const[]){t}, 1));
    CHECK_OK(kiln_graph_executor_set_input_value(ex, 2, 0, NULL, 0));
    CHECK(kiln_graph_executor_set_input_value(ex, 2, 1, (const DLTensor *const[]){t}, 1) != 0);
    CHECK_CONTAINS(kiln_last_error(), "input 'o' was compiled as an empty optional");
    CHECK_OK(kiln_graph_executor_run(ex));
    check_f32(ex, 0, a, 2.0f);
    DLTensor *h = NULL;
    CHECK_OK(kiln_graph_executor_get_output(ex, 1, &h));
    if (h) CHECK(*(uint8_t *)h->data == 0);
    kiln_array_free(h);
    kiln_array_free(a);
    kiln_array_free(t);
  }
  kiln_graph_executor_free(ex);
  kiln_module_free(mod);

  /* the structure is asked for, and checked, at compile time */
  CHECK(kiln_import_onnx(kfmt("%s/tests/data/onnx/sequences.onnx", test_root()), "s[0]:[3]") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "input 's' is a sequence: give its length with --input-shapes \"s:seq(N)\"");
  CHECK(kiln_import_onnx(kfmt("%s/tests/data/onnx/sequences.onnx", test_root()), "s:seq(1),s[0]:[3],s[1]:[3]") ==
        NULL);
  CHECK_CONTAINS(kiln_get_error(), "input shape given for 's[1]', but that input has no such element");
  CHECK(kiln_import_onnx(kfmt("%s/tests/data/onnx/sequences.onnx", test_root()), "s:seq(1),s[0]:[3],t:seq(2)") ==
        NULL);
  CHECK_CONTAINS(kiln_get_error(), "input 't' is a tensor");
  kiln_rmtree(dir);
  free(dir);
}

const TestCase sequences_tests[] = {
    {"sequences_boundary", test_sequences_boundary},
    {NULL, NULL},
};
