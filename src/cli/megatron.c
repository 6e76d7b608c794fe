/* megatron.c — `penumbra import megatron-args` and `penumbra export megatron-args`: Megatron-LM
 * launch lines into scenarios and back (io/megatron.h). */
#include "io/megatron.h"
#include "cli/cli-private.h"
#include "io/scenario.h"

static void print_lines(const char *cmd, const char *prefix, GPtrArray *lines)
{
  for (guint i = 0; i < lines->len; i++)
    fprintf(stderr, "%s: %s%s\n", cmd, prefix, (const char *)g_ptr_array_index(lines, i));
}

static bool format_is(const char *cmd, const char *what)
{
  if (what != NULL && strcmp(what, "megatron-args") == 0)
    return true;
  g_autofree char *q = pn_io_quote(what ? what : "");
  fprintf(stderr, "%s: expected the format megatron-args first, got %s (see %s --help)\n", cmd, q, cmd);
  return false;
}

/* Without a "--", everything after "megatron-args" is the launch line (penumbra's own options then
 * come before it): a "--" is put there so that option parsing stops. argv itself is kept. */
static char **with_separator(int *argc, char **argv)
{
  GPtrArray *out = g_ptr_array_new();
  bool has_dash  = false;
  for (int i = 1; i < *argc; i++)
    has_dash |= strcmp(argv[i], "--") == 0;
  for (int i = 0; i < *argc; i++) {
    g_ptr_array_add(out, argv[i]);
    if (!has_dash && strcmp(argv[i], "megatron-args") == 0) {
      g_ptr_array_add(out, "--");
      has_dash = true;
    }
  }
  *argc = (int)out->len;
  g_ptr_array_add(out, NULL);
  return (char **)g_ptr_array_free(out, FALSE);
}

int pn__cli_import(int argc, char **argv)
{
  g_autofree char **args  = with_separator(&argc, argv);
  argv                    = args;
  g_auto(GStrv) sets      = NULL;
  g_autofree char *output = NULL;
  GOptionEntry entries[]  = {{"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
                              "Write the scenario to FILE (atomically) instead of stdout", "FILE"},
                             {"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &sets,
                              "Override a scenario value (repeatable), after the line", "dotted.key=value"},
                             {NULL, 0, 0, 0, NULL, NULL, NULL}};
  if (!pn__cli_parse(entries, "megatron-args [-o SCENARIO.json] -- LAUNCH LINE - a scenario from a Megatron-LM command",
                     "Examples:\n"
                     "  penumbra import megatron-args -o my.json -- CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun \\\n"
                     "      --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --num-layers 32 --hidden-size 4096 \\\n"
                     "      --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 \\\n"
                     "      --micro-batch-size 1 --global-batch-size 128 --vocab-size 32000 --bf16 --swiglu\n"
                     "  penumbra import megatron-args --set hardware.num_gpus=64 -- --num-layers 80 ...\n"
                     "  penumbra run my.json\n"
                     "Arguments penumbra does not model are listed on stderr as ignored; an argument Megatron-LM\n"
                     "itself rejects is an error (checked against " PN_MEGATRON_LM_COMMIT ").\n",
                     &argc, &argv))
    return 2;
  const char *cmd = argv[0];
  if (argc < 2 || !format_is(cmd, argv[1]))
    return 2;
  int first = 2;
  if (first < argc && strcmp(argv[first], "--") == 0)
    first++;
  if (first >= argc) {
    fprintf(stderr, "%s: expected the launch line or the arguments of pretrain_gpt.py after --\n", cmd);
    return 2;
  }
  if (!pn__cli_check_output(cmd, "--output", output))
    return 2;
  g_autoptr(GPtrArray) notes    = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GError) error       = NULL;
  int n_sets                    = sets ? (int)g_strv_length(sets) : 0;
  g_autofree char *text =
      pn_megatron_import(argc - first, argv + first, (const char *const *)sets, n_sets, notes, warnings, &error);
  print_lines(cmd, "", notes);
  print_lines(cmd, "warning: ", warnings);
  if (text == NULL)
    return pn__cli_fail_at(cmd, NULL, error);
  return pn__cli_emit(cmd, "--output", output, text);
}

int pn__cli_export(int argc, char **argv)
{
  g_auto(GStrv) sets     = NULL;
  GOptionEntry entries[] = {
      {"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario value (repeatable)", "dotted.key=value"},
      {NULL, 0, 0, 0, NULL, NULL, NULL}};
  if (!pn__cli_parse(entries, "megatron-args SCENARIO.json - the Megatron-LM launch line of a scenario",
                     "Examples:\n"
                     "  penumbra export megatron-args scenarios/llama3-8b-h100-8gpu.json\n"
                     "  penumbra export megatron-args scenarios/llama3-70b-h100-64gpu.json -s "
                     "parallel.pipeline_model_parallel_size=8\n"
                     "The overlap switches are printed as penumbra's gating resolved them, so the line runs what\n"
                     "penumbra simulates.\n",
                     &argc, &argv))
    return 2;
  const char *cmd = argv[0];
  if (argc < 2 || !format_is(cmd, argv[1]))
    return 2;
  if (argc != 3) {
    fprintf(stderr, "%s: expected exactly one SCENARIO.json after megatron-args\n", cmd);
    return 2;
  }
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GError) error       = NULL;
  int n_sets                    = sets ? (int)g_strv_length(sets) : 0;
  g_autoptr(PnScenario) sc      = pn_scenario_load(argv[2], (const char *const *)sets, n_sets, warnings, &error);
  g_autofree char *line         = sc ? pn_megatron_export(sc, warnings, &error) : NULL;
  print_lines(cmd, "warning: ", warnings);
  if (line == NULL)
    return pn__cli_fail(error);
  return pn__cli_emit(cmd, NULL, NULL, line);
}
