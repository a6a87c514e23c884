/*
 * vector_add.c - the smallest Kiln program: describe c[i] = a[i] + b[i] as
 * a tensor expression, print its lowered loop IR, build it into a native
 * module and run it.
 *
 * It uses the two public headers only, as a program outside the repository
 * would: every compiler step is a global function of the registry
 * (kiln/kiln.h lists them), called with kiln_func_call.
 */
#include <kiln/kiln.h>
#include <stdio.h>

/* Call the global function `name` with n arguments; on failure print why
 * and return -1. */
static int call(const char *name, int n, KilnValue *args, int *codes, KilnValue *ret) {
  KilnFunction *f;
  int ret_code;
  if (kiln_func_get_global(name, &f) || !f) {
    fprintf(stderr, "kiln: no function %s\n", name);
    return -1;
  }
  int rc = kiln_func_call(f, args, codes, n, ret, &ret_code);
  kiln_func_free(f);
  if (rc) fprintf(stderr, "kiln: %s\n", kiln_last_error());
  return rc;
}

#define OBJ(v) {.v_handle = (v).v_handle}
enum { O = KILN_OBJECT, I = KILN_INT, S = KILN_STR };

int main(void) {
  const int64_t n = 128;
  if (kiln_init()) return fprintf(stderr, "kiln: %s\n", kiln_last_error()), 1;
  KilnValue a, b, vars, i, ra, rb, sum, shape, c, s, lowered, text, mod;
  if (call("te.placeholder", 3, (KilnValue[]){{.v_str = "a"}, {.v_str = "float32"}, {.v_int64 = n}}, (int[]){S, S, I},
           &a) ||
      call("te.placeholder", 3, (KilnValue[]){{.v_str = "b"}, {.v_str = "float32"}, {.v_int64 = n}}, (int[]){S, S, I},
           &b) ||
      call("te.axis_vars", 2, (KilnValue[]){{.v_int64 = 1}, {.v_str = "i"}}, (int[]){I, S}, &vars) ||
      call("api.ArrayGetItem", 2, (KilnValue[]){OBJ(vars), {.v_int64 = 0}}, (int[]){O, I}, &i) ||
      call("te.read", 2, (KilnValue[]){OBJ(a), OBJ(i)}, (int[]){O, O}, &ra) ||
      call("te.read", 2, (KilnValue[]){OBJ(b), OBJ(i)}, (int[]){O, O}, &rb) ||
      call("ir.BinaryOp", 3, (KilnValue[]){{.v_str = "add"}, OBJ(ra), OBJ(rb)}, (int[]){S, O, O}, &sum) ||
      call("api.Array", 1, (KilnValue[]){{.v_int64 = n}}, (int[]){I}, &shape) ||
      call("te.compute", 5, (KilnValue[]){{.v_str = "c"}, {.v_handle = NULL}, OBJ(shape), OBJ(vars), OBJ(sum)},
           (int[]){S, KILN_NULL, O, O, O}, &c) ||
      call("schedule.create_schedule", 1, &c, (int[]){O}, &s) ||
      call("driver.lower", 6,
           (KilnValue[]){OBJ(s), {.v_str = "vector_add"}, {.v_int64 = 0}, OBJ(a), OBJ(b), OBJ(c)},
           (int[]){O, S, I, O, O, O}, &lowered) ||
      call("ir.AsText", 1, &lowered, (int[]){O}, &text))
    return 1;
  printf("%s", text.v_str);
  if (call("driver.build", 6, (KilnValue[]){OBJ(s), {.v_str = "vector_add"}, {.v_str = "cpu"}, OBJ(a), OBJ(b), OBJ(c)},
           (int[]){O, S, S, O, O, O}, &mod))
    return 1;
  KilnFunction *fn = NULL;
  if (kiln_module_get_function(mod.v_handle, "vector_add", &fn)) {
    fprintf(stderr, "kiln: %s\n", kiln_last_error());
    return 1;
  }
  DLDevice cpu = {kDLCPU, 0};
  DLDataType f32 = {kDLFloat, 32, 1};
  DLTensor *x, *y, *z;
  if (kiln_array_empty(1, &n, f32, cpu, &x) || kiln_array_empty(1, &n, f32, cpu, &y) ||
      kiln_array_empty(1, &n, f32, cpu, &z)) {
    fprintf(stderr, "kiln: %s\n", kiln_last_error());
    return 1;
  }
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
  kiln_module_free(mod.v_handle);
  kiln_array_free(x);
  kiln_array_free(y);
  kiln_array_free(z);
  return 0;
}
