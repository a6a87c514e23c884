/*
 * embed_model.c - run a model compiled by `kiln compile` from a C program,
 * through the graph executor of libkiln_runtime.  The program needs the
 * runtime only, never the compiler: the model's kernels, graph JSON and
 * weights are all in its one .so.
 *
 *   kiln compile models/digits/digits.onnx -o digits.so --input-shapes "image:[1,1,8,8]"
 *   cc -std=c11 examples/embed_model.c -Iinclude -Lbuild -lkiln_runtime -o embed_model
 *   LD_LIBRARY_PATH=build ./embed_model digits.so models/digits/heldout_0.npy
 *
 * It prints the model's inputs and outputs, loads the input from a float32
 * .npy file, runs the model, and prints output 0 and its largest entry.
 */
#include <kiln/runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_info(const char *what, int i, const KilnTensorInfo *t) {
  printf("%s %d: %s (", what, i, t->name);
  for (int d = 0; d < t->ndim; d++) printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
  printf(") %s%d\n", t->dtype.code == kDLFloat ? "float" : t->dtype.code == kDLInt ? "int" : "uint", t->dtype.bits);
}

/* Read the data of a little-endian float32 .npy file (format 1.x) into
 * buf, which holds exactly nbytes. */
static int read_npy(const char *path, void *buf, size_t nbytes) {
  FILE *f = fopen(path, "rb");
  unsigned char head[10];
  char dict[4096];
  if (!f) return fprintf(stderr, "cannot open %s\n", path), -1;
  if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) || head[6] != 1) {
    fclose(f);
    return fprintf(stderr, "%s: not a .npy file (version 1)\n", path), -1;
  }
  size_t hlen = head[8] | (size_t)head[9] << 8;
  if (hlen >= sizeof dict || fread(dict, 1, hlen, f) != hlen) {
    fclose(f);
    return fprintf(stderr, "%s: bad header\n", path), -1;
  }
  dict[hlen] = 0;
  size_t got = strstr(dict, "'<f4'") ? fread(buf, 1, nbytes, f) : 0;
  int extra = fgetc(f) != EOF;
  fclose(f);
  if (got != nbytes || extra)
    return fprintf(stderr, "%s: expected %zu bytes of float32 data\n", path, nbytes), -1;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL.so INPUT.npy\n", argv[0]);
    return 2;
  }
  KilnModule *mod = NULL;
  KilnGraphExecutor *ex = NULL;
  DLTensor *x = NULL, *y = NULL;
  int rc = 1;

  /* Load the module and make an executor for its embedded graph; the
   * executor also loads the embedded weights. */
  if (kiln_module_load(argv[1], &mod) || kiln_graph_executor_create(mod, &ex)) goto fail;

  KilnTensorInfo in, out;
  for (int i = 0; i < kiln_graph_executor_num_inputs(ex); i++) {
    if (kiln_graph_executor_input_info(ex, i, &in)) goto fail;
    print_info("input", i, &in);
  }
  for (int i = 0; i < kiln_graph_executor_num_outputs(ex); i++) {
    if (kiln_graph_executor_output_info(ex, i, &out)) goto fail;
    print_info("output", i, &out);
  }

  /* Input 0 from the file, by name; the executor copies it in. */
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_graph_executor_input_info(ex, 0, &in) ||
      kiln_array_empty(in.ndim, in.shape, in.dtype, cpu, &x))
    goto fail;
  if (read_npy(argv[2], x->data, kiln_array_nbytes(x))) goto done;
  if (kiln_graph_executor_set_input_by_name(ex, in.name, x)) goto fail;

  if (kiln_graph_executor_run(ex)) goto fail;

  /* Output 0 as a new array (a copy the caller frees). */
  if (kiln_graph_executor_get_output(ex, 0, &y)) goto fail;
  const float *v = y->data;
  int64_t n = (int64_t)(kiln_array_nbytes(y) / sizeof(float)), best = 0;
  printf("output 0:");
  for (int64_t i = 0; i < n; i++) {
    printf(" %.2f", v[i]);
    if (v[i] > v[best]) best = i;
  }
  printf("\nlargest: index %lld\n", (long long)best);

  /* Mistakes are messages, not crashes. */
  if (kiln_graph_executor_set_input_by_name(ex, "no_such_input", x))
    printf("error, as expected: %s\n", kiln_last_error());
  rc = 0;
  goto done;

fail:
  fprintf(stderr, "embed_model: %s\n", kiln_last_error());
done:
  kiln_array_free(x);
  kiln_array_free(y);
  kiln_graph_executor_free(ex);
  kiln_module_free(mod);
  return rc;
}
