/* fuzz_onnx.c - libFuzzer target: an ONNX file through the loader and the
 * importer (every op handler the model reaches), as kiln compile reads
 * it.  A failure must be an error with a message; ASan/UBSan catch the
 * rest. */
#include <stdlib.h>

#include "frontend/onnx/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln_clear_error();
  KArena *a = kiln_arena_new();
  kiln_arena_push(a);
  /* external data would name files: point it at a folder with none */
  OnnxModel *m = onnx_model_load_bytes(data, size, "/nonexistent-kiln-fuzz");
  if (m) {
    Graph *g = onnx_import(m, 0, NULL);
    if (g) graph_free(g);
    else if (!kiln_get_error()[0]) abort(); /* a failure without a message */
    onnx_model_free(m);
  } else if (!kiln_get_error()[0]) {
    abort();
  }
  kiln_arena_pop();
  kiln_arena_free(a);
  return 0;
}
