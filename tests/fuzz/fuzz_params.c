/* fuzz_params.c - libFuzzer target: params blobs (TVM's save_param_dict
 * format), as a module's embedded weights and kiln.runtime.load_param_dict
 * read them; what loads is saved and loaded again. */
#include <stdlib.h>

#include "kiln/runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int n = 0;
  char **names = NULL;
  DLTensor **arrays = NULL;
  if (kiln_params_load(data, size, &n, &names, &arrays)) {
    if (!kiln_last_error()[0]) abort();
    return 0;
  }
  void *bytes = NULL;
  size_t len = 0;
  if (kiln_params_save(n, (const char *const *)names, arrays, &bytes, &len) == 0) {
    int n2 = 0;
    char **names2 = NULL;
    DLTensor **arrays2 = NULL;
    if (kiln_params_load(bytes, len, &n2, &names2, &arrays2) || n2 != n) abort();
    kiln_params_free(n2, names2, arrays2);
    kiln_free(bytes);
  }
  kiln_params_free(n, names, arrays);
  return 0;
}
