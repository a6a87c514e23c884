/* fuzz_graph_json.c - libFuzzer target: graph JSON (TVM's graph executor
 * format) through the runtime's parser and validator and the memory
 * planner, as a module's embedded graph is read at load. */
#include <stdlib.h>
#include <string.h>

#include "kiln/runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* len 0 means NUL-terminated text (the API's contract): give it a
   * terminated copy */
  char *text = malloc(size + 1);
  if (!text) abort();
  memcpy(text, data, size);
  text[size] = 0;
  char *out = NULL;
  KilnMemoryPlan plan;
  if (kiln_graph_json_plan_memory(text, size, &out, &plan)) {
    if (!kiln_last_error()[0]) abort();
  } else {
    kiln_free(out);
  }
  free(text);
  return 0;
}
