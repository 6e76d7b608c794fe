/* run.c — `penumbra run`: one scenario simulated (sim/), reported as text or JSON (io/report.h),
 * optionally traced, and with --what-if every overlap knob of the registry (overlap/strategy.h)
 * that applies simulated off and on. */
#include "cli/cli-private.h"
#include "io/report.h"
#include "io/scenario.h"
#include "io/trace.h"
#include "overlap/gating.h"
#include "overlap/strategy.h"
#include "sim/sim.h"

static double total_exposed(const PnResult *r)
{
  double e = 0.0;
  for (int c = 0; c < PN_CLASS_N; c++)
    e += r->exposed_comm_s[c];
  return e;
}

/* Each applicable overlap knob switched off and on, from the scenario as given. */
static int what_if(const char *path, char **sets, int n_sets, const PnScenario *base, const PnResult *base_r, bool json,
                   const char *output)
{
  PnPlan plan;
  g_autoptr(GError) error = NULL;
  if (!pn_overlap_resolve(base, &plan, NULL, &error))
    return pn__cli_fail(error);
  g_autoptr(GString) out = g_string_new(NULL);
  if (json)
    g_string_append(out, "[\n");
  else
    g_string_append_printf(out,
                           "what-if for %s (baseline %.4f s, exposed comm %.4f s)\n%-48s %-5s %12s %12s %12s %12s\n",
                           path, base_r->iteration_time_s, total_exposed(base_r), "knob", "now", "off (s)", "on (s)",
                           "on-off (s)", "exposed on-off");
  bool first = true;
  for (size_t k = 0; k < pn_overlap_n_what_if; k++) {
    const PnOverlapStrategy *knob = pn_overlap_what_if[k];
    if (!knob->applies(base))
      continue;
    double t[2], e[2];
    for (int v = 0; v < 2; v++) {
      g_autoptr(GPtrArray) all = g_ptr_array_new();
      for (int i = 0; i < n_sets; i++)
        g_ptr_array_add(all, sets[i]);
      const char *const *add = v ? knob->set_on : knob->set_off;
      for (int i = 0; i < 2 && add[i]; i++)
        g_ptr_array_add(all, (gpointer)add[i]);
      g_autoptr(PnScenario) sc = pn_scenario_load(path, (const char *const *)all->pdata, (int)all->len, NULL, &error);
      if (!sc)
        return pn__cli_fail(error);
      sc->training.iterations = base->training.iterations;
      g_autoptr(PnResult) r   = pn_sim_run(sc, NULL, &error);
      if (!r)
        return pn__cli_fail(error);
      t[v] = r->iteration_time_s;
      e[v] = total_exposed(r);
    }
    bool now = knob->is_on(&plan);
    if (json)
      g_string_append_printf(out,
                             "%s  {\"knob\": \"%s\", \"now\": %s, \"off_s\": %.9g, \"on_s\": %.9g, "
                             "\"exposed_off_s\": %.9g, \"exposed_on_s\": %.9g}",
                             first ? "" : ",\n", knob->name, now ? "true" : "false", t[0], t[1], e[0], e[1]);
    else
      g_string_append_printf(out, "%-48s %-5s %12.4f %12.4f %+12.4f %+12.4f\n", knob->name, now ? "on" : "off", t[0],
                             t[1], t[1] - t[0], e[1] - e[0]);
    first = false;
  }
  if (json)
    g_string_append(out, "\n]\n");
  return pn__cli_emit(output, out->str);
}

int pn__cli_run(int argc, char **argv)
{
  g_auto(GStrv) sets      = NULL;
  g_autofree char *format = NULL;
  g_autofree char *output = NULL;
  int iterations          = 0;
  gboolean whatif         = FALSE;
  g_autofree char *trace  = NULL;
  GOptionEntry entries[]  = {
       {"trace", 't', 0, G_OPTION_ARG_FILENAME, &trace, "Write the timeline as a Chrome/Perfetto trace to FILE", "FILE"},
       {"what-if", 0, 0, G_OPTION_ARG_NONE, &whatif, "Also simulate each applicable overlap knob off and on", NULL},
       {"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario value (repeatable)", "dotted.key=value"},
       {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "Output format: text (default) or json", "FORMAT"},
       {"iterations", 'n', 0, G_OPTION_ARG_INT, &iterations, "Simulate N iterations (overrides training.iterations)",
        "N"},
       {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the report to FILE (atomically) instead of stdout",
        "FILE"},
       {NULL, 0, 0, 0, NULL, NULL, NULL}};
  if (!pn__cli_parse(
          entries, "SCENARIO.json - simulate one training iteration",
          "Examples:\n"
          "  penumbra run scenarios/llama3-8b-h100-8gpu.json\n"
          "  penumbra run scenarios/llama3-8b-h100-8gpu.json --what-if\n"
          "  penumbra run scenarios/llama3-8b-h100-8gpu.json -s ddp.overlap_grad_reduce=false -f json -o report.json\n"
          "  penumbra run scenarios/qwen3-30b-a3b-h100-16gpu-ep-overlap-on.json -n 2 -t trace.json\n"
          "    (open trace.json in https://ui.perfetto.dev)\n",
          &argc, &argv))
    return 2;
  g_autoptr(GError) error = NULL;
  if (argc != 2) {
    fprintf(stderr, "penumbra run: expected exactly one SCENARIO.json (see penumbra run --help)\n");
    return 2;
  }
  bool json = false;
  if (format && strcmp(format, "json") == 0)
    json = true;
  else if (format && strcmp(format, "text") != 0) {
    fprintf(stderr, "penumbra run: --format: expected \"text\" or \"json\", got \"%s\"\n", format);
    return 2;
  }
  if (iterations < 0 || iterations > 100) {
    fprintf(stderr, "penumbra run: --iterations: expected 1..100, got %d\n", iterations);
    return 2;
  }
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  int n_sets                    = sets ? (int)g_strv_length(sets) : 0;
  g_autoptr(PnScenario) sc      = pn_scenario_load(argv[1], (const char *const *)sets, n_sets, warnings, &error);
  if (!sc)
    return pn__cli_fail(error);
  if (iterations > 0)
    sc->training.iterations = iterations;
  PnSimOptions so = {.keep_graph = trace != NULL};
  PnSimRun run;
  if (!pn_sim_run_full(sc, warnings, &so, &run, &error)) {
    if (!g_str_has_prefix(error->message, argv[1])) /* overlap errors already name the file */
      g_prefix_error(&error, "%s: ", argv[1]);
    return pn__cli_fail(error);
  }
  g_autoptr(PnResult) r = g_steal_pointer(&run.result);
  if (trace && !pn_trace_write(trace, run.graph, &run.exec, &error)) {
    pn_sim_run_clear(&run);
    return pn__cli_fail(error);
  }
  pn_sim_run_clear(&run);
  if (whatif)
    return what_if(argv[1], sets, n_sets, sc, r, json, output);
  g_autofree char *report = json ? pn_report_json(sc, r) : pn_report_text(sc, r);
  return pn__cli_emit(output, report);
}
