/*
 * compile_model.c - compile an ONNX model from a C program.  The compiler
 * is reached the way every binding reaches it: kiln_init registers its
 * entry points in the global function registry (kiln/kiln.h lists them),
 * and the program looks them up by name and calls them with
 * kiln_func_call, as TVM's PackedFuncs are called.
 *
 *   cc -std=c11 examples/compile_model.c -Iinclude -Lbuild -lkiln -lkiln_runtime -o compile_model
 *   LD_LIBRARY_PATH=build ./compile_model models/digits/digits.onnx "image:[1,1,8,8]" digits.so
 *
 * The .so it writes is what `kiln compile` writes; examples/embed_model.c
 * runs it.
 */
#include <kiln/kiln.h>
#include <stdio.h>

/* Call the global function `name`; 0, or -1 with kiln_last_error(). */
static int call(const char *name, int n, KilnValue *args, int *codes, KilnValue *ret, int *ret_code) {
  KilnFunction *f = NULL;
  if (kiln_func_get_global(name, &f)) return -1;
  if (!f) {
    kiln_set_last_error("no global function with this name");
    return -1;
  }
  int rc = kiln_func_call(f, args, codes, n, ret, ret_code);
  kiln_func_free(f);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MODEL.onnx SHAPES OUT.so\n", argv[0]);
    return 2;
  }
  /* stdout line by line even into a pipe, so that it interleaves with the
   * compiler's warnings on stderr as it does in a terminal */
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (kiln_init()) return fprintf(stderr, "kiln_init: %s\n", kiln_last_error()), 1;
  int nnames;
  const char **names;
  kiln_func_list_global_names(&nnames, &names);
  printf("%d global functions registered\n", nnames);

  KilnValue graph, mod, r;
  int code;
  /* graph.from_onnx(path, shapes) -> Graph (an object that owns memory) */
  if (call("graph.from_onnx", 2, (KilnValue[]){{.v_str = argv[1]}, {.v_str = argv[2]}},
           (int[]){KILN_STR, KILN_STR}, &graph, &code))
    return fprintf(stderr, "graph.from_onnx: %s\n", kiln_last_error()), 1;
  if (call("graph.num_inputs", 1, &graph, (int[]){KILN_OBJECT}, &r, &code)) return 1;
  printf("imported %s: %lld input(s)\n", argv[1], (long long)r.v_int64);

  /* graph.build(graph, opt_level, target) -> a loaded module */
  if (call("graph.build", 3, (KilnValue[]){graph, {.v_int64 = 3}, {.v_str = "cpu"}},
           (int[]){KILN_OBJECT, KILN_INT, KILN_STR}, &mod, &code))
    return fprintf(stderr, "graph.build: %s\n", kiln_last_error()), 1;
  int nk;
  const char **kernels;
  kiln_module_list_functions(mod.v_handle, &nk, &kernels);
  printf("built %d kernels, the first %s\n", nk, kernels[0]);

  /* runtime.module_export(module, path): the one-file module */
  if (call("runtime.module_export", 2, (KilnValue[]){mod, {.v_str = argv[3]}}, (int[]){KILN_MODULE, KILN_STR},
           NULL, NULL))
    return fprintf(stderr, "runtime.module_export: %s\n", kiln_last_error()), 1;
  printf("wrote %s\n", argv[3]);

  /* A mistake is a message naming the function and the argument. */
  if (call("graph.build", 3, (KilnValue[]){mod, {.v_int64 = 3}, {.v_str = "cpu"}},
           (int[]){KILN_MODULE, KILN_INT, KILN_STR}, &r, &code))
    printf("error, as expected: %s\n", kiln_last_error());

  call("graph.free", 1, &graph, (int[]){KILN_OBJECT}, NULL, NULL);
  kiln_module_free(mod.v_handle);
  return 0;
}
