/* fuzz_npy.c - libFuzzer target: .npy and .npz files (kiln run --inputs,
 * kiln compile --bind), the first byte choosing which reader. */
#include <stdlib.h>
#include <unistd.h>

#include "cli/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  kiln_clear_error();
  if (data[0] & 1) {
    DLTensor *t = NULL;
    if (npy_load_bytes(data + 1, size - 1, "fuzz.npy", &t)) {
      if (!kiln_get_error()[0]) abort();
    } else {
      kiln_array_free(t);
    }
    return 0;
  }
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/kiln-fuzz-npz-%d.npz", (int)getpid());
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  fwrite(data + 1, 1, size - 1, f);
  fclose(f);
  int n = 0;
  NamedArray *arr = NULL;
  if (npz_load(path, &n, &arr)) {
    if (!kiln_get_error()[0]) abort();
  } else {
    npz_free(n, arr);
  }
  return 0;
}
