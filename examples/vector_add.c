/*
 * vector_add.c - the smallest Kiln program: describe c[i] = a[i] + b[i] as
 * a tensor expression, print its lowered loop IR, build it into a native
 * module and run it.
 */
#include <stdio.h>

#include "codegen/codegen.h"

int main(void) {
  int64_t n = 128;
  Tensor *a = te_placeholder_c("a", 1, &n, DT_F32);
  Tensor *b = te_placeholder_c("b", 1, &n, DT_F32);
  Expr **i = te_axis_vars(1, NULL);
  Tensor *c = te_compute("c", 1, a->shape, i, ir_add(te_read1(a, i[0]), te_read1(b, i[0])), NULL);
  Schedule *s = te_create_schedule(1, &c);
  Tensor *args[3] = {a, b, c};
  LoweredFunc *f = kiln_lower(s, 3, args, "vector_add", NULL);
  if (!f) {
    fprintf(stderr, "kiln: %s\n", kiln_get_error());
    return 1;
  }
  printf("%s", kiln_lowered_str(f));
  KilnModule *mod = kiln_build(s, 3, args, "vector_add", NULL, NULL);
  KilnFunction *fn = NULL;
  if (!mod || kiln_module_get_function(mod, "vector_add", &fn)) {
    fprintf(stderr, "kiln: %s\n", kiln_last_error());
    return 1;
  }
  DLDevice cpu = {kDLCPU, 0};
  DLTensor *x, *y, *z;
  kiln_array_empty(1, &n, DT_F32, cpu, &x);
  kiln_array_empty(1, &n, DT_F32, cpu, &y);
  kiln_array_empty(1, &n, DT_F32, cpu, &z);
  for (int k = 0; k < n; k++) {
    ((float *)x->data)[k] = (float)k;
    ((float *)y->data)[k] = 2.0f * (float)k;
  }
  KilnValue av[3] = {{.v_handle = x}, {.v_handle = y}, {.v_handle = z}};
  int codes[3] = {KILN_DLTENSOR, KILN_DLTENSOR, KILN_DLTENSOR};
  KilnValue ret;
  int ret_code;
  if (kiln_func_call(fn, av, codes, 3, &ret, &ret_code)) {
    fprintf(stderr, "kiln: %s\n", kiln_last_error());
    return 1;
  }
  printf("c[0..4] = %g %g %g %g %g\n", ((float *)z->data)[0], ((float *)z->data)[1], ((float *)z->data)[2],
         ((float *)z->data)[3], ((float *)z->data)[4]);
  kiln_func_free(fn);
  kiln_module_free(mod);
  kiln_array_free(x);
  kiln_array_free(y);
  kiln_array_free(z);
  return 0;
}
