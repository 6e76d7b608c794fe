/* memory-vs-megatron.c — prints, as markdown, penumbra's memory estimate against Megatron-LM's
 * theoretical memory formula and against measured peaks, for the layouts of megatron-memory.c
 * (the README's table, from the current code).
 *
 * Build: cmake --build build --target memory-vs-megatron; run: build/memory-vs-megatron.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>

#include "megatron-memory.h"

int main(int argc, char **argv)
{
  if (argc > 1) {
    fprintf(stderr, "usage: %s\n(prints the memory table as markdown)\n", argv[0]);
    return EXIT_FAILURE;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) out  = g_string_new(NULL);
  if (!pn_memcheck_markdown(out, &error)) {
    fprintf(stderr, "memory-vs-megatron: %s\n", error->message);
    return EXIT_FAILURE;
  }
  fputs(out->str, stdout);
  return EXIT_SUCCESS;
}
