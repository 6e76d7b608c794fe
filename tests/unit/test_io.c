/* test_io.c — io/: scenario, model and hardware-profile loading, --set, error messages, hostile
 * input, reports, traces and outputs (io/out.h).
 *
 * Fixtures live in tests/data/io/: models/tiny.json, hwprofiles/test-gpu.json and scenarios/ are
 * valid (names resolve through <scenario dir>/../models and ../hwprofiles); bad/ holds broken
 * files. The source tree is found through PN_SOURCE_DIR (set by CTest), else the current
 * directory or its parent.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <cjson/cJSON.h>
#include <float.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calib/calib.h"
#include "hw/cost.h"
#include "io/calibio.h"
#include "io/file.h"
#include "io/hwprofile.h"
#include "io/jsonw.h"
#include "io/megatron.h"
#include "io/model.h"
#include "io/out.h"
#include "io/report.h"
#include "io/scenario.h"
#include "io/trace.h"
#include "overlap/strategy.h"

/* ---- helpers ---- */

static char *source_dir(void)
{
  const char *env = g_getenv("PN_SOURCE_DIR");
  if (env != NULL && *env != '\0')
    return g_strdup(env);
  const char *cands[] = {".", "..", "../.."};
  for (gsize i = 0; i < G_N_ELEMENTS(cands); i++) {
    g_autofree char *probe = g_build_filename(cands[i], "tests", "data", "io", "models", "tiny.json", NULL);
    if (g_file_test(probe, G_FILE_TEST_EXISTS))
      return g_canonicalize_filename(cands[i], NULL);
  }
  ck_abort_msg("cannot find the source tree: set PN_SOURCE_DIR");
  return NULL;
}

/* tests/data/io/<rel> */
static char *data(const char *rel)
{
  g_autofree char *src = source_dir();
  return g_build_filename(src, "tests", "data", "io", rel, NULL);
}

static void setup(void) { g_unsetenv("PENUMBRA_DATA_DIR"); }

/* A scenario whose names resolve in tests/data/io; NULL sections take the defaults below. */
#define DEF_MODEL "\"tiny\""
#define DEF_HW "{\"profile\": \"test-gpu\", \"num_gpus\": 8}"
#define DEF_TRAINING "{\"seq_length\": 4096, \"global_batch_size\": 64}"

static char *scenario_json(const char *model, const char *hw, const char *training, const char *extra)
{
  return g_strdup_printf("{\"schema_version\": 1,\n \"model\": %s,\n \"hardware\": %s,\n \"training\": %s%s%s\n}\n",
                         model ? model : DEF_MODEL, hw ? hw : DEF_HW, training ? training : DEF_TRAINING,
                         extra ? ",\n " : "", extra ? extra : "");
}

/* Display name placed in tests/data/io/scenarios so model / profile names resolve. */
static char *display(void) { return data("scenarios/t.json"); }

static PnScenario *load(const char *json, const char *const *sets, int n_sets, GPtrArray *warnings, GError **error)
{
  g_autofree char *disp = display();
  return pn_scenario_load_string(json, disp, sets, n_sets, warnings, error);
}

static void assert_one_line(const GError *e)
{
  ck_assert_ptr_nonnull(e);
  ck_assert_uint_eq(e->domain, PN_IO_ERROR);
  ck_assert_msg(strchr(e->message, '\n') == NULL, "multi-line message: %s", e->message);
  ck_assert_msg(strlen(e->message) > 0, "empty message");
}

/* Loads `json` and expects an error of `code` whose message is exactly "<file>: <rest>", where
 * <file> is the display name ("<file><rest>" when rest starts with ':', as parse errors do:
 * "<file>:<line>:<col>: ..."; just `rest` when it starts with "--set: "). Only a prefix of
 * `rest` is compared when it ends with "*". */
static void expect_error(const char *json, const char *const *sets, int n_sets, PnIoError code, const char *rest)
{
  g_autoptr(GError) e      = NULL;
  g_autoptr(PnScenario) sc = load(json, sets, n_sets, NULL, &e);
  ck_assert_msg(sc == NULL, "expected an error \"%s\" for: %s", rest, json);
  assert_one_line(e);
  g_autofree char *disp = display();
  g_autofree char *want = g_str_has_prefix(rest, "--set: ") ? g_strdup(rest)
                          : rest[0] == ':'                  ? g_strdup_printf("%s%s", disp, rest)
                                                            : g_strdup_printf("%s: %s", disp, rest);
  gsize n               = strlen(want);
  if (n > 0 && want[n - 1] == '*') {
    want[n - 1] = '\0';
    ck_assert_msg(g_str_has_prefix(e->message, want), "got:  %s\nwant: %s...", e->message, want);
  } else {
    ck_assert_msg(strcmp(e->message, want) == 0, "got:  %s\nwant: %s", e->message, want);
  }
  ck_assert_msg(e->code == (int)code, "code %d, expected %d (%s)", e->code, code, e->message);
}

static void expect_extra_error(const char *extra, PnIoError code, const char *rest)
{
  g_autofree char *json = scenario_json(NULL, NULL, NULL, extra);
  expect_error(json, NULL, 0, code, rest);
}

static char *tmp_dir(void)
{
  g_autoptr(GError) e = NULL;
  char *dir           = g_dir_make_tmp("pn-test-io-XXXXXX", &e);
  ck_assert_msg(dir != NULL, "%s", e ? e->message : "");
  return dir;
}

static void rm_rf(const char *dir)
{
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *n;
  while (d != NULL && (n = g_dir_read_name(d)) != NULL) {
    g_autofree char *p = g_build_filename(dir, n, NULL);
    if (g_unlink(p) != 0) /* a directory (a link to one goes with g_unlink) */
      rm_rf(p);
  }
  g_rmdir(dir);
}

static void write_bytes(const char *path, const void *buf, gsize len)
{
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
  fclose(f);
}

/* ---- valid scenarios ---- */

/* An inline model and a profile path: every default of the schema is filled and the derived
 * sizes follow. */
START_TEST(test_inline_defaults)
{
  g_autofree char *json =
      scenario_json("{\"num_layers\": 4, \"hidden_size\": 512, \"ffn_hidden_size\": 2048, \"num_attention_heads\": 8, "
                    "\"vocab_size\": 1000}",
                    "{\"profile\": \"../hwprofiles/test-gpu.json\", \"num_gpus\": 16}",
                    "{\"seq_length\": 1024, \"global_batch_size\": 32}", NULL);
  g_autoptr(GError) e      = NULL;
  g_autoptr(GPtrArray) w   = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(PnScenario) sc = load(json, NULL, 0, w, &e);
  ck_assert_msg(sc != NULL, "%s", e ? e->message : "");
  ck_assert_uint_eq(w->len, 0);
  const PnModelConfig *m = &sc->model;
  ck_assert_str_eq(m->name, "inline");
  ck_assert_int_eq(m->num_query_groups, 8);
  ck_assert_int_eq(m->kv_channels, 64);
  ck_assert(!m->gated_linear_unit);
  ck_assert_int_eq(m->activation, PN_ACT_GELU);
  ck_assert_int_eq(m->normalization, PN_NORM_LAYERNORM);
  ck_assert_int_eq(m->make_vocab_size_divisible_by, 128);
  ck_assert(!m->untie_embeddings_and_output_weights);
  ck_assert(m->add_bias_linear);
  ck_assert(!m->add_qkv_bias);
  ck_assert_str_eq(m->position_embedding_type, "learned_absolute");
  ck_assert_int_eq(m->num_moe_experts, 0);
  ck_assert_int_eq(sc->training.micro_batch_size, 1);
  ck_assert_int_eq(sc->training.precision, PN_PREC_BF16);
  ck_assert_int_eq(sc->training.iterations, 1);
  const PnParallelConfig *p = &sc->parallel;
  ck_assert_int_eq(p->tensor_model_parallel_size, 1);
  ck_assert_int_eq(p->pipeline_model_parallel_size, 1);
  ck_assert_int_eq(p->virtual_pipeline_model_parallel_size, 1);
  ck_assert_int_eq(p->context_parallel_size, 1);
  ck_assert_int_eq(p->expert_model_parallel_size, 1);
  ck_assert(!p->sequence_parallel);
  ck_assert_int_eq(p->microbatch_group_size_per_vp_stage, 0);
  ck_assert_int_eq(p->data_parallel_size, 16);
  ck_assert_int_eq(p->num_microbatches, 2);
  ck_assert(sc->ddp.use_distributed_optimizer);
  ck_assert_int_eq(sc->ddp.overlap_grad_reduce, PN_TRI_UNSET);
  ck_assert_int_eq(sc->ddp.overlap_param_gather, PN_TRI_UNSET);
  ck_assert_int_eq(sc->ddp.align_param_gather, PN_TRI_UNSET);
  ck_assert_int_eq(sc->ddp.bucket_size, 0);
  ck_assert_int_eq(sc->ddp.num_distributed_optimizer_instances, 1);
  ck_assert_int_eq(sc->comm_overlap.tp_comm_overlap, PN_TRI_UNSET);
  ck_assert_str_eq(sc->comm_overlap.tp_comm_overlap_cfg, "");
  ck_assert_int_eq(sc->comm_overlap.overlap_p2p_comm, PN_TRI_UNSET);
  ck_assert_int_eq(sc->comm_overlap.batch_p2p_comm, PN_TRI_UNSET);
  ck_assert_int_eq(sc->comm_overlap.cp_comm_type, PN_CP_P2P);
  ck_assert_int_eq(sc->recompute.recompute_granularity, PN_RECOMPUTE_NONE);
  ck_assert_int_eq(sc->recompute.recompute_method, PN_RECOMPUTE_METHOD_UNIFORM);
  ck_assert_int_eq(sc->recompute.recompute_num_layers, 0);
  ck_assert_int_eq(sc->env.cuda_device_max_connections, 8);
  ck_assert_int_eq(sc->env.nccl_min_ctas, 0);
  ck_assert(!sc->env.nccl_nvls_enable);
  ck_assert_str_eq(sc->hardware.profile, "test-gpu");
  ck_assert_ptr_nonnull(sc->hw);
  ck_assert_int_eq(sc->hw->sm_count, 132);
  g_autofree char *disp = display();
  ck_assert_str_eq(sc->path, disp);
}
END_TEST

/* Names resolve through <scenario dir>/../models and ../hwprofiles; explicit values are kept. */
START_TEST(test_by_name)
{
  g_autofree char *path    = data("scenarios/tiny-8gpu.json");
  g_autoptr(GError) e      = NULL;
  g_autoptr(GPtrArray) w   = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(PnScenario) sc = pn_scenario_load(path, NULL, 0, w, &e);
  ck_assert_msg(sc != NULL, "%s", e ? e->message : "");
  ck_assert_str_eq(sc->model.name, "tiny");
  ck_assert_int_eq(sc->model.num_query_groups, 4);
  ck_assert_int_eq(sc->model.kv_channels, 64);
  ck_assert(sc->model.gated_linear_unit);
  ck_assert_int_eq(sc->model.activation, PN_ACT_SWIGLU); /* default for a gated model */
  ck_assert_int_eq(sc->model.normalization, PN_NORM_RMSNORM);
  ck_assert_str_eq(sc->model.position_embedding_type, "rope");
  ck_assert_str_eq(sc->hardware.profile, "test-gpu");
  ck_assert_int_eq(sc->parallel.data_parallel_size, 2);
  ck_assert_int_eq(sc->parallel.num_microbatches, 32);
  ck_assert(sc->parallel.sequence_parallel);
  ck_assert_int_eq(sc->ddp.overlap_grad_reduce, PN_TRI_TRUE);
  ck_assert_int_eq(sc->recompute.recompute_granularity, PN_RECOMPUTE_SELECTIVE);
  ck_assert_int_eq(sc->env.cuda_device_max_connections, 1);
  ck_assert(sc->env.nccl_nvls_enable);
  ck_assert_uint_eq(w->len, 0);

  /* a model name that does not exist lists the available ones */
  g_autofree char *json = scenario_json("\"no-such-model\"", NULL, NULL, NULL);
  expect_error(json, NULL, 0, PN_IO_ERROR_SCHEMA, "/model: unknown model \"no-such-model\" (available: *");
  g_autoptr(GError) e2      = NULL;
  g_autoptr(PnScenario) sc2 = load(json, NULL, 0, NULL, &e2);
  ck_assert_ptr_null(sc2);
  ck_assert_msg(strstr(e2->message, "tiny") != NULL, "%s", e2->message);
  g_autofree char *json2 = scenario_json(NULL, "{\"profile\": \"no-such-gpu\", \"num_gpus\": 8}", NULL, NULL);
  expect_error(json2, NULL, 0, PN_IO_ERROR_SCHEMA, "/hardware/profile: unknown hardware profile \"no-such-gpu\"*");
  g_autofree char *json3 = scenario_json("\"sub/missing.json\"", NULL, NULL, NULL);
  expect_error(json3, NULL, 0, PN_IO_ERROR_FILE, "/model: model file \"sub/missing.json\" not found*");
  g_autofree char *json4 = scenario_json("\"bad name!\"", NULL, NULL, NULL);
  expect_error(json4, NULL, 0, PN_IO_ERROR_SCHEMA, "/model: expected a model name*");

  /* $PENUMBRA_DATA_DIR is searched first */
  g_autofree char *dd = data(".");
  g_setenv("PENUMBRA_DATA_DIR", dd, TRUE);
  g_autofree char *j5       = scenario_json(NULL, NULL, NULL, NULL);
  g_autoptr(GError) e5      = NULL;
  g_autoptr(PnScenario) sc5 = pn_scenario_load_string(j5, "/nonexistent-dir/x.json", NULL, 0, NULL, &e5);
  ck_assert_msg(sc5 != NULL, "%s", e5 ? e5->message : "");
  ck_assert_str_eq(sc5->model.name, "tiny");
}
END_TEST

/* "base" plus overrides: derived defaults follow the overrides, relative paths resolve. */
START_TEST(test_model_base)
{
  g_autofree char *path    = data("scenarios/tiny-by-path.json");
  g_autoptr(GError) e      = NULL;
  g_autoptr(PnScenario) sc = pn_scenario_load(path, NULL, 0, NULL, &e);
  ck_assert_msg(sc != NULL, "%s", e ? e->message : "");
  ck_assert_str_eq(sc->model.name, "tiny-12");
  ck_assert_int_eq(sc->model.num_layers, 12);
  ck_assert_int_eq(sc->model.hidden_size, 1024);
  ck_assert_int_eq(sc->model.num_query_groups, 4);
  ck_assert_int_eq(sc->training.precision, PN_PREC_FP8);
  ck_assert_int_eq(sc->parallel.data_parallel_size, 16);
  ck_assert_int_eq(sc->parallel.num_microbatches, 2);

  g_autofree char *j        = scenario_json("{\"base\": \"tiny\", \"num_attention_heads\": 32}", NULL, NULL, NULL);
  g_autoptr(GError) e2      = NULL;
  g_autoptr(PnScenario) sc2 = load(j, NULL, 0, NULL, &e2);
  ck_assert_msg(sc2 != NULL, "%s", e2 ? e2->message : "");
  ck_assert_str_eq(sc2->model.name, "tiny");
  ck_assert_int_eq(sc2->model.kv_channels, 32); /* kv_channels follows the new head count */

  g_autofree char *j3 = scenario_json("{\"base\": \"tiny\", \"num_attention_heads\": 2}", NULL, NULL, NULL);
  expect_error(j3, NULL, 0, PN_IO_ERROR_INVALID, "/model/num_query_groups: 4 does not divide num_attention_heads 2");
  g_autofree char *j3b = scenario_json("{\"base\": \"tiny\", \"num_attention_heads\": 12}", NULL, NULL, NULL);
  expect_error(j3b, NULL, 0, PN_IO_ERROR_INVALID,
               "/model/num_attention_heads: 12 does not divide hidden_size 1024 (set kv_channels, the head dimension)");
  g_autofree char *j4 = scenario_json("{\"base\": 7}", NULL, NULL, NULL);
  expect_error(j4, NULL, 0, PN_IO_ERROR_SCHEMA, "/model/base: expected a string, got 7");
}
END_TEST

/* pn_model_load: a file, defaults filled; "base" is refused in a file; errors name the file. */
START_TEST(test_model_load)
{
  g_autofree char *path = data("models/tiny.json");
  PnModelConfig m;
  g_autoptr(GError) e = NULL;
  ck_assert_msg(pn_model_load(path, &m, &e), "%s", e ? e->message : "");
  ck_assert_str_eq(m.name, "tiny");
  ck_assert_int_eq(m.kv_channels, 64);

  g_autofree char *dir = tmp_dir();
  g_autofree char *p2  = g_build_filename(dir, "m.json", NULL);
  const char *txt      = "{\"base\": \"tiny\", \"num_layers\": 2}";
  write_bytes(p2, txt, strlen(txt));
  g_autoptr(GError) e2 = NULL;
  ck_assert(!pn_model_load(p2, &m, &e2));
  ck_assert_msg(g_str_has_prefix(e2->message, p2) && strstr(e2->message, ": /base: ") != NULL, "%s", e2->message);
  const char *txt3 = "{\"num_layers\": 2, \"hidden_size\": 64, \"ffn_hidden_size\": 256, \"num_attention_heads\": 4}";
  write_bytes(p2, txt3, strlen(txt3));
  g_autoptr(GError) e3 = NULL;
  ck_assert(!pn_model_load(p2, &m, &e3));
  g_autofree char *want3 = g_strdup_printf("%s: /vocab_size: required key missing", p2);
  ck_assert_str_eq(e3->message, want3);
  rm_rf(dir);
}
END_TEST

/* Every model file in models/ and profile in hwprofiles/ of the repository loads (when present). */
START_TEST(test_repo_files)
{
  g_autofree char *src = source_dir();
  const char *dirs[]   = {"models", "hwprofiles"};
  for (gsize i = 0; i < G_N_ELEMENTS(dirs); i++) {
    g_autofree char *dir = g_build_filename(src, dirs[i], NULL);
    g_autoptr(GDir) d    = g_dir_open(dir, 0, NULL);
    const char *n;
    while (d != NULL && (n = g_dir_read_name(d)) != NULL) {
      if (!g_str_has_suffix(n, ".json"))
        continue;
      g_autofree char *p  = g_build_filename(dir, n, NULL);
      g_autoptr(GError) e = NULL;
      if (i == 0) {
        PnModelConfig m;
        ck_assert_msg(pn_model_load(p, &m, &e), "%s", e ? e->message : "");
      } else {
        g_autoptr(PnHwProfile) hw = pn_hw_profile_load(p, &e);
        ck_assert_msg(hw != NULL, "%s", e ? e->message : "");
      }
    }
  }
}
END_TEST

/* ---- schema errors ---- */

/* Wrong types, ranges, non-finite and absurd numbers, missing and duplicate keys. */
START_TEST(test_schema_errors)
{
  g_autofree char *j1 = scenario_json(NULL, NULL, "{\"seq_length\": \"4096\", \"global_batch_size\": 64}", NULL);
  expect_error(j1, NULL, 0, PN_IO_ERROR_SCHEMA, "/training/seq_length: expected a positive integer, got \"4096\"");
  g_autofree char *j2 = scenario_json(NULL, NULL, "{\"seq_length\": 4096.5, \"global_batch_size\": 64}", NULL);
  expect_error(j2, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/training/seq_length: expected a positive integer, got 4096.5 (not an integer)");
  g_autofree char *j3 = scenario_json(NULL, NULL, "{\"seq_length\": 0, \"global_batch_size\": 64}", NULL);
  expect_error(j3, NULL, 0, PN_IO_ERROR_SCHEMA, "/training/seq_length: expected a positive integer, got 0");
  g_autofree char *j4 = scenario_json(NULL, NULL, "{\"seq_length\": -4096, \"global_batch_size\": 64}", NULL);
  expect_error(j4, NULL, 0, PN_IO_ERROR_SCHEMA, "/training/seq_length: expected a positive integer, got -4096");
  g_autofree char *j5 = scenario_json(NULL, NULL, "{\"seq_length\": 4096}", NULL);
  expect_error(j5, NULL, 0, PN_IO_ERROR_SCHEMA, "/training/global_batch_size: required key missing");
  g_autofree char *j6 =
      scenario_json(NULL, NULL, "{\"seq_length\": 4096, \"global_batch_size\": 64, \"precision\": \"fp16\"}", NULL);
  expect_error(j6, NULL, 0, PN_IO_ERROR_SCHEMA, "/training/precision: expected one of \"bf16\", \"fp8\", got \"fp16\"");
  /* training.fp8_recipe: a name from Megatron-Core's list; mxfp8 (Blackwell) and blockwise refused
   * for fp8 runs, accepted (inert) for bf16 ones as Megatron reads it only with --fp8-format */
  g_autofree char *jr1 =
      scenario_json(NULL, NULL, "{\"seq_length\": 4096, \"global_batch_size\": 64, \"fp8_recipe\": \"current\"}", NULL);
  expect_error(jr1, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/training/fp8_recipe: expected one of \"delayed\", \"tensorwise\", \"blockwise\", \"mxfp8\", got "
               "\"current\"");
  g_autofree char *jr2 = scenario_json(
      NULL, NULL,
      "{\"seq_length\": 4096, \"global_batch_size\": 64, \"precision\": \"fp8\", \"fp8_recipe\": \"mxfp8\"}", NULL);
  expect_error(jr2, NULL, 0, PN_IO_ERROR_INVALID, "/training/fp8_recipe: \"mxfp8\" needs a Blackwell GPU*");
  g_autofree char *jr3 = scenario_json(
      NULL, NULL,
      "{\"seq_length\": 4096, \"global_batch_size\": 64, \"precision\": \"fp8\", \"fp8_recipe\": \"blockwise\"}", NULL);
  expect_error(jr3, NULL, 0, PN_IO_ERROR_INVALID,
               "/training/fp8_recipe: \"blockwise\" scaling is not simulated in this version*");
  g_autofree char *j7 =
      scenario_json(NULL, NULL, "{\"seq_length\": 4096, \"global_batch_size\": 64, \"iterations\": 500}", NULL);
  expect_error(j7, NULL, 0, PN_IO_ERROR_SCHEMA, "/training/iterations: expected an integer from 1 to 100, got 500");
  g_autofree char *j8 = scenario_json(NULL, NULL, "[4096, 64]", NULL);
  expect_error(j8, NULL, 0, PN_IO_ERROR_SCHEMA, "/training: expected an object, got an array");
  g_autofree char *j9 = scenario_json(NULL, "{\"profile\": \"test-gpu\"}", NULL, NULL);
  expect_error(j9, NULL, 0, PN_IO_ERROR_SCHEMA, "/hardware/num_gpus: required key missing");
  g_autofree char *j10 = scenario_json(NULL, "{\"num_gpus\": 8}", NULL, NULL);
  expect_error(j10, NULL, 0, PN_IO_ERROR_SCHEMA, "/hardware/profile: required key missing");
  g_autofree char *j11 = scenario_json(NULL, "{\"profile\": 5, \"num_gpus\": 8}", NULL, NULL);
  expect_error(j11, NULL, 0, PN_IO_ERROR_SCHEMA, "/hardware/profile: expected a string, got 5");

  expect_extra_error("\"parallel\": {\"sequence_parallel\": 1}", PN_IO_ERROR_SCHEMA,
                     "/parallel/sequence_parallel: expected true or false, got 1");
  expect_extra_error("\"ddp\": {\"overlap_grad_reduce\": \"yes\"}", PN_IO_ERROR_SCHEMA,
                     "/ddp/overlap_grad_reduce: expected true, false or null, got \"yes\"");
  expect_extra_error("\"env\": {\"CUDA_DEVICE_MAX_CONNECTIONS\": 33}", PN_IO_ERROR_SCHEMA,
                     "/env/CUDA_DEVICE_MAX_CONNECTIONS: expected an integer from 1 to 32, got 33");
  expect_extra_error("\"env\": {\"NCCL_NVLS_ENABLE\": 2}", PN_IO_ERROR_SCHEMA,
                     "/env/NCCL_NVLS_ENABLE: expected 0, 1, true or false, got 2");
  expect_extra_error(
      "\"recompute\": {\"recompute_granularity\": \"partial\"}", PN_IO_ERROR_SCHEMA,
      "/recompute/recompute_granularity: expected one of \"selective\", \"full\", null, got \"partial\"");
  expect_extra_error("\"parallel\": {\"virtual_pipeline_model_parallel_size\": 0}", PN_IO_ERROR_SCHEMA,
                     "/parallel/virtual_pipeline_model_parallel_size: expected a positive integer or null, got 0");
  expect_extra_error("\"parallel\": {\"tensor_model_parallel_size\": 2, \"tensor_model_parallel_size\": 4}",
                     PN_IO_ERROR_SCHEMA, "/parallel/tensor_model_parallel_size: duplicate key");
  expect_extra_error("\"comm_overlap\": {\"tp_comm_overlap_cfg\": 3}", PN_IO_ERROR_SCHEMA,
                     "/comm_overlap/tp_comm_overlap_cfg: expected a string or null, got 3");

  /* model fields, inline */
  expect_error("{\"schema_version\": 1, \"model\": {\"num_layers\": 2}, \"hardware\": " DEF_HW
               ", \"training\": " DEF_TRAINING "}",
               NULL, 0, PN_IO_ERROR_SCHEMA, "/model/hidden_size: required key missing");
  g_autofree char *jm = scenario_json("{\"base\": \"tiny\", \"hidden_dropout\": 1.5}", NULL, NULL, NULL);
  expect_error(jm, NULL, 0, PN_IO_ERROR_SCHEMA, "/model/hidden_dropout: expected a number in [0, 1), got 1.5");
  g_autofree char *jm2 = scenario_json("{\"base\": \"tiny\", \"activation\": \"tanh\"}", NULL, NULL, NULL);
  expect_error(jm2, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/model/activation: expected one of \"gelu\", \"swiglu\", \"squared_relu\", \"relu\", got \"tanh\"");
  g_autofree char *jm3 =
      scenario_json("{\"base\": \"tiny\", \"position_embedding_type\": \"alibi\"}", NULL, NULL, NULL);
  expect_error(jm3, NULL, 0, PN_IO_ERROR_SCHEMA, "/model/position_embedding_type: expected one of*");
  /* activation_func_clamp_value: Megatron-Core's None or a finite clamp > 0 */
  g_autofree char *jm5 = scenario_json("{\"base\": \"tiny\", \"activation_func_clamp_value\": 0}", NULL, NULL, NULL);
  expect_error(jm5, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/model/activation_func_clamp_value: expected a number in (0, inf), got 0");
  g_autofree char *jm6 =
      scenario_json("{\"base\": \"tiny\", \"activation_func_clamp_value\": \"7\"}", NULL, NULL, NULL);
  expect_error(jm6, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/model/activation_func_clamp_value: expected a finite number, got \"7\"");
  g_autofree char *jm4 = scenario_json("42", NULL, NULL, NULL);
  expect_error(jm4, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/model: expected a model name, a path ending in .json, or an inline model object, got 42");

  /* top level */
  expect_error("[1, 2]", NULL, 0, PN_IO_ERROR_SCHEMA, "/: expected a scenario object at the top level, got an array");
  expect_error("\"x\"", NULL, 0, PN_IO_ERROR_SCHEMA, "/: expected a scenario object at the top level, got \"x\"");
  expect_error("{\"model\": \"tiny\"}", NULL, 0, PN_IO_ERROR_SCHEMA,
               "/schema_version: required key missing (this version reads 1)");
  expect_error("{\"schema_version\": 2}", NULL, 0, PN_IO_ERROR_SCHEMA,
               "/schema_version: unsupported version 2 (this version of penumbra reads 1)");
  expect_error("{\"schema_version\": 1, \"model\": \"tiny\", \"hardware\": " DEF_HW "}", NULL, 0, PN_IO_ERROR_SCHEMA,
               "/training: required section missing");
  expect_error("{\"schema_version\": 1, \"hardware\": " DEF_HW ", \"training\": " DEF_TRAINING "}", NULL, 0,
               PN_IO_ERROR_SCHEMA, "/model: required key missing (a model name or an inline object)");
}
END_TEST

/* NaN / Infinity are not JSON; 1e400 overflows to infinity; 2^53 + 2 is not exact; absurd sizes. */
START_TEST(test_numbers)
{
  g_autofree char *j1 = scenario_json(NULL, NULL, "{\"seq_length\": 1e400, \"global_batch_size\": 64}", NULL);
  expect_error(j1, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/training/seq_length: expected a positive integer, got a number out of range (not finite)");
  g_autofree char *j2 = scenario_json(NULL, NULL, "{\"seq_length\": NaN, \"global_batch_size\": 64}", NULL);
  expect_error(j2, NULL, 0, PN_IO_ERROR_PARSE,
               ":4:29: invalid JSON at \"NaN, \\\"global_batch_size\\\"...\": NaN and Infinity are not JSON numbers");
  g_autofree char *j3 = scenario_json(NULL, NULL, "{\"seq_length\": -Infinity, \"global_batch_size\": 64}", NULL);
  expect_error(j3, NULL, 0, PN_IO_ERROR_PARSE, ":4:29: invalid JSON at \"-Infinity, *");
  g_autofree char *j4 =
      scenario_json(NULL, NULL, "{\"seq_length\": 9007199254740994, \"global_batch_size\": 64}", NULL);
  expect_error(
      j4, NULL, 0, PN_IO_ERROR_SCHEMA,
      "/training/seq_length: expected a positive integer, got 9.00719925474099e+15 (beyond 2^53: absurdly large)");
  g_autofree char *j5 = scenario_json(NULL, "{\"profile\": \"test-gpu\", \"num_gpus\": 100000000}", NULL, NULL);
  expect_error(j5, NULL, 0, PN_IO_ERROR_SCHEMA, "/hardware/num_gpus: 100000000 is absurdly large (at most 10000000)");
  g_autofree char *j6 = scenario_json("{\"base\": \"tiny\", \"num_layers\": 1000000}", NULL, NULL, NULL);
  expect_error(j6, NULL, 0, PN_IO_ERROR_SCHEMA, "/model/num_layers: 1000000 is absurdly large (at most 100000)");
  g_autofree char *j7 = scenario_json("{\"base\": \"tiny\", \"hidden_size\": 20000000}", NULL, NULL, NULL);
  expect_error(j7, NULL, 0, PN_IO_ERROR_SCHEMA, "/model/hidden_size: 20000000 is absurdly large (at most 10000000)");
  g_autofree char *j8 = scenario_json(NULL, NULL, "{\"seq_length\": 200000000, \"global_batch_size\": 64}", NULL);
  expect_error(j8, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/training/seq_length: 200000000 is absurdly large (at most 100000000)");
  g_autofree char *j9 = scenario_json(NULL, NULL, "{\"seq_length\": 4096, \"global_batch_size\": 2000000000}", NULL);
  expect_error(j9, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/training/global_batch_size: 2000000000 is absurdly large (at most 1000000000)");
  g_autofree char *j10 = scenario_json("{\"base\": \"tiny\", \"attention_dropout\": 1e999}", NULL, NULL, NULL);
  expect_error(j10, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/model/attention_dropout: expected a finite number, got a number out of range (not finite)");
  /* an integer written with a zero fraction is an integer */
  g_autofree char *j11  = scenario_json(NULL, NULL, "{\"seq_length\": 4096.0, \"global_batch_size\": 6.4e1}", NULL);
  g_autoptr(GError) e11 = NULL;
  g_autoptr(PnScenario) sc11 = load(j11, NULL, 0, NULL, &e11);
  ck_assert_msg(sc11 != NULL, "%s", e11 ? e11->message : "");
  ck_assert_int_eq(sc11->training.global_batch_size, 64);
}
END_TEST

/* Unknown keys: did-you-mean over the section's keys, the section a misplaced key belongs to. */
START_TEST(test_did_you_mean)
{
  expect_extra_error("\"parallel\": {\"tensor_model_paralel_size\": 2}", PN_IO_ERROR_SCHEMA,
                     "/parallel/tensor_model_paralel_size: unknown key (did you mean \"tensor_model_parallel_size\"?)");
  expect_extra_error("\"parallel\": {\"tensor_parallel_size\": 2}", PN_IO_ERROR_SCHEMA,
                     "/parallel/tensor_parallel_size: unknown key (did you mean \"tensor_model_parallel_size\"?)");
  expect_extra_error(
      "\"parallel\": {\"pipeline_model_parallel_szie\": 2}", PN_IO_ERROR_SCHEMA,
      "/parallel/pipeline_model_parallel_szie: unknown key (did you mean \"pipeline_model_parallel_size\"?)");
  expect_extra_error("\"env\": {\"cuda_device_max_connections\": 1}", PN_IO_ERROR_SCHEMA,
                     "/env/cuda_device_max_connections: unknown key (did you mean \"CUDA_DEVICE_MAX_CONNECTIONS\"?)");
  expect_extra_error("\"paralel\": {}", PN_IO_ERROR_SCHEMA, "/paralel: unknown key (did you mean \"parallel\"?)");
  g_autofree char *j =
      scenario_json(NULL, NULL, "{\"seq_length\": 4096, \"global_batch_size\": 64, \"sequence_parallel\": true}", NULL);
  expect_error(j, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/training/sequence_parallel: unknown key here (it belongs in /parallel)");
  expect_extra_error("\"zzz\": 1", PN_IO_ERROR_SCHEMA, "/zzz: unknown key (expected one of: schema_version, *");
  g_autofree char *jm = scenario_json("{\"base\": \"tiny\", \"num_layer\": 4}", NULL, NULL, NULL);
  expect_error(jm, NULL, 0, PN_IO_ERROR_SCHEMA, "/model/num_layer: unknown key (did you mean \"num_layers\"?)");
  /* a key with a slash, a tilde and a newline: escaped in the pointer, message on one line */
  expect_extra_error("\"ddp\": {\"a/b~c\\nd\": 1}", PN_IO_ERROR_SCHEMA, "/ddp/a~1b~0c\\u000ad: unknown key*");
}
END_TEST

/* ---- semantic errors ---- */

/* Infeasible layouts: each names the offending key and the rule. */
START_TEST(test_semantic_errors)
{
  /* tiny: 8 layers, 16 heads, 4 query groups, hidden 1024 */
  expect_extra_error("\"parallel\": {\"tensor_model_parallel_size\": 3}", PN_IO_ERROR_INVALID,
                     "/parallel/tensor_model_parallel_size: 3 does not divide num_attention_heads 16");
  expect_extra_error("\"parallel\": {\"tensor_model_parallel_size\": 8}", PN_IO_ERROR_INVALID,
                     "/parallel/tensor_model_parallel_size: 8 does not divide num_query_groups 4");
  g_autofree char *j1 =
      scenario_json(NULL, "{\"profile\": \"test-gpu\", \"num_gpus\": 12}", NULL,
                    "\"parallel\": {\"tensor_model_parallel_size\": 4, \"pipeline_model_parallel_size\": 2}");
  expect_error(j1, NULL, 0, PN_IO_ERROR_INVALID,
               "/hardware/num_gpus: 12 is not divisible by tensor x pipeline x context parallel size (4 x 2 x 1)");
  g_autofree char *j1b = scenario_json(NULL, "{\"profile\": \"test-gpu\", \"num_gpus\": 2}", NULL,
                                       "\"parallel\": {\"tensor_model_parallel_size\": 4}");
  expect_error(j1b, NULL, 0, PN_IO_ERROR_INVALID, "/hardware/num_gpus: 2 is not divisible by *");
  g_autofree char *j2 = scenario_json(NULL, "{\"profile\": \"test-gpu\", \"num_gpus\": 3}",
                                      "{\"seq_length\": 4096, \"global_batch_size\": 3}",
                                      "\"parallel\": {\"pipeline_model_parallel_size\": 3}");
  expect_error(j2, NULL, 0, PN_IO_ERROR_INVALID,
               "/parallel/pipeline_model_parallel_size: 3 does not divide num_layers 8");
  expect_extra_error("\"parallel\": {\"pipeline_model_parallel_size\": 2, \"virtual_pipeline_model_parallel_size\": 3}",
                     PN_IO_ERROR_INVALID,
                     "/parallel/virtual_pipeline_model_parallel_size: 3 does not divide the 4 layers of each pipeline "
                     "stage (num_layers 8 / pipeline_model_parallel_size 2)");
  expect_extra_error("\"parallel\": {\"virtual_pipeline_model_parallel_size\": 2}", PN_IO_ERROR_INVALID,
                     "/parallel/virtual_pipeline_model_parallel_size: 2 needs pipeline_model_parallel_size > 1*");
  expect_extra_error(
      "\"parallel\": {\"pipeline_model_parallel_size\": 2, \"virtual_pipeline_model_parallel_size\": 2}, "
      "\"comm_overlap\": {\"overlap_p2p_comm\": false}",
      PN_IO_ERROR_INVALID, "/comm_overlap/overlap_p2p_comm: false is not supported with interleaving*");
  g_autofree char *j3 = scenario_json(NULL, NULL, "{\"seq_length\": 4096, \"global_batch_size\": 100}", NULL);
  expect_error(
      j3, NULL, 0, PN_IO_ERROR_INVALID,
      "/training/global_batch_size: 100 is not divisible by micro_batch_size x data_parallel_size (1 x 8 = 8)");
  g_autofree char *j4 = scenario_json(NULL, NULL, "{\"seq_length\": 4098, \"global_batch_size\": 64}",
                                      "\"parallel\": {\"context_parallel_size\": 2}");
  expect_error(j4, NULL, 0, PN_IO_ERROR_INVALID,
               "/training/seq_length: 4098 is not divisible by 2 x context_parallel_size = 4*");
  g_autofree char *j5 = scenario_json(NULL, NULL, "{\"seq_length\": 4094, \"global_batch_size\": 64}",
                                      "\"parallel\": {\"tensor_model_parallel_size\": 4, \"sequence_parallel\": true}");
  expect_error(j5, NULL, 0, PN_IO_ERROR_INVALID,
               "/training/seq_length: 4094 is not divisible by tensor_model_parallel_size 4 (sequence_parallel)");
  expect_extra_error("\"parallel\": {\"expert_model_parallel_size\": 2}", PN_IO_ERROR_INVALID,
                     "/parallel/expert_model_parallel_size: 2 needs a MoE model (num_moe_experts > 0)");
  g_autofree char *j6 = scenario_json("{\"base\": \"tiny\", \"num_moe_experts\": 6, \"moe_router_topk\": 2}", NULL,
                                      NULL, "\"parallel\": {\"expert_model_parallel_size\": 4}");
  expect_error(j6, NULL, 0, PN_IO_ERROR_INVALID,
               "/parallel/expert_model_parallel_size: 4 does not divide num_moe_experts 6");
  g_autofree char *j6b = scenario_json("{\"base\": \"tiny\", \"num_moe_experts\": 8}", NULL, NULL, NULL);
  expect_error(j6b, NULL, 0, PN_IO_ERROR_INVALID, "/model/moe_router_topk: expected 1 to num_moe_experts (8)*");
  /* interleaving: 8 GPUs, pp 2 -> dp 4; gbs 24 -> 6 micro-batches, 6 % 2 == 0 fine; gbs 20 -> 5 */
  g_autofree char *j7 =
      scenario_json(NULL, NULL, "{\"seq_length\": 4096, \"global_batch_size\": 20}",
                    "\"parallel\": {\"pipeline_model_parallel_size\": 2, \"virtual_pipeline_model_parallel_size\": 2}");
  expect_error(j7, NULL, 0, PN_IO_ERROR_INVALID, "/training/global_batch_size: the interleaved schedule*");
  g_autofree char *j8 =
      scenario_json(NULL, NULL, "{\"seq_length\": 4096, \"global_batch_size\": 24}",
                    "\"parallel\": {\"pipeline_model_parallel_size\": 2, \"virtual_pipeline_model_parallel_size\": 2, "
                    "\"microbatch_group_size_per_vp_stage\": 8}");
  expect_error(j8, NULL, 0, PN_IO_ERROR_INVALID,
               "/parallel/microbatch_group_size_per_vp_stage: the interleaved schedule needs*");
  expect_extra_error("\"env\": {\"NCCL_MIN_CTAS\": 32, \"NCCL_MAX_CTAS\": 16}", PN_IO_ERROR_INVALID,
                     "/env/NCCL_MIN_CTAS: 32 exceeds NCCL_MAX_CTAS 16");
  expect_extra_error("\"env\": {\"NVTE_FWD_LAYERNORM_SM_MARGIN\": 132}", PN_IO_ERROR_INVALID,
                     "/env/NVTE_FWD_LAYERNORM_SM_MARGIN: 132 leaves no SM for the kernel (the GPU has 132)");
  expect_extra_error("\"ddp\": {\"fp8_param_gather\": true}", PN_IO_ERROR_INVALID,
                     "/ddp/fp8_param_gather: true needs training.precision \"fp8\"");
  expect_extra_error("\"recompute\": {\"recompute_granularity\": \"full\", \"recompute_num_layers\": 9}",
                     PN_IO_ERROR_INVALID,
                     "/recompute/recompute_num_layers: 9 exceeds the 8 layers of a pipeline stage");
  /* what Megatron-Core's TransformerConfig refuses of recompute_modules */
  expect_extra_error("\"recompute\": {\"recompute_granularity\": \"selective\", \"recompute_modules\": "
                     "[\"mla_up_proj\"]}",
                     PN_IO_ERROR_INVALID,
                     "/recompute/recompute_modules: \"mla_up_proj\" is only supported with multi-latent attention "
                     "(model.multi_latent_attention)");
  g_autofree char *jd = scenario_json(NULL, NULL,
                                      "{\"seq_length\": 4096, \"global_batch_size\": 8, \"precision\": \"fp8\", "
                                      "\"fp8_recipe\": \"delayed\"}",
                                      "\"recompute\": {\"recompute_granularity\": \"selective\", "
                                      "\"recompute_modules\": [\"layernorm\"]}");
  expect_error(jd, NULL, 0, PN_IO_ERROR_INVALID,
               "/recompute/recompute_modules: delayed scaling does not support moe_act and layernorm recompute for "
               "fp8 (Megatron-Core); use /training/fp8_recipe \"tensorwise\" or drop them");
  expect_extra_error("\"ddp\": {\"num_distributed_optimizer_instances\": 3}", PN_IO_ERROR_INVALID,
                     "/ddp/num_distributed_optimizer_instances: 3 does not divide data_parallel_size 8");
  /* account_for_*_in_pipeline_split: 8 layers + embedding + loss = 10 split over pp */
  g_autofree char *ja = scenario_json(
      NULL, "{\"profile\": \"test-gpu\", \"num_gpus\": 3}", "{\"seq_length\": 4096, \"global_batch_size\": 3}",
      "\"parallel\": {\"pipeline_model_parallel_size\": 3, "
      "\"account_for_embedding_in_pipeline_split\": true, \"account_for_loss_in_pipeline_split\": true}");
  expect_error(
      ja, NULL, 0, PN_IO_ERROR_INVALID,
      "/parallel/pipeline_model_parallel_size: 3 does not divide num_layers 8 + 2 (account_for_*_in_pipeline_split)");
  const char *fix[]        = {"parallel.account_for_loss_in_pipeline_split=false"};
  g_autoptr(GError) ea     = NULL;
  g_autoptr(PnScenario) sa = load(ja, fix, 1, NULL, &ea);
  ck_assert_msg(sa != NULL, "%s", ea ? ea->message : "");
  ck_assert(sa->parallel.account_for_embedding_in_pipeline_split && !sa->parallel.account_for_loss_in_pipeline_split);
  g_autofree char *j9 = scenario_json("{\"base\": \"tiny\", \"position_embedding_type\": \"learned_absolute\", "
                                      "\"max_position_embeddings\": 2048}",
                                      NULL, NULL, NULL);
  expect_error(j9, NULL, 0, PN_IO_ERROR_INVALID,
               "/training/seq_length: 4096 exceeds the model's max_position_embeddings 2048*");
}
END_TEST

/* Warnings: TP across nodes, SP dropped at TP 1; they do not fail (a MoE model no longer warns). */
START_TEST(test_warnings)
{
  /* tiny's 4 query groups do not split 16 ways: give it 16 (MHA) */
  g_autofree char *j2 = scenario_json(
      "{\"base\": \"tiny\", \"num_query_groups\": 16, \"num_moe_experts\": 8, \"moe_router_topk\": 2}",
      "{\"profile\": \"test-gpu\", \"num_gpus\": 16}", NULL, "\"parallel\": {\"tensor_model_parallel_size\": 16}");
  g_autoptr(GError) e      = NULL;
  g_autoptr(GPtrArray) w   = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(PnScenario) sc = load(j2, NULL, 0, w, &e);
  ck_assert_msg(sc != NULL, "%s", e ? e->message : "");
  ck_assert_uint_eq(w->len, 1);
  ck_assert_uint_eq(sc->parallel.expert_tensor_parallel_size, 16); /* Megatron-Core's default: tp */
  ck_assert_msg(strstr(w->pdata[0], "/parallel/tensor_model_parallel_size: 16 exceeds gpus_per_node 8") != NULL, "%s",
                (char *)w->pdata[0]);
  /* NULL warnings array is fine */
  g_autoptr(GError) e2      = NULL;
  g_autoptr(PnScenario) sc2 = load(j2, NULL, 0, NULL, &e2);
  ck_assert_ptr_nonnull(sc2);

  g_autofree char *j3       = scenario_json(NULL, NULL, NULL, "\"parallel\": {\"sequence_parallel\": true}");
  g_autoptr(GPtrArray) w3   = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GError) e3      = NULL;
  g_autoptr(PnScenario) sc3 = load(j3, NULL, 0, w3, &e3);
  ck_assert_ptr_nonnull(sc3);
  ck_assert(!sc3->parallel.sequence_parallel);
  ck_assert_uint_eq(w3->len, 1);
  ck_assert_msg(strstr(w3->pdata[0], "/parallel/sequence_parallel: disabled because tensor_model_parallel_size is 1") !=
                    NULL,
                "%s", (char *)w3->pdata[0]);
}
END_TEST

/* ---- --set ---- */

/* Nested keys, JSON and bare-string values, null, creating a section, whole values. */
START_TEST(test_set_values)
{
  g_autofree char *j       = scenario_json(NULL, "{\"profile\": \"test-gpu\", \"num_gpus\": 16}", NULL, NULL);
  const char *sets[]       = {"parallel.tensor_model_parallel_size=4",
                              "parallel.sequence_parallel=true",
                              "training.precision=fp8",
                              "comm_overlap.tp_comm_overlap_cfg=\"userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192\"",
                              "comm_overlap.overlap_p2p_comm=false",
                              "ddp.overlap_grad_reduce=true",
                              "ddp.overlap_grad_reduce=null",
                              "recompute={\"recompute_granularity\": \"full\", \"recompute_num_layers\": 1}",
                              "env.CUDA_DEVICE_MAX_CONNECTIONS=1",
                              "training.global_batch_size=128",
                              "name=bare words are a string"};
  g_autoptr(GError) e      = NULL;
  g_autoptr(PnScenario) sc = load(j, sets, G_N_ELEMENTS(sets), NULL, &e);
  ck_assert_msg(sc != NULL, "%s", e ? e->message : "");
  ck_assert_int_eq(sc->parallel.tensor_model_parallel_size, 4);
  ck_assert(sc->parallel.sequence_parallel);
  ck_assert_int_eq(sc->training.precision, PN_PREC_FP8);
  ck_assert_str_eq(sc->comm_overlap.tp_comm_overlap_cfg, "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192");
  ck_assert_int_eq(sc->comm_overlap.overlap_p2p_comm, PN_TRI_FALSE);
  ck_assert_int_eq(sc->ddp.overlap_grad_reduce, PN_TRI_UNSET);
  ck_assert_int_eq(sc->recompute.recompute_granularity, PN_RECOMPUTE_FULL);
  ck_assert_int_eq(sc->recompute.recompute_num_layers, 1);
  ck_assert_int_eq(sc->env.cuda_device_max_connections, 1);
  ck_assert_int_eq(sc->parallel.data_parallel_size, 4);
  ck_assert_int_eq(sc->parallel.num_microbatches, 32);
}
END_TEST

/* A model given by name becomes {"base": name, ...} when one of its fields is set. */
START_TEST(test_set_model_field)
{
  g_autofree char *j       = scenario_json(NULL, NULL, NULL, NULL);
  const char *sets[]       = {"model.num_layers=16", "model.name=tiny-16"};
  g_autoptr(GError) e      = NULL;
  g_autoptr(PnScenario) sc = load(j, sets, 2, NULL, &e);
  ck_assert_msg(sc != NULL, "%s", e ? e->message : "");
  ck_assert_int_eq(sc->model.num_layers, 16);
  ck_assert_int_eq(sc->model.hidden_size, 1024);
  ck_assert_str_eq(sc->model.name, "tiny-16");
  const char *sets2[]       = {"model=../models/tiny.json"};
  g_autoptr(GError) e2      = NULL;
  g_autoptr(PnScenario) sc2 = load(j, sets2, 1, NULL, &e2);
  ck_assert_msg(sc2 != NULL, "%s", e2 ? e2->message : "");
  /* the value of a set key is checked like the file's, but blamed on --set */
  const char *sets3[] = {"model.num_layers=7.5"};
  expect_error(j, sets3, 1, PN_IO_ERROR_SCHEMA,
               "--set: /model/num_layers: expected a positive integer, got 7.5 (not an integer)");
}
END_TEST

/* Unknown --set keys get did-you-mean; malformed --set is refused; errors at set keys say --set. */
START_TEST(test_set_errors)
{
  g_autofree char *j = scenario_json(NULL, NULL, NULL, NULL);
  const char *s1[]   = {"parallel.tensor_model_paralel_size=2"};
  expect_error(
      j, s1, 1, PN_IO_ERROR_SCHEMA,
      "--set: /parallel/tensor_model_paralel_size: unknown key (did you mean \"tensor_model_parallel_size\"?)");
  const char *s2[] = {"paralel.tensor_model_parallel_size=2"};
  expect_error(j, s2, 1, PN_IO_ERROR_SCHEMA, "--set: /paralel: unknown key (did you mean \"parallel\"?)");
  const char *s3[] = {"parallel.tensor_model_parallel_size"};
  expect_error(j, s3, 1, PN_IO_ERROR_SCHEMA,
               "--set: \"parallel.tensor_model_parallel_size\": expected dotted.key=value (e.g. "
               "parallel.tensor_model_parallel_size=4)");
  const char *s4[] = {"=4"};
  expect_error(j, s4, 1, PN_IO_ERROR_SCHEMA, "--set: \"=4\": expected dotted.key=value*");
  const char *s5[] = {"parallel..tensor_model_parallel_size=2"};
  expect_error(j, s5, 1, PN_IO_ERROR_SCHEMA,
               "--set: \"parallel..tensor_model_parallel_size=2\": empty key in the dotted path");
  const char *s6[] = {"parallel.tensor_model_parallel_size.x=2"};
  expect_error(j, s6, 1, PN_IO_ERROR_SCHEMA,
               "--set: /parallel/tensor_model_parallel_size/x: unknown key (/parallel/tensor_model_parallel_size is "
               "not an object)");
  const char *s7[] = {"name.x=2"};
  expect_error(j, s7, 1, PN_IO_ERROR_SCHEMA, "--set: /name/x: unknown key (/name is not an object)");
  const char *s8[] = {"training.sequence_parallel=true"};
  expect_error(j, s8, 1, PN_IO_ERROR_SCHEMA,
               "--set: /training/sequence_parallel: unknown key here (it belongs in /parallel)");
  const char *s9[] = {"parallel.tensor_model_parallel_size=3"};
  expect_error(j, s9, 1, PN_IO_ERROR_INVALID,
               "--set: /parallel/tensor_model_parallel_size: 3 does not divide num_attention_heads 16");
  const char *s10[] = {"training.seq_length=\"4096\""};
  expect_error(j, s10, 1, PN_IO_ERROR_SCHEMA, "--set: /training/seq_length: expected a positive integer, got \"4096\"");
  const char *s11[] = {"training.seq_length=four"};
  expect_error(j, s11, 1, PN_IO_ERROR_SCHEMA, "--set: /training/seq_length: expected a positive integer, got \"four\"");
  const char *s12[] = {"training={\"seq_length\": 4096}"};
  expect_error(j, s12, 1, PN_IO_ERROR_SCHEMA, "--set: /training/global_batch_size: required key missing");
  /* a section that is not an object in the file: the file is blamed */
  g_autofree char *jbad = scenario_json(NULL, NULL, NULL, "\"parallel\": 5");
  const char *s13[]     = {"parallel.tensor_model_parallel_size=2"};
  expect_error(jbad, s13, 1, PN_IO_ERROR_SCHEMA, "/parallel: expected an object, got 5");
  /* a hostile --set value: deep nesting, garbage */
  GString *deep = g_string_new("model=");
  for (int i = 0; i < 5000; i++)
    g_string_append_c(deep, '[');
  const char *s14[] = {deep->str};
  expect_error(j, s14, 1, PN_IO_ERROR_SCHEMA, "--set: /model: expected a model name*");
  g_string_free(deep, TRUE);
  GString *deep2 = g_string_new("model=");
  for (int i = 0; i < 900; i++)
    g_string_append_c(deep2, '[');
  for (int i = 0; i < 900; i++)
    g_string_append_c(deep2, ']');
  const char *s15[] = {deep2->str};
  expect_error(j, s15, 1, PN_IO_ERROR_SCHEMA,
               "--set: /model: expected a model name, a path ending in .json, or an inline model object, got an array");
  g_string_free(deep2, TRUE);
  const char *s16[] = {"env.NCCL_NVLS_ENABLE=\xff\xfe"};
  expect_error(j, s16, 1, PN_IO_ERROR_SCHEMA, "--set: argument is not valid UTF-8");
}
END_TEST

/* ---- hostile input ---- */

/* Every proper prefix of a valid scenario is an error with one line, never a crash. */
START_TEST(test_truncated)
{
  g_autofree char *path = data("scenarios/tiny-8gpu.json");
  g_autofree char *text = NULL;
  gsize len             = 0;
  ck_assert(g_file_get_contents(path, &text, &len, NULL));
  while (len > 0 && g_ascii_isspace(text[len - 1]))
    len--;
  g_autofree char *disp = display();
  for (gsize i = 0; i < len; i++) {
    g_autofree char *prefix  = g_strndup(text, i);
    g_autoptr(GError) e      = NULL;
    g_autoptr(PnScenario) sc = pn_scenario_load_string(prefix, disp, NULL, 0, NULL, &e);
    ck_assert_msg(sc == NULL, "prefix of %" G_GSIZE_FORMAT " bytes loaded", i);
    assert_one_line(e);
    ck_assert_msg(g_str_has_prefix(e->message, disp), "%s", e->message);
  }
  /* the file fixture and its message */
  g_autofree char *tpath   = data("bad/truncated.json");
  g_autoptr(GError) e      = NULL;
  g_autoptr(PnScenario) sc = pn_scenario_load(tpath, NULL, 0, NULL, &e);
  ck_assert_ptr_null(sc);
  g_autofree char *want = g_strdup_printf("%s:1:74: unexpected end of input: the '{' at 1:52 is never closed", tpath);
  ck_assert_str_eq(e->message, want);
  ck_assert_int_eq(e->code, PN_IO_ERROR_PARSE);
}
END_TEST

/* Empty, whitespace-only, missing, directory, wrong top level, syntax errors with line:col. */
START_TEST(test_bad_files)
{
  struct {
    const char *file;
    int code;
    const char *rest;
  } cases[] = {
      {"bad/empty.json", PN_IO_ERROR_PARSE, ": file is empty, expected a JSON object"},
      {"bad/top-array.json", PN_IO_ERROR_SCHEMA, ": /: expected a scenario object at the top level, got an array"},
      {"bad/trailing-comma.json", PN_IO_ERROR_PARSE, ":2:34: invalid JSON at \"}\": trailing comma"},
      {"bad/nan.json", PN_IO_ERROR_PARSE, ":2:29: invalid JSON at \"NaN}\": NaN and Infinity are not JSON numbers"},
      {"bad/typo-key.json", PN_IO_ERROR_SCHEMA,
       ": /parallel/tensor_model_paralel_size: unknown key (did you mean \"tensor_model_parallel_size\"?)"},
      {"bad/string-int.json", PN_IO_ERROR_SCHEMA, ": /training/seq_length: expected a positive integer, got \"4096\""},
      {"bad/tp-heads.json", PN_IO_ERROR_INVALID,
       ": /parallel/tensor_model_parallel_size: 3 does not divide num_attention_heads 16"},
      {"bad/absurd-gpus.json", PN_IO_ERROR_SCHEMA,
       ": /hardware/num_gpus: 100000000 is absurdly large (at most 10000000)"},
      {"bad/nul-byte.json", PN_IO_ERROR_PARSE, ":1:38: NUL byte in the text (is this a binary file?)"},
      {"bad/deep.json", PN_IO_ERROR_PARSE, ":1:95: nesting deeper than 64 levels"},
      {"bad/garbage.json", PN_IO_ERROR_PARSE, ":*"},
      {"bad/no-such-file.json", PN_IO_ERROR_FILE, ": cannot open: No such file or directory"},
      {"bad", PN_IO_ERROR_FILE, ": is a directory, expected a JSON file"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path    = data(cases[i].file);
    g_autoptr(GError) e      = NULL;
    g_autoptr(PnScenario) sc = pn_scenario_load(path, NULL, 0, NULL, &e);
    ck_assert_msg(sc == NULL, "%s loaded", cases[i].file);
    assert_one_line(e);
    g_autofree char *want = g_strconcat(path, cases[i].rest, NULL);
    gsize n               = strlen(want);
    if (want[n - 1] == '*') {
      want[n - 1] = '\0';
      ck_assert_msg(g_str_has_prefix(e->message, want), "got  %s\nwant %s...", e->message, want);
    } else {
      ck_assert_msg(strcmp(e->message, want) == 0, "got  %s\nwant %s", e->message, want);
    }
    ck_assert_msg(e->code == cases[i].code, "%s: code %d", e->message, e->code);
  }
  expect_error("   \n\t ", NULL, 0, PN_IO_ERROR_PARSE, "file holds only whitespace, expected a JSON object");
  expect_error("{'a': 1}", NULL, 0, PN_IO_ERROR_PARSE,
               ":1:2: invalid JSON at \"'a': 1}\": strings and keys need double quotes");
  expect_error("{\"a\": 1,}", NULL, 0, PN_IO_ERROR_PARSE, ":1:9: invalid JSON at \"}\": trailing comma");
  expect_error(
      "{\"a\": \"C:\\dir\"}", NULL, 0, PN_IO_ERROR_PARSE,
      ":1:10: invalid JSON at \"\\\\dir\\\"}\": invalid escape sequence in a string (a backslash is written \\\\)");
  expect_error("[1, 2,]", NULL, 0, PN_IO_ERROR_PARSE, ":1:7: invalid JSON at \"]\": trailing comma");
  expect_error("{\"a\": 'x'}", NULL, 0, PN_IO_ERROR_PARSE,
               ":1:7: invalid JSON at \"'x'}\": strings and keys need double quotes");
  expect_error("{\"schema_version\": 1} // c", NULL, 0, PN_IO_ERROR_PARSE,
               ":1:23: invalid JSON at \"// c\": comments are not allowed in JSON");
  expect_error("{\"schema_version\": 1}}", NULL, 0, PN_IO_ERROR_PARSE,
               ":1:22: invalid JSON at \"}\": text after the end of the top-level value");
  expect_error("{\"a\": [1, 2}", NULL, 0, PN_IO_ERROR_PARSE, ":1:12: '}' does not close the '[' at 1:7");
  expect_error("\xef\xbb\xbf{\"schema_version\": 7}", NULL, 0, PN_IO_ERROR_SCHEMA,
               "/schema_version: unsupported version 7*");
  expect_error("{\"a\": \"caf\xc3\"}", NULL, 0, PN_IO_ERROR_PARSE, ":1:11: invalid UTF-8 (is this a binary file?)");
}
END_TEST

/* Random bytes (fixed seed) and random mutations of a valid file: errors, never crashes. */
START_TEST(test_garbage)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed(20240917);
  g_autofree char *dir = tmp_dir();
  g_autofree char *p   = g_build_filename(dir, "g.json", NULL);
  for (int it = 0; it < 300; it++) {
    gsize len                     = (gsize)g_rand_int_range(rng, 1, 3000);
    g_autofree unsigned char *buf = g_malloc(len);
    for (gsize i = 0; i < len; i++)
      buf[i] = (unsigned char)g_rand_int_range(rng, 0, 256);
    if (it % 3 == 0)
      buf[0] = '{'; /* get past the first byte more often */
    write_bytes(p, buf, len);
    g_autoptr(GError) e      = NULL;
    g_autoptr(PnScenario) sc = pn_scenario_load(p, NULL, 0, NULL, &e);
    ck_assert_ptr_null(sc);
    assert_one_line(e);
    ck_assert_msg(g_str_has_prefix(e->message, p), "%s", e->message);
  }
  /* mutations: replace, insert or delete one byte of a valid file, many times */
  g_autofree char *vpath = data("scenarios/tiny-8gpu.json");
  g_autofree char *text  = NULL;
  gsize tlen             = 0;
  ck_assert(g_file_get_contents(vpath, &text, &tlen, NULL));
  const char alphabet[] = "{}[]\":,0123456789.eE-+tfnul \n\\x\xc3\xa9";
  g_autofree char *disp = display();
  for (int it = 0; it < 3000; it++) {
    GString *s = g_string_new_len(text, (gssize)tlen);
    int nmut   = g_rand_int_range(rng, 1, 4);
    for (int k = 0; k < nmut; k++) {
      gsize pos = (gsize)g_rand_int_range(rng, 0, (gint32)s->len);
      char c    = alphabet[g_rand_int_range(rng, 0, (gint32)sizeof alphabet - 1)];
      switch (g_rand_int_range(rng, 0, 3)) {
      case 0:
        s->str[pos] = c;
        break;
      case 1:
        g_string_insert_c(s, (gssize)pos, c);
        break;
      default:
        g_string_erase(s, (gssize)pos, 1);
        break;
      }
    }
    g_autoptr(GError) e      = NULL;
    g_autoptr(PnScenario) sc = pn_scenario_load_string(s->str, disp, NULL, 0, NULL, &e);
    if (sc == NULL)
      assert_one_line(e);
    g_string_free(s, TRUE);
  }
  rm_rf(dir);
}
END_TEST

/* A 70 MB file is refused before parsing, for scenarios and profiles. */
START_TEST(test_huge_file)
{
  g_autofree char *dir = tmp_dir();
  g_autofree char *p   = g_build_filename(dir, "huge.json", NULL);
  FILE *f              = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  fputc('{', f);
  ck_assert_int_eq(fseek(f, 70L * 1000 * 1000, SEEK_SET), 0); /* sparse */
  fputc('}', f);
  fclose(f);
  g_autoptr(GError) e      = NULL;
  g_autoptr(PnScenario) sc = pn_scenario_load(p, NULL, 0, NULL, &e);
  ck_assert_ptr_null(sc);
  assert_one_line(e);
  g_autofree char *want = g_strdup_printf("%s: file is too large (66.8 MiB; at most 64 MiB is read)", p);
  ck_assert_str_eq(e->message, want);
  ck_assert_int_eq(e->code, PN_IO_ERROR_FILE);
  g_autoptr(GError) e2      = NULL;
  g_autoptr(PnHwProfile) hw = pn_hw_profile_load(p, &e2);
  ck_assert_ptr_null(hw);
  ck_assert_str_eq(e2->message, want);
  rm_rf(dir);
}
END_TEST

/* Deep nesting is refused cleanly, in files and strings, closed or not. */
START_TEST(test_deep_nesting)
{
  for (int closed = 0; closed < 2; closed++) {
    GString *s = g_string_new("{\"schema_version\": 1, \"model\": ");
    for (int i = 0; i < 200000; i++)
      g_string_append_c(s, i % 2 ? '[' : '{');
    for (int i = 200000 - 1; closed && i >= 0; i--)
      g_string_append_c(s, i % 2 ? ']' : '}');
    g_autoptr(GError) e      = NULL;
    g_autoptr(PnScenario) sc = load(s->str, NULL, 0, NULL, &e);
    ck_assert_ptr_null(sc);
    assert_one_line(e);
    /* '{' at odd depth needs a key; the structural scan stops at depth 64 first */
    ck_assert_msg(strstr(e->message, "nesting deeper than 64 levels") != NULL, "%s", e->message);
    g_string_free(s, TRUE);
  }
  GString *a = g_string_new(NULL);
  for (int i = 0; i < 64; i++)
    g_string_append_c(a, '[');
  for (int i = 0; i < 64; i++)
    g_string_append_c(a, ']');
  /* 64 levels are fine for the parser (and then not a scenario) */
  expect_error(a->str, NULL, 0, PN_IO_ERROR_SCHEMA, "/: expected a scenario object at the top level, got an array");
  g_string_prepend_c(a, '[');
  g_string_append_c(a, ']');
  expect_error(a->str, NULL, 0, PN_IO_ERROR_PARSE, ":1:65: nesting deeper than 64 levels");
  g_string_free(a, TRUE);
}
END_TEST

/* ---- echoed input ---- */

/* Input echoed in a message (keys, values, --set arguments, the text at a syntax error) is cut to
 * 60 characters at a character boundary and marked with its length; what would not print is
 * escaped. A message stays one short, valid UTF-8 line whatever the input. */
START_TEST(test_echo_bounded)
{
  const gsize big      = 1048576;
  char *a              = g_strnfill(big, 'a');
  g_autofree char *a60 = g_strnfill(60, 'a');
  /* an unknown key of 1 MiB: in the pointer */
  g_autofree char *extra = g_strdup_printf("\"%s\": 1", a);
  g_autofree char *want1 = g_strdup_printf("/%s... (1048576 bytes): unknown key (expected one of: *", a60);
  expect_extra_error(extra, PN_IO_ERROR_SCHEMA, want1);
  /* a value of 1 MiB */
  g_autofree char *training =
      g_strdup_printf("{\"seq_length\": 4096, \"global_batch_size\": 64, \"precision\": \"%s\"}", a);
  g_autofree char *j2 = scenario_json(NULL, NULL, training, NULL);
  g_autofree char *want2 =
      g_strdup_printf("/training/precision: expected one of \"bf16\", \"fp8\", got \"%s...\" (1048576 bytes)", a60);
  expect_error(j2, NULL, 0, PN_IO_ERROR_SCHEMA, want2);
  /* --set arguments */
  g_autofree char *j     = scenario_json(NULL, NULL, NULL, NULL);
  const char *s1[]       = {a};
  g_autofree char *want3 = g_strdup_printf(
      "--set: \"%s...\" (1048576 bytes): expected dotted.key=value (e.g. parallel.tensor_model_parallel_size=4)", a60);
  expect_error(j, s1, 1, PN_IO_ERROR_SCHEMA, want3);
  g_autofree char *set2  = g_strdup_printf("parallel.%s=1", a);
  const char *s2[]       = {set2};
  g_autofree char *want4 = g_strdup_printf("--set: /parallel/%s... (1048576 bytes): unknown key", a60);
  expect_error(j, s2, 1, PN_IO_ERROR_SCHEMA, want4);
  g_free(a);
  /* characters, not bytes: 100 x U+00E9 is cut after 60 of them */
  GString *e100 = g_string_new(NULL), *e60 = g_string_new(NULL);
  for (int i = 0; i < 100; i++)
    g_string_append(e100, "\xc3\xa9");
  for (int i = 0; i < 60; i++)
    g_string_append(e60, "\xc3\xa9");
  g_autofree char *t5 =
      g_strdup_printf("{\"seq_length\": 4096, \"global_batch_size\": 64, \"precision\": \"%s\"}", e100->str);
  g_autofree char *j5 = scenario_json(NULL, NULL, t5, NULL);
  g_autofree char *want5 =
      g_strdup_printf("/training/precision: expected one of \"bf16\", \"fp8\", got \"%s...\" (200 bytes)", e60->str);
  expect_error(j5, NULL, 0, PN_IO_ERROR_SCHEMA, want5);
  /* the text at a syntax error: 24 characters, never half of one */
  g_autofree char *j6 = g_strdup_printf("{\"a\": x%s}", e100->str);
  g_string_truncate(e60, 23 * 2);
  g_autofree char *want6 = g_strdup_printf(":1:7: invalid JSON at \"x%s...\"", e60->str);
  expect_error(j6, NULL, 0, PN_IO_ERROR_PARSE, want6);
  g_string_free(e100, TRUE);
  g_string_free(e60, TRUE);
  /* what would not print: control characters in a key, a right-to-left override in a value */
  expect_extra_error("\"\\u001b[31m\": 1", PN_IO_ERROR_SCHEMA, "/\\u001b[31m: unknown key*");
  g_autofree char *j7 =
      scenario_json(NULL, NULL,
                    "{\"seq_length\": 4096, \"global_batch_size\": 64, \"precision\": \"bf\xe2\x80\xae"
                    "16\"}",
                    NULL);
  expect_error(j7, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/training/precision: expected one of \"bf16\", \"fp8\", got \"bf\\u202e16\"");
}
END_TEST

/* ---- what cJSON accepts but would read wrong ---- */

/* Writes `text` to <dir>/<name> and returns the path (g_free). */
static char *write_text(const char *dir, const char *name, const char *text)
{
  char *p = g_build_filename(dir, name, NULL);
  write_bytes(p, text, strlen(text));
  return p;
}

/* A results file of `kind` with the one `row` is refused by pn_calib_read_results with the one
 * line "<file>: <rest>". */
static void assert_bad_results(const char *dir, const char *kind, const char *row, const char *rest)
{
  g_autofree char *json = g_strdup_printf("{\"schema_version\": 1, \"kind\": \"%s\", \"results\": [%s]}", kind, row);
  g_autofree char *path = write_text(dir, "r.json", json);
  PnCalData d;
  pn_cal_data_init(&d);
  g_autoptr(GError) e = NULL;
  ck_assert(!pn_calib_read_results(path, &d, NULL, &e));
  pn_cal_data_clear(&d);
  assert_one_line(e);
  g_autofree char *want = g_strdup_printf("%s: %s", path, rest);
  ck_assert_msg(strcmp(e->message, want) == 0, "got  %s\nwant %s", e->message, want);
}

/* The fixture file `rel` with its first `from` replaced by `to` (g_free). */
static char *fixture_with(const char *rel, const char *from, const char *to)
{
  g_autofree char *path = data(rel);
  g_autofree char *text = NULL;
  ck_assert(g_file_get_contents(path, &text, NULL, NULL));
  const char *at = strstr(text, from);
  ck_assert_msg(at != NULL, "%s not in %s", from, rel);
  return g_strdup_printf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
}

/* A NUL character (\u0000) in a string or a key: cJSON ends the C string there, so
 * "bf16\u0000junk" would run as bf16. Refused with the string's pointer in every JSON penumbra
 * reads: scenarios, --set values, models, profiles, microbenchmark results. */
START_TEST(test_json_nul)
{
  g_autofree char *j1 = scenario_json(
      NULL, NULL, "{\"seq_length\": 4096, \"global_batch_size\": 64, \"precision\": \"bf16\\u0000junk\"}", NULL);
  expect_error(j1, NULL, 0, PN_IO_ERROR_PARSE,
               "/training/precision: expected a string without NUL characters (\\u0000), got \"bf16\\u0000junk\"");
  g_autofree char *j2 = scenario_json(
      NULL, NULL, "{\"seq_length\": 4096, \"global_batch_size\": 64, \"precision\\u0000x\": \"bf16\"}", NULL);
  expect_error(j2, NULL, 0, PN_IO_ERROR_PARSE,
               "/training/precision\\u0000x: expected a key without NUL characters (\\u0000)");
  expect_extra_error("\"description\": [\"a\", {\"b\": [0, \"\\u0000\"]}]", PN_IO_ERROR_PARSE,
                     "/description/1/b/1: expected a string without NUL characters (\\u0000), got \"\\u0000\"");
  expect_error("\"\\u0000\"", NULL, 0, PN_IO_ERROR_PARSE,
               "/: expected a string without NUL characters (\\u0000), got \"\\u0000\"");
  /* an escaped backslash before "u0000" is no NUL */
  g_autofree char *ok       = scenario_json(NULL, NULL, NULL, "\"description\": \"C:\\\\u0000\"");
  g_autoptr(GError) eok     = NULL;
  g_autoptr(PnScenario) sok = load(ok, NULL, 0, NULL, &eok);
  ck_assert_msg(sok != NULL, "%s", eok ? eok->message : "");

  /* --set values: a string, a key in an object */
  g_autofree char *j = scenario_json(NULL, NULL, NULL, NULL);
  const char *s1[]   = {"training.precision=\"bf16\\u0000junk\""};
  expect_error(j, s1, 1, PN_IO_ERROR_PARSE,
               "--set: /training/precision: expected a string without NUL characters (\\u0000), got "
               "\"bf16\\u0000junk\"");
  const char *s2[] = {"training={\"seq_length\": 4096, \"global_batch_size\": 64, \"precision\\u0000\": \"fp8\"}"};
  expect_error(j, s2, 1, PN_IO_ERROR_PARSE,
               "--set: /training/precision\\u0000: expected a key without NUL characters (\\u0000)");

  /* models, profiles, microbenchmark results */
  g_autofree char *dir   = tmp_dir();
  g_autofree char *mtext = fixture_with("models/tiny.json", "\"tiny\"", "\"tiny\\u0000x\"");
  g_autofree char *mpath = write_text(dir, "m.json", mtext);
  PnModelConfig m;
  g_autoptr(GError) em = NULL;
  ck_assert(!pn_model_load(mpath, &m, &em));
  g_autofree char *wm =
      g_strdup_printf("%s: /name: expected a string without NUL characters (\\u0000), got \"tiny\\u0000x\"", mpath);
  ck_assert_str_eq(em->message, wm);
  g_autofree char *htext     = fixture_with("hwprofiles/test-gpu.json", "\"fixture: 80 GiB\"", "\"80\\u0000GiB\"");
  g_autofree char *hpath     = write_text(dir, "h.json", htext);
  g_autoptr(GError) eh       = NULL;
  g_autoptr(PnHwProfile) hwp = pn_hw_profile_load(hpath, &eh);
  ck_assert_ptr_null(hwp);
  g_autofree char *wh = g_strdup_printf(
      "%s: /compute/hbm_bytes/source: expected a string without NUL characters (\\u0000), got \"80\\u0000GiB\"", hpath);
  ck_assert_str_eq(eh->message, wh);
  g_autofree char *cpath =
      write_text(dir, "c.json", "{\"schema_version\": 1, \"kind\": \"gemm\\u0000x\", \"results\": []}");
  PnCalData d;
  pn_cal_data_init(&d);
  g_autoptr(GError) ec = NULL;
  ck_assert(!pn_calib_read_results(cpath, &d, NULL, &ec));
  pn_cal_data_clear(&d);
  g_autofree char *wc =
      g_strdup_printf("%s: /kind: expected a string without NUL characters (\\u0000), got \"gemm\\u0000x\"", cpath);
  ck_assert_str_eq(ec->message, wc);
  ck_assert_int_eq(ec->code, PN_IO_ERROR_PARSE);
  rm_rf(dir);
}
END_TEST

/* A key written twice: cJSON keeps both members and lookups find the first, so the second was
 * silently ignored. Refused in every object penumbra reads, at the second one's pointer. */
START_TEST(test_json_duplicates)
{
  g_autofree char *dir   = tmp_dir();
  g_autofree char *cpath = write_text(
      dir, "c.json",
      "{\"schema_version\": 1, \"kind\": \"gemm\", \"results\": [{\"m\": 8, \"n\": 8, \"k\": 8, \"median_ns\": 5, "
      "\"median_ns\": 7}]}");
  PnCalData d;
  pn_cal_data_init(&d);
  g_autoptr(GError) ec = NULL;
  ck_assert(!pn_calib_read_results(cpath, &d, NULL, &ec));
  pn_cal_data_clear(&d);
  g_autofree char *wc = g_strdup_printf("%s: /results/0/median_ns: duplicate key", cpath);
  ck_assert_str_eq(ec->message, wc);
  expect_extra_error("\"description\": {\"a\": 1, \"a\": 2}", PN_IO_ERROR_SCHEMA, "/description/a: duplicate key");
  g_autofree char *j = scenario_json(NULL, NULL, NULL, NULL);
  const char *s1[]   = {"env={\"NCCL_NVLS_ENABLE\": 0, \"NCCL_NVLS_ENABLE\": 1}"};
  expect_error(j, s1, 1, PN_IO_ERROR_SCHEMA, "--set: /env/NCCL_NVLS_ENABLE: duplicate key");
  rm_rf(dir);
}
END_TEST

/* A lone UTF-16 surrogate is no character: said so, at its line and column. A pair is fine. */
START_TEST(test_json_surrogate)
{
  expect_error("{\"a\": \"\\ud800\"}", NULL, 0, PN_IO_ERROR_PARSE,
               ":1:8: lone UTF-16 surrogate \\ud800 (a high surrogate, \\ud800-\\udbff, must be followed by a low one, "
               "\\udc00-\\udfff)");
  expect_error("{\"a\": \"x\\uDBFF\\u0041\"}", NULL, 0, PN_IO_ERROR_PARSE,
               ":1:9: lone UTF-16 surrogate \\udbff (a high surrogate, \\ud800-\\udbff, must be followed by a low one, "
               "\\udc00-\\udfff)");
  expect_error("{\"a\":\n \"\\udc00\"}", NULL, 0, PN_IO_ERROR_PARSE,
               ":2:3: lone UTF-16 surrogate \\udc00 (a low surrogate, \\udc00-\\udfff, must follow a high one, "
               "\\ud800-\\udbff)");
  expect_error("{\"\\ud800\": 1}", NULL, 0, PN_IO_ERROR_PARSE, ":1:3: lone UTF-16 surrogate \\ud800*");
  g_autofree char *ok       = scenario_json(NULL, NULL, NULL, "\"description\": \"\\ud83d\\ude00\"");
  g_autoptr(GError) eok     = NULL;
  g_autoptr(PnScenario) sok = load(ok, NULL, 0, NULL, &eok);
  ck_assert_msg(sok != NULL, "%s", eok ? eok->message : "");
}
END_TEST

/* The rest of what cJSON accepts, each accepted on purpose or refused with its place: -0 (zero:
 * a double reads +0), integers beyond 2^53 and numbers that overflow to infinity (refused), text
 * after the top-level value (refused, said so); a byte-order mark is skipped (test_bad_files). */
START_TEST(test_json_acceptances)
{
  g_autofree char *jz2      = scenario_json("{\"base\": \"tiny\", \"hidden_dropout\": -0}", NULL, NULL, NULL);
  g_autoptr(GError) ez2     = NULL;
  g_autoptr(PnScenario) sz2 = load(jz2, NULL, 0, NULL, &ez2);
  ck_assert_msg(sz2 != NULL, "%s", ez2 ? ez2->message : "");
  ck_assert(sz2->model.hidden_dropout == 0.0 && !signbit(sz2->model.hidden_dropout));

  g_autofree char *jh =
      scenario_json(NULL, NULL, "{\"seq_length\": 99999999999999999999999, \"global_batch_size\": 64}", NULL);
  expect_error(jh, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/training/seq_length: expected a positive integer, got 1e+23 (beyond 2^53: absurdly large)");
  g_autofree char *ji = scenario_json(NULL, NULL, "{\"seq_length\": 4096, \"global_batch_size\": -1e999}", NULL);
  expect_error(ji, NULL, 0, PN_IO_ERROR_SCHEMA,
               "/training/global_batch_size: expected a positive integer, got a number out of range (not finite)");

  expect_error("{\"schema_version\": 1} x", NULL, 0, PN_IO_ERROR_PARSE,
               ":1:23: invalid JSON at \"x\": text after the end of the top-level value");
  expect_error("{\"schema_version\": 1}\n{}", NULL, 0, PN_IO_ERROR_PARSE,
               ":2:1: invalid JSON at \"{}\": text after the end of the top-level value");
}
END_TEST

/* ---- hardware profiles ---- */

/* The fixture loads with every field; columns may come in any order. */
START_TEST(test_hw_profile_valid)
{
  g_autofree char *path     = data("hwprofiles/test-gpu.json");
  g_autoptr(GError) e       = NULL;
  g_autoptr(PnHwProfile) hw = pn_hw_profile_load(path, &e);
  ck_assert_msg(hw != NULL, "%s", e ? e->message : "");
  ck_assert_str_eq(hw->name, "test-gpu");
  ck_assert_int_eq(hw->sm_count, 132);
  ck_assert(hw->hbm_bytes == 85899345920.0);
  ck_assert(hw->peak_bf16_flops_per_ns == 989400.0);
  ck_assert(hw->gemm_efficiency == 0.8);
  ck_assert_int_eq(hw->gemm_tile_n, 256);
  ck_assert(hw->kernel_launch_ns == 1000.0);
  /* no "host" section, no compute.kernel_floor_ns: the host model and the floors are off */
  ck_assert(hw->host.kernel_ns == 0.0 && hw->host.sync_ns == 0.0 && hw->host.cpu[0] == '\0');
  ck_assert(hw->kernel_floor_ns[PN_FLOOR_GEMM] == 0.0 && hw->kernel_floor_ns[PN_FLOOR_MEM] == 0.0);
  ck_assert_int_eq(hw->gpus_per_node, 8);
  ck_assert(hw->nic_bytes_per_ns == 46.0);
  ck_assert(hw->nccl_base_latency_ns == 8000.0);
  ck_assert_int_eq(hw->nccl_ctas_net, 24);
  ck_assert_int_eq(hw->nccl_p2p_ctas, 8);
  ck_assert(hw->nccl_cta_bytes_per_ns == 25.0);
  ck_assert_int_eq(hw->gemm_sm_scaling.n, 3);
  ck_assert(!hw->gemm_sm_scaling.log_x);
  ck_assert(hw->gemm_sm_scaling.y[1] == 0.52);
  ck_assert_int_eq(hw->mem_sm_scaling.n, 0);
  ck_assert_int_eq(hw->coll_size_efficiency.n, 3);
  ck_assert(hw->coll_size_efficiency.log_x);
  ck_assert_int_eq(hw->gemm_bf16.n, 2);
  ck_assert_int_eq(hw->gemm_bf16.pts[1].k, 8192);
  ck_assert(hw->gemm_bf16.pts[1].ns == 1390000.0);
  ck_assert_int_eq(hw->gemm_fp8.n, 0);
  ck_assert_int_eq(hw->attn_bf16.n, 1);
  ck_assert_int_eq(hw->attn_bf16.pts[0].kv_heads, 8);
  ck_assert(hw->attn_bf16.pts[0].fwd_ns == 1000000.0);
  ck_assert(hw->attn_bf16.pts[0].bwd_ns == 2500000.0);
  ck_assert_str_eq(hw->calibrated, ""); /* the fixture does not say when it was calibrated */
}
END_TEST

/* "calibrated": the day the calibration data was measured, any calendar day of 2000-2099. */
START_TEST(test_hw_profile_calibrated)
{
  g_autofree char *path = data("hwprofiles/test-gpu.json");
  g_autofree char *text = NULL;
  ck_assert(g_file_get_contents(path, &text, NULL, NULL));
  const char *days[] = {"2026-11-22", "2024-02-29", "2000-01-01", "2099-12-31"};
  for (gsize i = 0; i < G_N_ELEMENTS(days); i++) {
    cJSON *root = cJSON_Parse(text);
    cJSON_AddStringToObject(root, "calibrated", days[i]);
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    g_autofree char *dir = tmp_dir();
    g_autofree char *p   = g_build_filename(dir, "hw.json", NULL);
    write_bytes(p, out, strlen(out));
    cJSON_free(out);
    g_autoptr(GError) e       = NULL;
    g_autoptr(PnHwProfile) hw = pn_hw_profile_load(p, &e);
    ck_assert_msg(hw != NULL, "%s: %s", days[i], e ? e->message : "");
    ck_assert_str_eq(hw->calibrated, days[i]);
    rm_rf(dir);
  }
  ck_assert(!pn_hw_profile_date_ok("2026-11-22T10:19:06Z"));
  ck_assert(!pn_hw_profile_date_ok(""));
}
END_TEST

#define BAD_DAY                                                                                                        \
  "/calibrated: expected the day the calibration data was measured, YYYY-MM-DD from 2000-01-01 to 2099-12-31, got "

/* Each broken variant of the fixture gives its message (file: pointer: what). */
START_TEST(test_hw_profile_errors)
{
  g_autofree char *path = data("hwprofiles/test-gpu.json");
  g_autofree char *text = NULL;
  ck_assert(g_file_get_contents(path, &text, NULL, NULL));
  struct {
    const char *edit; /* "section.key=JSON" replaced in the fixture, or "-section.key" removed */
    const char *rest;
  } cases[] = {
      {"-compute.sm_count", "/compute/sm_count: required key missing"},
      {"compute.sm_count={\"value\": 132}",
       "/compute/sm_count/source: required key missing: every number must carry its source"},
      {"compute.sm_count={\"value\": 132, \"source\": \"\"}", "/compute/sm_count/source: expected a non-empty string*"},
      {"compute.sm_count=132",
       "/compute/sm_count: expected {\"value\": <number>, \"source\": \"...\"}, got a bare number*"},
      {"compute.sm_count={\"value\": 132.5, \"source\": \"x\"}",
       "/compute/sm_count/value: expected an integer from 1 to 16384, got 132.5 (not an integer)"},
      {"compute.sm_count={\"value\": 40000, \"source\": \"x\"}",
       "/compute/sm_count/value: expected an integer from 1 to 16384, got 40000"},
      {"compute.sm_count={\"value\": 132, \"source\": \"x\", \"sorce\": \"y\"}",
       "/compute/sm_count/sorce: unknown key (did you mean \"source\"?)"},
      {"compute.gemm_efficiency={\"value\": 1.5, \"source\": \"x\"}",
       "/compute/gemm_efficiency/value: expected a number in [0.001, 1], got 1.5"},
      {"compute.hbm_bytes_per_ns={\"value\": 0, \"source\": \"x\"}",
       "/compute/hbm_bytes_per_ns/value: expected a number in [0.001, 1e+06], got 0"},
      {"network.nvlink_bytes_per_ns={\"value\": 1e-300, \"source\": \"x\"}",
       "/network/nvlink_bytes_per_ns/value: expected a number in [0.001, 1e+06], got 1e-300"},
      {"compute.hbm_bytes_per_ns={\"value\": \"fast\", \"source\": \"x\"}",
       "/compute/hbm_bytes_per_ns/value: expected a finite number, got \"fast\""},
      {"network.gpus_per_nod={\"value\": 8, \"source\": \"x\"}",
       "/network/gpus_per_nod: unknown key (did you mean \"gpus_per_node\"?)"},
      {"-nccl", "/nccl: required section missing"},
      {"calibration.gemm_sm_scaling={\"x\": [16, 132, 66], \"y\": [1, 1, 1], \"source\": \"x\"}",
       "/calibration/gemm_sm_scaling/x/2: x must be strictly ascending"},
      {"calibration.gemm_sm_scaling={\"x\": [16, 132], \"y\": [1], \"source\": \"x\"}",
       "/calibration/gemm_sm_scaling/y: has 1 points but x has 2"},
      {"calibration.gemm_sm_scaling={\"x\": [16, 132], \"y\": [0.5, 0], \"source\": \"x\"}",
       "/calibration/gemm_sm_scaling/y/1: must be >= 1e-06 (got 0)"},
      {"calibration.coll_size_efficiency={\"x\": [1, 2], \"y\": [0.5, 5e-324], \"source\": \"x\"}",
       "/calibration/coll_size_efficiency/y/1: must be >= 1e-06 (got 4.94066e-324)"},
      {"calibration.gemm_sm_scaling={\"x\": [16, 132], \"y\": [0.5, 1]}",
       "/calibration/gemm_sm_scaling/source: required key missing*"},
      {"calibration.coll_size_efficiency={\"x\": [0, 1], \"y\": [0.5, 1], \"source\": \"x\"}",
       "/calibration/coll_size_efficiency/x/0: must be > 0 (log_x curve)"},
      {"calibration.gemm_bf16={\"columns\": [\"m\", \"n\", \"k\", \"ns\"], \"rows\": [[1, 2, 3]], \"source\": \"x\"}",
       "/calibration/gemm_bf16/rows/0: expected a row of 4 values (m, n, k, ns), got 3 values"},
      {"calibration.gemm_bf16={\"columns\": [\"m\", \"n\", \"kk\", \"ns\"], \"rows\": [], \"source\": \"x\"}",
       "/calibration/gemm_bf16/columns/2: unknown column \"kk\" (did you mean \"k\"?)"},
      {"calibration.gemm_bf16={\"columns\": [\"m\", \"n\", \"ns\"], \"rows\": [], \"source\": \"x\"}",
       "/calibration/gemm_bf16/columns: missing column \"k\" (expected m, n, k, ns)"},
      {"calibration.gemm_bf16={\"columns\": [\"m\", \"n\", \"k\", \"ns\"], \"rows\": [[1, 2, 3, -4]], \"source\": "
       "\"x\"}",
       "/calibration/gemm_bf16/rows/0/3: expected a number in (0, 1e+15], got -4"},
      {"calibration.gemm_bf16={\"columns\": [\"m\", \"n\", \"k\", \"ns\"], \"rows\": [[1, 2.5, 3, 4]], \"source\": "
       "\"x\"}",
       "/calibration/gemm_bf16/rows/0/1: expected a positive integer, got 2.5 (not an integer)"},
      {"calibration.gemm_bf17={}", "/calibration/gemm_bf17: unknown key (did you mean \"gemm_bf16\"?)"},
      {"calibration.nccl_table={\"columns\": [\"collective\", \"ranks\", \"ctas\", \"bytes\", \"ns\"], \"rows\": "
       "[[1, 1, 24, 1024, 9000]], \"source\": \"x\"}",
       "/calibration/nccl_table/rows/0: collective 1, ranks 1: expected collective 1 (all-gather) .. 5 (send/recv) and "
       "2 .. 1024 ranks"},
      {"calibration.nccl_table={\"columns\": [\"collective\", \"ctas\", \"bytes\", \"ns\"], \"rows\": [], "
       "\"source\": \"x\"}",
       "/calibration/nccl_table/columns: missing column \"ranks\" (expected collective, ranks, ctas, bytes, ns)"},
      {"calibration.nccl_pair_table={\"columns\": [\"collective\", \"ctas\", \"bytes\", \"ns\"], \"rows\": [[6, 24, "
       "1024, 9000]], \"source\": \"x\"}",
       "/calibration/nccl_pair_table/rows/0: collective 6, ranks 2: expected collective 1 (all-gather) .. 5 "
       "(send/recv) and 2 .. 1024 ranks"},
      {"calibrated=\"2026-13-01\"", BAD_DAY "\"2026-13-01\""},
      {"calibrated=\"2025-02-29\"", BAD_DAY "\"2025-02-29\""},
      {"calibrated=\"2026-11-2\"", BAD_DAY "\"2026-11-2\""},
      {"calibrated=\"1999-12-31\"", BAD_DAY "\"1999-12-31\""},
      {"calibrated=\"22.11.2026\"", BAD_DAY "\"22.11.2026\""},
      {"calibrated=20261122", BAD_DAY "20261122"},
      {"-name", "/name: required key missing"},
      {"schema_version=3", "/schema_version: unsupported version 3*"},
      /* the host section and the kernel floors: optional keys, each a sourced value */
      {"host={\"kernel_ns\": {\"value\": -1, \"source\": \"x\"}}",
       "/host/kernel_ns/value: expected a number in [0, 1e+09], got -1"},
      {"host={\"kernel_nss\": {\"value\": 1, \"source\": \"x\"}}",
       "/host/kernel_nss: unknown key (did you mean \"kernel_ns\"?)"},
      {"host={\"sync_ns\": 5}",
       "/host/sync_ns: expected {\"value\": <number>, \"source\": \"...\"}, got a bare number*"},
      {"host={\"p2p_ns\": {\"value\": 5}}", "/host/p2p_ns/source: required key missing*"},
      {"host={\"python_loop_ns\": {\"value\": 2e6, \"source\": \"x\"}}",
       "/host/python_loop_ns/value: expected a number in [0, 1e+06], got 2000000"},
      {"host={\"cpu\": {\"value\": 5, \"source\": \"x\"}}", "/host/cpu/value: expected a string*"},
      {"host={\"cpu\": {\"source\": \"x\"}}", "/host/cpu/value: required key missing"},
      {"host={\"cpu\": \"Xeon\"}", "/host/cpu: expected an object, got \"Xeon\""},
      {"host=[]", "/host: expected an object*"},
      {"compute.kernel_floor_ns={\"gemm\": {\"value\": 2e9, \"source\": \"x\"}}",
       "/compute/kernel_floor_ns/gemm/value: expected a number in [0, 1e+09], got 2000000000"},
      {"compute.kernel_floor_ns={\"attn\": {\"value\": 1, \"source\": \"x\"}}",
       "/compute/kernel_floor_ns/attn: unknown key*"},
      {"compute.kernel_floor_ns=5", "/compute/kernel_floor_ns: expected an object, got 5"},
      /* the unfused attention's batched GEMMs and PyTorch kernels (calibration, optional) */
      {"calibration.bmm_bf16={\"columns\": [\"m\", \"n\", \"k\", \"ns\"], \"rows\": [], \"source\": \"x\"}",
       "/calibration/bmm_bf16/columns: missing column \"batch\" (expected batch, m, n, k, ns)"},
      {"calibration.bmm_bf16={\"columns\": [\"batch\", \"m\", \"n\", \"k\", \"ns\"], \"rows\": [[8, 1, 2, 3]], "
       "\"source\": \"x\"}",
       "/calibration/bmm_bf16/rows/0: expected a row of 5 values (batch, m, n, k, ns), got 4 values"},
      {"calibration.torch_kernel_vs_copy={\"softmax_fw\": {\"x\": [1024], \"y\": [0.5], \"source\": \"x\"}}",
       "/calibration/torch_kernel_vs_copy/softmax_fw: unknown key (did you mean \"softmax_fwd\"?)"},
      {"calibration.torch_kernel_vs_copy={\"softmax_fwd\": {\"x\": [0], \"y\": [0.5], \"source\": \"x\"}}",
       "/calibration/torch_kernel_vs_copy/softmax_fwd/x/0: must be > 0 (log_x curve)"},
      {"calibration.torch_kernel_vs_copy={\"dropout_bwd\": {\"x\": [512], \"y\": [1.0]}}",
       "/calibration/torch_kernel_vs_copy/dropout_bwd/source: required key missing*"},
      {"calibration.torch_kernel_vs_copy=[]", "/calibration/torch_kernel_vs_copy: expected an object*"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    cJSON *root = cJSON_Parse(text);
    ck_assert_ptr_nonnull(root);
    const char *edit         = cases[i].edit;
    gboolean del             = edit[0] == '-';
    g_auto(GStrv) kv         = g_strsplit(del ? edit + 1 : edit, "=", 2);
    g_auto(GStrv) path_parts = g_strsplit(kv[0], ".", 2);
    cJSON *obj               = root;
    const char *key          = path_parts[0];
    if (path_parts[1] != NULL) {
      obj = cJSON_GetObjectItemCaseSensitive(root, path_parts[0]);
      key = path_parts[1];
    }
    if (del) {
      cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    } else {
      cJSON *v = cJSON_Parse(kv[1]);
      ck_assert_msg(v != NULL, "bad test value %s", kv[1]);
      if (cJSON_GetObjectItemCaseSensitive(obj, key))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v);
      else
        cJSON_AddItemToObject(obj, key, v);
    }
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    g_autofree char *dir = tmp_dir();
    g_autofree char *p   = g_build_filename(dir, "hw.json", NULL);
    write_bytes(p, out, strlen(out));
    cJSON_free(out);
    g_autoptr(GError) e       = NULL;
    g_autoptr(PnHwProfile) hw = pn_hw_profile_load(p, &e);
    ck_assert_msg(hw == NULL, "case %s loaded", edit);
    assert_one_line(e);
    g_autofree char *want = g_strdup_printf("%s: %s", p, cases[i].rest);
    gsize n               = strlen(want);
    if (want[n - 1] == '*') {
      want[n - 1] = '\0';
      ck_assert_msg(g_str_has_prefix(e->message, want), "got  %s\nwant %s...", e->message, want);
    } else {
      ck_assert_msg(strcmp(e->message, want) == 0, "got  %s\nwant %s", e->message, want);
    }
    rm_rf(dir);
  }
  /* the fixtures in bad/ */
  g_autofree char *p1       = data("bad/profile-no-source.json");
  g_autoptr(GError) e1      = NULL;
  g_autoptr(PnHwProfile) h1 = pn_hw_profile_load(p1, &e1);
  ck_assert_ptr_null(h1);
  ck_assert_msg(strstr(e1->message, ": /compute/sm_count/source: required key missing") != NULL, "%s", e1->message);
  g_autofree char *p2       = data("bad/profile-curve-not-ascending.json");
  g_autoptr(GError) e2      = NULL;
  g_autoptr(PnHwProfile) h2 = pn_hw_profile_load(p2, &e2);
  ck_assert_ptr_null(h2);
  ck_assert_msg(strstr(e2->message, ": /calibration/gemm_sm_scaling/x/2: x must be strictly ascending") != NULL, "%s",
                e2->message);
  /* a scenario whose profile is broken names the profile file */
  g_autofree char *j =
      scenario_json(NULL, "{\"profile\": \"../bad/profile-no-source.json\", \"num_gpus\": 8}", NULL, NULL);
  g_autoptr(GError) e3     = NULL;
  g_autoptr(PnScenario) sc = load(j, NULL, 0, NULL, &e3);
  ck_assert_ptr_null(sc);
  ck_assert_msg(strstr(e3->message, "profile-no-source.json: /compute/sm_count/source:") != NULL, "%s", e3->message);
}
END_TEST
#undef BAD_DAY

/* ---- calibration of the host (kinds launch and host_torch) ---- */

#define HOST_ENV                                                                                                       \
  "\"env\": {\"gpu_name_nvidia_smi\": \"NVIDIA H100 80GB HBM3\", \"sm_count\": 132, \"date_utc\": "                    \
  "\"2026-11-25T04:05:19Z\", \"host_cpu\": \"Test CPU\", \"host_cpus_online\": 8}"

/* gemm_accum rows through calibrate: one bf16 GEMM 4096 x 4096 x 2048 timed at 1000 ns plain, and
 * three accumulating rows into fp32 for it with ratios 1.1, 1.3 and 1.2 (their median 1.2): the
 * bf16-into-fp32 table gets one point, 1000 x 1.2 = 1200 ns, and the simulator prices that wgrad at
 * 1200 ns into fp32 and at the plain 1000 ns into bf16 (no rows: its table stays empty); the
 * writer's profile loads back with the same point. An "into" other than fp32 or bf16 is refused at
 * its row. */
START_TEST(test_calib_gemm_accum)
{
  g_autofree char *dir = tmp_dir();
  g_autofree char *gemm =
      write_text(dir, "gemm.json",
                 "{\"schema_version\": 1, \"kind\": \"gemm\", " HOST_ENV ", \"results\": ["
                 "{\"m\": 4096, \"n\": 4096, \"k\": 2048, \"dtype\": \"bf16\", \"median_ns\": 1000}]}");
  g_autofree char *acc =
      write_text(dir, "gemm_accum.json",
                 "{\"schema_version\": 1, \"kind\": \"gemm_accum\", " HOST_ENV ", \"results\": ["
                 "{\"m\": 4096, \"n\": 4096, \"k\": 2048, \"dtype\": \"bf16\", \"into\": \"fp32\", \"ratio\": 1.1},"
                 "{\"m\": 4096, \"n\": 4096, \"k\": 2048, \"dtype\": \"bf16\", \"into\": \"fp32\", \"ratio\": 1.3},"
                 "{\"m\": 4096, \"n\": 4096, \"k\": 2048, \"dtype\": \"bf16\", \"into\": \"fp32\", \"ratio\": 1.2}]}");
  PnCalData d;
  pn_cal_data_init(&d);
  g_autoptr(GString) prov = g_string_new(NULL);
  g_autoptr(GError) e     = NULL;
  ck_assert_msg(pn_calib_read_results(gemm, &d, prov, &e), "%s", e ? e->message : "");
  ck_assert_msg(pn_calib_read_results(acc, &d, prov, &e), "%s", e ? e->message : "");
  g_autofree char *base    = data("hwprofiles/test-gpu.json");
  g_autoptr(PnHwProfile) p = pn_hw_profile_load(base, &e);
  ck_assert_ptr_nonnull(p);
  PnCalFitted f;
  ck_assert(pn_calib_fit(&d, p, &f, &e));
  ck_assert_int_eq(f.gemm_accum_points[0][1], 1);
  ck_assert_int_eq(f.gemm_accum_points[0][0] + f.gemm_accum_points[1][0] + f.gemm_accum_points[1][1], 0);
  g_autofree char *out = g_build_filename(dir, "out.json", NULL);
  ck_assert_msg(pn_calib_write_profile(base, out, p, &f, prov->str, &e), "%s", e ? e->message : "");
  g_autoptr(PnHwProfile) back = pn_hw_profile_load(out, &e);
  ck_assert_msg(back != NULL, "%s", e ? e->message : "");
  const PnHwProfile *both[] = {p, back};
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(both[i]->gemm_accum[0][1].n, 1);
    ck_assert_double_eq_tol(both[i]->gemm_accum[0][1].pts[0].ns, 1200.0, 1e-9);
    ck_assert_double_eq_tol(pn_cost_gemm_accum_ns(both[i], 4096, 4096, 2048, PN_DT_BF16, PN_DT_FP32, NULL), 1200.0,
                            1e-6);
    ck_assert_double_eq_tol(pn_cost_gemm_accum_ns(both[i], 4096, 4096, 2048, PN_DT_BF16, PN_DT_BF16, NULL), 1000.0,
                            1e-6);
  }
  pn_cal_data_clear(&d);

  g_autofree char *bad =
      write_text(dir, "bad.json",
                 "{\"schema_version\": 1, \"kind\": \"gemm_accum\", " HOST_ENV ", \"results\": ["
                 "{\"m\": 8, \"n\": 8, \"k\": 8, \"dtype\": \"bf16\", \"into\": \"fp16\", \"ratio\": 1.0}]}");
  PnCalData d2;
  pn_cal_data_init(&d2);
  g_clear_error(&e);
  ck_assert(!pn_calib_read_results(bad, &d2, prov, &e));
  ck_assert_msg(strstr(e->message, "/results/0/into: expected \"fp32\" or \"bf16\"") != NULL, "%s", e->message);
  pn_cal_data_clear(&d2);
}
END_TEST

/* mb_torch_mem.py's rows: only the "dropout" ones moving >= 512 MiB are fitted, into the dropout
 * class (x = bytes, y = bytes / ns: 1e9 B in 500000 ns = 2000 B/ns); a 256 MiB dropout row (bound
 * by its Python dispatch) and the other classes' rows are left out, and the HBM figure does not
 * take the dropout class in (it stays the fixture profile's). */
START_TEST(test_calib_torch_mem)
{
  g_autofree char *dir = tmp_dir();
  g_autofree char *tm =
      write_text(dir, "torch_mem.json",
                 "{\"schema_version\": 1, \"kind\": \"torch_mem\", " HOST_ENV ", \"results\": ["
                 "{\"op\": \"bda\", \"cls\": \"dropout\", \"moved_bytes\": 1e9, \"median_ns\": 500000},"
                 "{\"op\": \"bda\", \"cls\": \"dropout\", \"moved_bytes\": 268435456, \"median_ns\": 900000},"
                 "{\"op\": \"clone\", \"cls\": \"copy\", \"moved_bytes\": 1e9, \"median_ns\": 300000}]}");
  PnCalData d;
  pn_cal_data_init(&d);
  g_autoptr(GString) prov = g_string_new(NULL);
  g_autoptr(GError) e     = NULL;
  ck_assert_msg(pn_calib_read_results(tm, &d, prov, &e), "%s", e ? e->message : "");
  ck_assert_int_eq(d.memory->len, 1);
  ck_assert_str_eq(prov->str, ""); /* its curve names its file itself */
  g_autofree char *base    = data("hwprofiles/test-gpu.json");
  g_autoptr(PnHwProfile) p = pn_hw_profile_load(base, &e);
  double hbm               = p->hbm_bytes_per_ns;
  PnCalFitted f;
  ck_assert(pn_calib_fit(&d, p, &f, &e));
  ck_assert_int_eq(p->mem_bandwidth[PN_MEM_DROPOUT].n, 1);
  ck_assert_double_eq_tol(pn_cost_memory_class_ns(p, 1e9, PN_MEM_DROPOUT), 500000.0, 1e-6);
  ck_assert_double_eq(p->hbm_bytes_per_ns, hbm);
  pn_cal_data_clear(&d);
}
END_TEST

/* mb_unfused_attn.py's rows through calibrate into the fixture profile.
 *   bmm rows: QK^T and dP of (batch 8, m 512, n 512, k 64) in 30000 and 26000 ns -> one point at
 *     their median, 28000 ns; PV, dV, dQ, dK of (8, 512, 64, 512) in 20000, 22000, 24000, 40000 ns
 *     -> 23000 ns (the mean of the middle two); the table in (batch, m, n, k) order, so the
 *     simulator prices bmm(8, 512, 512, 64) at 28000 ns, and replaying the rows gives errors
 *     28000 / 30000 - 1 = -6.7% (QK^T) ... 23000 / 40000 - 1 = -42.5% (dK);
 *   mem rows: softmax_fwd at seq 1024 with vs_copy 0.6 and 0.7 (two shapes) -> 0.65, at 2048 0.5;
 *     repeat_interleave at 1024 0.8 -> curves x = (1024, 2048), y = (0.65, 0.5) and (1024), (0.8),
 *     log_x; so 1e9 bytes of softmax at seq 1024 take the copy class's time of 1e9 bytes / 0.65;
 *     an op the fits do not know, a "layer" row and a failed row are left out.
 * The written profile loads back with the same table and curves (its sources name the file, and
 * the provenance of the other tables does not); a later fit of one dropout_fwd row onto it keeps
 * the table and the other kernels' curves. Malformed rows are refused with one line naming them. */
#define BMM_ROW(op, m, n, k, ns)                                                                                       \
  "{\"kind\": \"bmm\", \"op\": \"" op "\", \"batch\": 8, \"m\": " #m ", \"n\": " #n ", \"k\": " #k                     \
  ", \"seq\": 512, \"head_dim\": 64, \"median_ns\": " #ns "}"
/* A kernel moving 1e9 bytes in `ns`; its curve point is the copy class's time for 1e9 bytes over
 * `ns` (the clone's ratio, vs_copy, is carried, not fitted). */
#define MEM_ROW(op, seq, ns)                                                                                           \
  "{\"kind\": \"mem\", \"op\": \"" op "\", \"seq\": " #seq ", \"moved_bytes\": 1e9, \"median_ns\": " #ns ", "          \
  "\"gbps\": 1428.6, \"copy_gbps\": 2500, \"vs_copy\": 0.5}"

/* An unfused_attn result file of `rows` (NULL-terminated) in `dir` (g_free). */
static char *unfused_doc(const char *dir, const char *name, const char *const *rows)
{
  g_autofree char *joined = g_strjoinv(", ", (char **)rows);
  g_autofree char *json =
      g_strdup_printf("{\"schema_version\": 1, \"kind\": \"unfused_attn\", " HOST_ENV ", \"results\": [%s]}", joined);
  return write_text(dir, name, json);
}

START_TEST(test_calib_unfused_attn)
{
  g_autofree char *dir     = tmp_dir();
  const char *const rows[] = {BMM_ROW("qk", 512, 512, 64, 30000),
                              BMM_ROW("pv", 512, 64, 512, 20000),
                              BMM_ROW("dp", 512, 512, 64, 26000),
                              BMM_ROW("dv", 512, 64, 512, 22000),
                              BMM_ROW("dq", 512, 64, 512, 24000),
                              BMM_ROW("dk", 512, 64, 512, 40000),
                              MEM_ROW("softmax_fwd", 1024, 600000),
                              MEM_ROW("softmax_fwd", 1024, 700000),
                              MEM_ROW("softmax_fwd", 2048, 800000),
                              MEM_ROW("repeat_interleave", 1024, 500000),
                              MEM_ROW("fused_softmax", 1024, 400000),
                              "{\"kind\": \"bmm\", \"status\": \"oom\"}",
                              "{\"kind\": \"layer\", \"op\": \"dot_product_attention\", \"seq\": 2048, "
                              "\"fwd_ns\": 1e6, \"bwd_ns\": 2e6}",
                              NULL};
  g_autofree char *ua      = unfused_doc(dir, "unfused_attn.json", rows);
  PnCalData d;
  pn_cal_data_init(&d);
  g_autoptr(GString) prov = g_string_new(NULL);
  g_autoptr(GError) e     = NULL;
  ck_assert_msg(pn_calib_read_results(ua, &d, prov, &e), "%s", e ? e->message : "");
  ck_assert_int_eq(d.bmm->len, 6);
  ck_assert_int_eq(d.torch_kernels->len, 4);
  ck_assert_str_eq(prov->str, ""); /* its table and curves name their file themselves */
  g_autofree char *base    = data("hwprofiles/test-gpu.json");
  g_autoptr(PnHwProfile) p = pn_hw_profile_load(base, &e);
  ck_assert_ptr_nonnull(p);
  PnCalFitted f;
  ck_assert(pn_calib_fit(&d, p, &f, &e));
  ck_assert_int_eq(f.bmm_points, 2);
  ck_assert_int_eq(f.torch_kernel_points[PN_TK_SOFTMAX_FWD], 2);
  ck_assert_int_eq(f.torch_kernel_points[PN_TK_REPEAT_INTERLEAVE], 1);
  g_autofree char *out = g_build_filename(dir, "out.json", NULL);
  ck_assert_msg(pn_calib_write_profile(base, out, p, &f, prov->str, &e), "%s", e ? e->message : "");
  g_autoptr(PnHwProfile) back = pn_hw_profile_load(out, &e);
  ck_assert_msg(back != NULL, "%s", e ? e->message : "");
  const PnHwProfile *both[] = {p, back};
  for (int i = 0; i < 2; i++) {
    const PnHwProfile *q = both[i];
    ck_assert_int_eq(q->bmm_bf16.n, 2);
    const PnGemmPoint *b0 = &q->bmm_bf16.pts[0], *b1 = &q->bmm_bf16.pts[1];
    ck_assert(b0->batch == 8 && b0->m == 512 && b0->n == 64 && b0->k == 512 && b0->ns == 23000.0);
    ck_assert(b1->batch == 8 && b1->m == 512 && b1->n == 512 && b1->k == 64 && b1->ns == 28000.0);
    ck_assert_double_eq_tol(pn_cost_bmm_ns(q, 8, 512, 512, 64, NULL), 28000.0, 1e-6);
    const PnCurve *sm = &q->torch_kernel_vs_copy[PN_TK_SOFTMAX_FWD],
                  *ri = &q->torch_kernel_vs_copy[PN_TK_REPEAT_INTERLEAVE];
    double copy_ns    = pn_cost_memory_class_ns(p, 1e9, PN_MEM_COPY); /* the fit's copy class: the base's */
    ck_assert(sm->n == 2 && sm->log_x && sm->x[0] == 1024 && sm->x[1] == 2048);
    ck_assert_double_eq_tol(sm->y[0], 0.5 * (copy_ns / 600000.0 + copy_ns / 700000.0), 1e-12);
    ck_assert_double_eq_tol(sm->y[1], copy_ns / 800000.0, 1e-12);
    ck_assert(ri->n == 1 && ri->x[0] == 1024);
    ck_assert_double_eq_tol(ri->y[0], copy_ns / 500000.0, 1e-12);
    for (int k = 0; k < PN_TK_N; k++)
      if (k != PN_TK_SOFTMAX_FWD && k != PN_TK_REPEAT_INTERLEAVE)
        ck_assert_int_eq(q->torch_kernel_vs_copy[k].n, 0);
    /* a row's own bytes at its own length price to its time: 1e9 bytes at 2048 take 800 us */
    ck_assert_double_eq_tol(pn_cost_torch_kernel_ns(q, 1e9, PN_TK_SOFTMAX_FWD, 2048), 800000.0, 1e-6);
    ck_assert_double_eq_tol(pn_cost_torch_kernel_ns(q, 1e9, PN_TK_SOFTMAX_FWD, 1024), copy_ns / sm->y[0], 1e-6);
  }
  g_autofree char *text = NULL;
  ck_assert(g_file_get_contents(out, &text, NULL, NULL));
  ck_assert(strstr(text, "mb_unfused_attn.py bmm rows); ") && strstr(text, "unfused_attn.json (NVIDIA H100 80GB HBM3"));

  /* the replay: the table's points exactly; the rows against the median of their shape; the
   * kernels at the copy's time over their curve */
  PnCalCheck c;
  pn_calib_check(&d, back, &c);
  ck_assert_int_eq(c.bmm->len, 2);
  for (guint i = 0; i < c.bmm->len; i++)
    ck_assert_double_eq_tol(g_array_index(c.bmm, double, i), 0.0, 1e-12);
  ck_assert_int_eq(c.bmm_rows->len, 6);
  ck_assert_double_eq_tol(g_array_index(c.bmm_rows, double, 0), 28000.0 / 30000.0 - 1.0, 1e-9);
  ck_assert_double_eq_tol(g_array_index(c.bmm_rows, double, 5), 23000.0 / 40000.0 - 1.0, 1e-9);
  ck_assert_int_eq(c.torch_kernels->len, 4);
  ck_assert_double_eq_tol(g_array_index(c.torch_kernels, double, 0),
                          pn_cost_torch_kernel_ns(back, 1e9, PN_TK_SOFTMAX_FWD, 1024) / 600000.0 - 1.0, 1e-9);
  ck_assert_double_eq_tol(g_array_index(c.torch_kernels, double, 2), 0.0, 1e-9);
  pn_cal_check_clear(&c);
  pn_cal_data_clear(&d);

  /* a fit of one dropout_fwd row onto that profile keeps its table and the other curves */
  const char *const drop_rows[] = {MEM_ROW("dropout_fwd", 4096, 350000), NULL};
  g_autofree char *drop         = unfused_doc(dir, "dropout.json", drop_rows);
  pn_cal_data_init(&d);
  ck_assert_msg(pn_calib_read_results(drop, &d, prov, &e), "%s", e ? e->message : "");
  g_autoptr(PnHwProfile) p2 = pn_hw_profile_load(out, &e);
  ck_assert(pn_calib_fit(&d, p2, &f, &e));
  g_autofree char *out2 = g_build_filename(dir, "out2.json", NULL);
  ck_assert_msg(pn_calib_write_profile(out, out2, p2, &f, prov->str, &e), "%s", e ? e->message : "");
  g_autoptr(PnHwProfile) back2 = pn_hw_profile_load(out2, &e);
  ck_assert_msg(back2 != NULL, "%s", e ? e->message : "");
  ck_assert_int_eq(back2->bmm_bf16.n, 2);
  ck_assert_int_eq(back2->torch_kernel_vs_copy[PN_TK_SOFTMAX_FWD].n, 2);
  ck_assert_int_eq(back2->torch_kernel_vs_copy[PN_TK_REPEAT_INTERLEAVE].n, 1);
  ck_assert_int_eq(back2->torch_kernel_vs_copy[PN_TK_DROPOUT_FWD].n, 1);
  ck_assert_double_eq_tol(pn_cost_torch_kernel_ns(back2, 1e9, PN_TK_DROPOUT_FWD, 4096), 350000.0, 1e-6);
  pn_cal_data_clear(&d);

  /* malformed rows: one line naming the file and the row's JSON path */
  struct {
    const char *row, *rest;
  } bad[] = {
      {"{\"kind\": \"bmm\", \"op\": \"qk\", \"batch\": 8, \"m\": 512, \"n\": 512, \"median_ns\": 1}",
       "/results/0/k: expected an integer from 1 to 1000000000"},
      {"{\"kind\": \"bmm\", \"op\": \"qk\", \"batch\": 0, \"m\": 512, \"n\": 512, \"k\": 64, \"median_ns\": 1}",
       "/results/0/batch: expected an integer from 1 to 1000000000"},
      {"{\"kind\": \"mem\", \"op\": \"softmax_fwd\", \"seq\": 1024.5, \"moved_bytes\": 1, \"median_ns\": 1, "
       "\"vs_copy\": 1}",
       "/results/0/seq: expected an integer from 1 to 1000000000"},
      {"{\"kind\": \"mem\", \"op\": \"softmax_fwd\", \"seq\": 1024, \"moved_bytes\": 1, \"median_ns\": 1, "
       "\"vs_copy\": \"half\"}",
       "/results/0/vs_copy: expected a non-negative number"},
      {"{\"kind\": \"mem\", \"op\": \"softmax_fwd\", \"seq\": 1024, \"moved_bytes\": 1, \"median_ns\": 1e16, "
       "\"vs_copy\": 1}",
       "/results/0/median_ns: 1e+16 ns is absurdly long (at most 1e15)"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++)
    assert_bad_results(dir, "unfused_attn", bad[i].row, bad[i].rest);
  rm_rf(dir);
}
END_TEST
#undef BMM_ROW
#undef MEM_ROW

/* Small launch and host_torch results through calibrate into the fixture profile, stating each
 * derivation (calib.h):
 *   kernel_ns     = h2048 eager host_fwd_ns / kernels_fwd_per_layer = 800 / 10 = 80
 *   kernel_bwd_ns = host_bwd_ns / (kernels_per_layer - kernels_fwd) = 3000 / (26 - 10) = 187.5
 *   collective_ns = median of the async calls but send_recv = median(30, 10, 20) = 20 (the
 *                   blocking all_reduce, 1000, is not one); p2p_ns = send_recv = 70
 *   sync_ns       = torch.cuda.synchronize = 9 (scalar.item, 50, is not it)
 *   graph_layer_fwd_ns / _bwd_ns = graphed_per_layer h2048 host_fwd_ns / host_bwd_ns = 40 / 60
 *   graph_launch_ns = graphed_whole h2048 host_ns x layers = 25 x 4 = 100
 *   module_ns: left as the base profile has it (a published figure, not measurable here: 0 in the
 *   test profile); python_loop_ns = 40.5; cpu = env.host_cpu
 *   kernel_launch_ns = empty stream - empty graph = 1900 - 800 = 1100
 *   floors: GEMM = the smallest GEMM in a graph (64: 2000, not 128: 3000); memory = the smallest
 *   copy in a graph (4096 B: 900); attention = sdpa_causal graph gpu_ns = 6000.
 * The tiny layer and the failed row change nothing. The profile written loads back with the
 * same figures, and its sources name the file and that an H100 measured them (the fixture is
 * another GPU). The replay: the h2048 layer, 10 x 80 + 16 x 187.5 = 3800 = its host_ns (error 0);
 * the tiny one, 5 x 80 + 15 x 187.5 = 3212.5 against 1000 (+221.25%); a 4 KiB copy on a stream,
 * max(900, 4096 / 3000) + 1100 = 2000 against 2000 (0). */
START_TEST(test_calib_host)
{
  g_autofree char *dir    = tmp_dir();
  g_autofree char *launch = write_text(
      dir, "launch.json",
      "{\"schema_version\": 1, \"kind\": \"launch\", " HOST_ENV ", \"results\": ["
      "{\"test\": \"launch_host\", \"api\": \"kernel_empty_1x32\", \"host_ns\": 4000},"
      "{\"test\": \"gpu_floor\", \"class\": \"empty\", \"issue\": \"stream\", \"size\": 0, \"gpu_ns\": 1900},"
      "{\"test\": \"gpu_floor\", \"class\": \"empty\", \"issue\": \"graph\", \"size\": 0, \"gpu_ns\": 800},"
      "{\"test\": \"gpu_floor\", \"class\": \"gemm\", \"issue\": \"graph\", \"size\": 128, \"gpu_ns\": 3000},"
      "{\"test\": \"gpu_floor\", \"class\": \"gemm\", \"issue\": \"graph\", \"size\": 64, \"gpu_ns\": 2000},"
      "{\"test\": \"gpu_floor\", \"class\": \"copy\", \"issue\": \"graph\", \"size\": 4096, \"gpu_ns\": 900},"
      "{\"test\": \"gpu_floor\", \"class\": \"copy\", \"issue\": \"graph\", \"size\": 16384, \"gpu_ns\": 950},"
      "{\"test\": \"gpu_floor\", \"class\": \"copy\", \"issue\": \"stream\", \"size\": 4096, \"gpu_ns\": 2000}]}");
  g_autofree char *host = write_text(
      dir, "host_torch.json",
      "{\"schema_version\": 1, \"kind\": \"host_torch\", " HOST_ENV ", \"results\": ["
      "{\"test\": \"op\", \"op\": \"sdpa_causal\", \"mode\": \"no_grad\", \"host_ns\": 21000, \"gpu_ns\": 21100},"
      "{\"test\": \"op\", \"op\": \"sdpa_causal\", \"mode\": \"graph\", \"host_ns\": 1700, \"gpu_ns\": 6000},"
      "{\"test\": \"op\", \"op\": \"linear\", \"mode\": \"graph\", \"status\": \"failed: x\", \"host_ns\": null},"
      "{\"test\": \"sync\", \"what\": \"torch.cuda.synchronize\", \"host_ns\": 9},"
      "{\"test\": \"sync\", \"what\": \"scalar.item\", \"host_ns\": 50},"
      "{\"test\": \"cpu\", \"what\": \"python_loop\", \"ns_per_iter\": 40.5},"
      "{\"test\": \"collective\", \"call\": \"all_reduce\", \"async_op\": false, \"host_ns\": 1000},"
      "{\"test\": \"collective\", \"call\": \"all_reduce\", \"async_op\": true, \"host_ns\": 30},"
      "{\"test\": \"collective\", \"call\": \"all_gather_into_tensor\", \"async_op\": true, \"host_ns\": 10},"
      "{\"test\": \"collective\", \"call\": \"reduce_scatter_tensor\", \"async_op\": true, \"host_ns\": 20},"
      "{\"test\": \"collective\", \"call\": \"send_recv\", \"async_op\": true, \"host_ns\": 70},"
      "{\"test\": \"layer\", \"size\": \"tiny\", \"variant\": \"eager\", \"layers\": 4, \"host_fwd_ns\": 99999, "
      "\"host_bwd_ns\": 1, \"host_ns\": 1000, \"kernels_per_layer\": 20, \"kernels_fwd_per_layer\": 5},"
      "{\"test\": \"layer\", \"size\": \"h2048\", \"variant\": \"eager\", \"layers\": 4, \"host_fwd_ns\": 800, "
      "\"host_bwd_ns\": 3000, \"host_ns\": 3800, \"gpu_ns\": 5000, \"kernels_per_layer\": 26, "
      "\"kernels_fwd_per_layer\": 10},"
      "{\"test\": \"layer\", \"size\": \"h2048\", \"variant\": \"graphed_per_layer\", \"layers\": 4, "
      "\"host_fwd_ns\": 40, \"host_bwd_ns\": 60, \"host_ns\": 100, \"kernels_per_layer\": null},"
      "{\"test\": \"layer\", \"size\": \"h2048\", \"variant\": \"graphed_whole\", \"layers\": 4, "
      "\"host_fwd_ns\": null, \"host_bwd_ns\": null, \"host_ns\": 25, \"gpu_ns\": 4000}]}");
  PnCalData d;
  pn_cal_data_init(&d);
  g_autoptr(GString) prov = g_string_new(NULL);
  g_autoptr(GError) e     = NULL;
  ck_assert_msg(pn_calib_read_results(launch, &d, prov, &e), "%s", e ? e->message : "");
  ck_assert_msg(pn_calib_read_results(host, &d, prov, &e), "%s", e ? e->message : "");
  ck_assert_str_eq(prov->str, ""); /* their figures name their files themselves */
  g_autofree char *base    = data("hwprofiles/test-gpu.json");
  g_autoptr(PnHwProfile) p = pn_hw_profile_load(base, &e);
  ck_assert(p->host.kernel_ns == 0.0 && p->kernel_floor_ns[PN_FLOOR_GEMM] == 0.0 && p->host.cpu[0] == '\0');
  PnCalFitted f;
  ck_assert(pn_calib_fit(&d, p, &f, &e));
  ck_assert(f.host.kernel && f.host.launch && f.host.graph_whole);
  g_autofree char *out = g_build_filename(dir, "out.json", NULL);
  ck_assert_msg(pn_calib_write_profile(base, out, p, &f, prov->str, &e), "%s", e ? e->message : "");
  g_autoptr(PnHwProfile) back = pn_hw_profile_load(out, &e);
  ck_assert_msg(back != NULL, "%s", e ? e->message : "");
  const PnHwProfile *both[] = {p, back};
  for (int i = 0; i < 2; i++) {
    const PnHwProfile *q = both[i];
    ck_assert(q->host.kernel_ns == 80.0 && q->host.kernel_bwd_ns == 187.5);
    ck_assert(q->host.collective_ns == 20.0 && q->host.p2p_ns == 70.0 && q->host.sync_ns == 9.0);
    ck_assert(q->host.graph_layer_fwd_ns == 40.0 && q->host.graph_layer_bwd_ns == 60.0);
    ck_assert(q->host.graph_launch_ns == 100.0 && q->host.module_ns == 0.0 && q->host.python_loop_ns == 40.5);
    ck_assert_str_eq(q->host.cpu, "Test CPU");
    ck_assert(q->kernel_launch_ns == 1100.0);
    ck_assert(q->kernel_floor_ns[PN_FLOOR_GEMM] == 2000.0 && q->kernel_floor_ns[PN_FLOOR_MEM] == 900.0 &&
              q->kernel_floor_ns[PN_FLOOR_ATTN] == 6000.0);
  }
  g_autofree char *text = NULL;
  ck_assert(g_file_get_contents(out, &text, NULL, NULL));
  cJSON *root            = cJSON_Parse(text);
  const cJSON *kernel    = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "host"), "kernel_ns");
  const char *src        = cJSON_GetObjectItem(kernel, "source")->valuestring;
  g_autofree char *where = g_strdup_printf("from %s (NVIDIA H100 80GB HBM3, 2026-11-25, host CPU Test CPU", host);
  ck_assert_msg(strstr(src, where) && strstr(src, "this profile takes the H100 machine's figures"), "%s", src);
  /* "host" comes before the calibration tables */
  ck_assert_str_eq(cJSON_GetObjectItem(root, "calibration")->prev->string, "host");
  ck_assert_ptr_null(cJSON_GetObjectItem(root, "calibration")->next);
  cJSON_Delete(root);
  PnCalCheck c;
  pn_calib_check(&d, back, &c);
  ck_assert_uint_eq(c.host_layer_fit->len, 1);
  ck_assert_double_eq_tol(g_array_index(c.host_layer_fit, double, 0), 0.0, 1e-12);
  ck_assert_uint_eq(c.host_layer_tiny->len, 1);
  ck_assert_double_eq_tol(g_array_index(c.host_layer_tiny, double, 0), 2.2125, 1e-12);
  ck_assert_uint_eq(c.floor_copy->len, 1);
  ck_assert_double_eq_tol(g_array_index(c.floor_copy, double, 0), 0.0, 1e-12);
  ck_assert_uint_eq(c.floor_gemm->len, 0);
  pn_cal_check_clear(&c);
  pn_cal_data_clear(&d);
  rm_rf(dir);
}
END_TEST

/* Bad host rows: one line naming the file and the row's JSON path. */
START_TEST(test_calib_host_errors)
{
  struct {
    const char *kind, *row, *rest;
  } cases[] = {
      {"host_torch",
       "{\"test\": \"layer\", \"size\": \"h2048\", \"variant\": \"eager\", \"layers\": 0, \"host_ns\": 1}",
       "/results/0/layers: expected an integer from 1 to 1000000000"},
      {"host_torch", "{\"test\": \"layer\", \"layers\": 4, \"host_ns\": 1, \"kernels_per_layer\": \"many\"}",
       "/results/0/kernels_per_layer: expected a non-negative number"},
      {"host_torch", "{\"test\": \"sync\", \"what\": \"torch.cuda.synchronize\", \"host_ns\": -9}",
       "/results/0/host_ns: expected a non-negative number"},
      {"host_torch", "{\"test\": \"cpu\", \"what\": \"python_loop\"}",
       "/results/0/ns_per_iter: expected a non-negative number"},
      {"launch", "{\"test\": \"gpu_floor\", \"class\": \"empty\", \"issue\": \"graph\", \"size\": 0, \"gpu_ns\": 1e16}",
       "/results/0/gpu_ns: 1e+16 ns is absurdly long (at most 1e15)"},
  };
  g_autofree char *dir = tmp_dir();
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++)
    assert_bad_results(dir, cases[i].kind, cases[i].row, cases[i].rest);
  rm_rf(dir);
}
END_TEST

/* A profile read twice in one process comes from the cache the second time: the same values,
 * in memory of its own (freeing or changing one copy leaves the other and later loads alone);
 * the repository's calibrated profile (curves, tables, contention) is compared field by field
 * with a fresh parse. A file rewritten at the same path is parsed anew, even with the same size. */
static void assert_curve_eq(const PnCurve *a, const PnCurve *b)
{
  ck_assert_int_eq(a->n, b->n);
  ck_assert(a->log_x == b->log_x);
  for (int i = 0; i < a->n; i++) {
    ck_assert(a->x != b->x && a->y != b->y);
    ck_assert(a->x[i] == b->x[i] && a->y[i] == b->y[i]);
  }
}

START_TEST(test_hw_profile_cache)
{
  g_autofree char *src  = source_dir();
  g_autofree char *path = g_build_filename(src, "hwprofiles", "h100-sxm.json", NULL);
  g_autoptr(GError) e   = NULL;
  PnHwProfile *a        = pn_hw_profile_load(path, &e);
  ck_assert_msg(a != NULL, "%s", e ? e->message : "");
  PnHwProfile *b = pn_hw_profile_load(path, &e); /* cached */
  ck_assert_ptr_nonnull(b);
  ck_assert_ptr_ne(a, b);
  ck_assert_str_eq(a->name, b->name);
  ck_assert_int_eq(a->sm_count, b->sm_count);
  ck_assert(a->gemm_bf16.n > 0 && a->n_shape_contention > 0 && a->nccl_table.n > 0);
  ck_assert_int_eq(a->gemm_bf16.n, b->gemm_bf16.n);
  ck_assert(memcmp(a->gemm_bf16.pts, b->gemm_bf16.pts, (size_t)a->gemm_bf16.n * sizeof *a->gemm_bf16.pts) == 0);
  ck_assert_int_eq(a->nccl_table.n, b->nccl_table.n);
  ck_assert_int_eq(a->n_contention_points, b->n_contention_points);
  ck_assert_int_eq(a->n_shape_contention, b->n_shape_contention);
  assert_curve_eq(&a->gemm_sm_scaling, &b->gemm_sm_scaling);
  assert_curve_eq(&a->mem_bandwidth[0], &b->mem_bandwidth[0]);
  ck_assert(a->bmm_bf16.n > 0 && a->bmm_bf16.pts != b->bmm_bf16.pts);
  ck_assert_int_eq(a->bmm_bf16.n, b->bmm_bf16.n);
  ck_assert(memcmp(a->bmm_bf16.pts, b->bmm_bf16.pts, (size_t)a->bmm_bf16.n * sizeof *a->bmm_bf16.pts) == 0);
  for (int k = 0; k < PN_TK_N; k++) {
    ck_assert(a->torch_kernel_vs_copy[k].n > 0 && a->torch_kernel_vs_copy[k].log_x);
    assert_curve_eq(&a->torch_kernel_vs_copy[k], &b->torch_kernel_vs_copy[k]);
  }
  for (int i = 0; i < a->n_shape_contention; i++)
    for (int v = 0; v < 2; v++)
      assert_curve_eq(&a->shape_contention[i].curve[v], &b->shape_contention[i].curve[v]);
  b->sm_count = 1; /* the caller's copy only */
  if (b->gemm_bf16.n > 0)
    b->gemm_bf16.pts[0].ns = -1.0;
  pn_hw_profile_free(a);
  PnHwProfile *c = pn_hw_profile_load(path, &e);
  ck_assert_ptr_nonnull(c);
  ck_assert_int_eq(c->sm_count, 132);
  ck_assert(c->gemm_bf16.pts[0].ns > 0.0);
  pn_hw_profile_free(b);
  pn_hw_profile_free(c);

  /* same path, same length, other bytes: parsed again */
  g_autofree char *fixture = data("hwprofiles/test-gpu.json");
  g_autofree char *text    = NULL;
  gsize len                = 0;
  ck_assert(g_file_get_contents(fixture, &text, &len, NULL));
  char *name = strstr(text, "\"sm_count\"");
  ck_assert_ptr_nonnull(name);
  g_autofree char *dir = tmp_dir();
  g_autofree char *p   = g_build_filename(dir, "hw.json", NULL);
  write_bytes(p, text, len);
  g_autoptr(PnHwProfile) d = pn_hw_profile_load(p, &e);
  ck_assert_msg(d != NULL, "%s", e ? e->message : "");
  char *digit = name + strcspn(name, "0123456789"); /* the first digit of the value: changed in place */
  *digit      = *digit == '1' ? '2' : '1';
  write_bytes(p, text, len);
  g_autoptr(PnHwProfile) f = pn_hw_profile_load(p, &e);
  ck_assert_msg(f != NULL, "%s", e ? e->message : "");
  ck_assert_int_ne(d->sm_count, f->sm_count);
  rm_rf(dir);
}
END_TEST

/* ---- reports ---- */

static PnScenario *report_scenario(void)
{
  g_autofree char *path = data("scenarios/tiny-8gpu.json");
  g_autoptr(GError) e   = NULL;
  PnScenario *sc        = pn_scenario_load(path, NULL, 0, NULL, &e);
  ck_assert_msg(sc != NULL, "%s", e ? e->message : "");
  return sc;
}

/* A result filled by hand (not through sim/, so this test needs only io/). */
static void fill_result(PnResult *r)
{
  memset(r, 0, sizeof *r);
  r->iteration_time_s     = 1.2345678912345;
  r->tokens_per_s_per_gpu = 26542.1;
  r->model_tflops_per_gpu = 412.3;
  r->mfu                  = 0.4167;
  for (int c = 0; c < PN_CLASS_N; c++) {
    r->exposed_comm_s[c] = 0.01 * c;
    r->total_comm_s[c]   = 0.1 * c;
  }
  r->bubble_s                  = 0.1;
  r->compute_s                 = 1.0;
  r->memory                    = (PnMemoryEstimate){1, 2, 3, 4, 5, 15, 80, true};
  r->model_flops_per_iteration = 1.234e18;
  r->tokens_per_iteration      = 262144;
  r->data_parallel_size        = 2;
  r->num_microbatches          = 32;
  r->iterations                = 2;
  r->iteration_times_s         = g_array_new(FALSE, TRUE, sizeof(double));
  double t[2]                  = {1.3, 1.2345678912345};
  g_array_append_vals(r->iteration_times_s, t, 2);
  r->stages = g_array_new(FALSE, TRUE, sizeof(PnStageStats));
  for (int s = 0; s < 2; s++) {
    PnStageStats st                = {.compute_s = 1.0, .bubble_s = 0.1 * s, .end_s = 1.2};
    st.exposed_comm_s[PN_CLASS_TP] = 0.02;
    st.total_comm_s[PN_CLASS_TP]   = 0.2;
    g_array_append_val(r->stages, st);
  }
  r->warnings = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(r->warnings, g_strdup("x.json: /a: a \"quoted\"\nwarning\twith\x01 controls"));
  g_ptr_array_add(r->warnings, g_strdup("second"));
  r->tasks          = 1000;
  r->events         = 5000;
  r->sim_wall_s     = 0.123;
  r->cost_fallbacks = 3;
  r->plan           = (PnPlan){.overlap_grad_reduce = true,
                               .bucket_size         = 40000000,
                               .tp_comm_overlap     = true,
                               .cp_comm_type        = PN_CP_ALL_GATHER,
                               .max_connections     = 1};
}

static void free_result(PnResult *r)
{
  g_array_unref(r->iteration_times_s);
  g_array_unref(r->stages);
  g_ptr_array_unref(r->warnings);
}

static const PnReportOptions build = {.version = "1.2.3", .commit = "abc1234-dirty"};

/* The JSON parses back, has every required key, is deterministic, and the timing is opt-in. */
START_TEST(test_report_json)
{
  g_autoptr(PnScenario) sc = report_scenario();
  PnResult r;
  fill_result(&r);
  g_autofree char *a = pn_report_json(sc, &r, &build);
  g_autofree char *b = pn_report_json(sc, &r, &build);
  ck_assert_str_eq(a, b);
  /* the exact layout: two-space indents, closers aligned with their opener's line */
  ck_assert_msg(g_str_has_prefix(a, "{\n  \"schema_version\": 1,\n  \"penumbra\": {\n    \"version\": \"1.2.3\",\n"
                                    "    \"commit\": \"abc1234-dirty\"\n  },\n  \"scenario\": {\n"
                                    "    \"name\": \"tiny-8gpu\",\n"),
                "%s", a);
  /* the profile's name and the day it was calibrated (null: the fixture does not say) */
  ck_assert_msg(strstr(a, "\n    \"precision\": \"bf16\"\n  },\n  \"hardware\": {\n    \"name\": \"test-gpu\",\n"
                          "    \"gpu\": \"Test GPU (io unit-test fixture, not real hardware)\",\n"
                          "    \"calibrated\": null\n  },\n") != NULL,
                "%s", a);
  g_strlcpy(sc->hw->calibrated, "2026-11-20", sizeof sc->hw->calibrated);
  g_autofree char *dated = pn_report_json(sc, &r, &build);
  ck_assert_msg(
      strstr(dated, "(io unit-test fixture, not real hardware)\",\n    \"calibrated\": \"2026-11-20\"\n  },\n") != NULL,
      "%s", dated);
  ck_assert_msg(strstr(a, "\n  \"memory_gib_per_gpu\": 15,\n  \"hbm_gib_per_gpu\": 80,\n  \"fits_in_hbm\": true,\n"
                          "  \"memory\": {\n") != NULL,
                "%s", a);
  ck_assert_msg(strstr(a, "\n  },\n  \"iteration_time_s\": 1.23456789,\n") != NULL, "%s", a);
  ck_assert_msg(strstr(a, "\"iteration_times_s\": [\n    1.3,\n    1.23456789\n  ],\n") != NULL, "%s", a);
  ck_assert_msg(strstr(a, "\"exposed_comm_s\": {\n    \"dp\": 0,\n    \"tp\": 0.01,\n") != NULL, "%s", a);
  ck_assert_msg(g_str_has_suffix(a, "\n    \"second\"\n  ]\n}\n"), "%s", a);
  cJSON *root = cJSON_Parse(a);
  ck_assert_msg(root != NULL, "report is not JSON:\n%s", a);
  const char *numbers[] = {"iteration_time_s",
                           "tokens_per_s_per_gpu",
                           "model_tflops_per_gpu",
                           "mfu",
                           "bubble_s",
                           "compute_s",
                           "memory_gib_per_gpu",
                           "tokens_per_iteration",
                           "model_flops_per_iteration",
                           "schema_version",
                           "iterations"};
  for (gsize i = 0; i < G_N_ELEMENTS(numbers); i++)
    ck_assert_msg(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(root, numbers[i])), "missing %s", numbers[i]);
  ck_assert(cJSON_GetObjectItemCaseSensitive(root, "iteration_time_s")->valuedouble == 1.23456789);
  ck_assert(cJSON_GetObjectItemCaseSensitive(root, "memory_gib_per_gpu")->valuedouble == 15.0);
  const char *classes[]   = {"dp", "tp", "pp", "cp", "ep"};
  const char *per_class[] = {"exposed_comm_s", "total_comm_s"};
  for (gsize k = 0; k < 2; k++) {
    cJSON *o = cJSON_GetObjectItemCaseSensitive(root, per_class[k]);
    ck_assert(cJSON_IsObject(o));
    ck_assert_int_eq(cJSON_GetArraySize(o), 5);
    cJSON *c = o->child;
    for (gsize i = 0; i < 5; i++, c = c->next) /* in PN_CLASS order */
      ck_assert_str_eq(c->string, classes[i]);
  }
  ck_assert(
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "total_comm_s"), "pp")->valuedouble ==
      0.2);
  cJSON *mem          = cJSON_GetObjectItemCaseSensitive(root, "memory");
  const char *mkeys[] = {"weights_gib", "gradients_gib", "optimizer_gib", "activations_gib", "other_gib", "total_gib"};
  for (gsize i = 0; i < G_N_ELEMENTS(mkeys); i++)
    ck_assert_msg(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(mem, mkeys[i])), "memory.%s", mkeys[i]);
  cJSON *scn          = cJSON_GetObjectItemCaseSensitive(root, "scenario");
  const char *skeys[] = {
      "num_gpus",         "tp",        "pp", "vpp", "cp", "ep", "dp", "micro_batch_size", "global_batch_size",
      "num_microbatches", "seq_length"};
  for (gsize i = 0; i < G_N_ELEMENTS(skeys); i++)
    ck_assert_msg(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(scn, skeys[i])), "scenario.%s", skeys[i]);
  ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(scn, "name")->valuestring, "tiny-8gpu");
  ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(scn, "model")->valuestring, "tiny");
  ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(scn, "profile")->valuestring, "test-gpu");
  ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(scn, "precision")->valuestring, "bf16");
  ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(scn, "dp")->valueint, 2);
  ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(scn, "num_microbatches")->valueint, 32);
  cJSON *its = cJSON_GetObjectItemCaseSensitive(root, "iteration_times_s");
  ck_assert(cJSON_IsArray(its) && cJSON_GetArraySize(its) == 2);
  cJSON *stages = cJSON_GetObjectItemCaseSensitive(root, "stages");
  ck_assert(cJSON_IsArray(stages) && cJSON_GetArraySize(stages) == 2);
  cJSON *st1 = cJSON_GetArrayItem(stages, 1);
  ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(st1, "stage")->valueint, 1);
  ck_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(st1, "exposed_comm_s")));
  /* the plan: every registry strategy with a knob, in order, applying as the registry says and
   * on as the plan says; its values */
  cJSON *ov    = cJSON_GetObjectItemCaseSensitive(root, "overlap");
  cJSON *strat = cJSON_GetObjectItemCaseSensitive(ov, "strategies")->child;
  for (size_t i = 0; i < pn_overlap_n_strategies; i++) {
    const PnOverlapStrategy *st = &pn_overlap_strategies[i];
    if (!st->is_on)
      continue;
    ck_assert_msg(strat != NULL, "overlap.strategies lacks %s", st->name);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(strat, "name")->valuestring, st->name);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(strat, "applies")) == st->applies(sc));
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(strat, "on")) == st->is_on(&r.plan));
    strat = strat->next;
  }
  ck_assert_ptr_null(strat);
  ck_assert_msg(strstr(a, "      {\"name\": \"ddp.overlap_grad_reduce\", \"applies\": true, \"on\": true},\n") != NULL,
                "%s", a);
  ck_assert_msg(strstr(a, "      {\"name\": \"ddp.overlap_param_gather\", \"applies\": true, \"on\": false},\n") !=
                    NULL,
                "%s", a);
  ck_assert_msg(strstr(a, "    ],\n    \"bucket_size\": 40000000,\n    \"align_param_gather\": false,\n"
                          "    \"batch_p2p_comm\": false,\n    \"cp_comm_type\": \"all_gather\",\n"
                          "    \"max_connections\": 1,\n    \"data_parallel_sharding_strategy\": null,\n"
                          "    \"tp_comm_overlap_cfg\": \"default\"\n  },\n"
                          "  \"model_flops_per_iteration\": ") != NULL,
                "%s", a);
  cJSON *sim = cJSON_GetObjectItemCaseSensitive(root, "simulator");
  ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(sim, "tasks")->valueint, 1000);
  ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(sim, "cost_fallbacks")->valueint, 3);
  ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(sim, "events"));
  ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(sim, "wall_s"));
  cJSON *warn = cJSON_GetObjectItemCaseSensitive(root, "warnings");
  ck_assert(cJSON_IsArray(warn) && cJSON_GetArraySize(warn) == 2);
  ck_assert_str_eq(cJSON_GetArrayItem(warn, 0)->valuestring, "x.json: /a: a \"quoted\"\nwarning\twith\x01 controls");
  cJSON_Delete(root);

  /* the events and the wall time only on request, at the simulator's end */
  PnReportOptions timed = build;
  timed.timing          = true;
  g_autofree char *c    = pn_report_json(sc, &r, &timed);
  ck_assert_msg(strstr(c, "\"cost_fallbacks\": 3,\n    \"events\": 5000,\n    \"wall_s\": 0.123\n  },\n") != NULL, "%s",
                c);

  /* non-finite numbers become null, -0 prints as 0, empty arrays stay valid; without TP overlap
   * no userbuffers preset, a named one by its name; without options the build is "unknown" */
  r.mfu                  = nan("");
  r.bubble_s             = -0.0;
  r.model_tflops_per_gpu = HUGE_VAL;
  r.memory.fits          = false;
  r.plan.tp_comm_overlap = false;
  g_ptr_array_set_size(r.warnings, 0);
  g_array_set_size(r.stages, 0);
  g_autofree char *d = pn_report_json(sc, &r, NULL);
  cJSON *root3       = cJSON_Parse(d);
  ck_assert_msg(root3 != NULL, "%s", d);
  ck_assert_msg(strstr(d, "\"penumbra\": {\n    \"version\": \"unknown\",\n    \"commit\": \"unknown\"\n  },") != NULL,
                "%s", d);
  ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(root3, "fits_in_hbm")));
  ck_assert(cJSON_IsNull(
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root3, "overlap"), "tp_comm_overlap_cfg")));
  r.plan.tp_comm_overlap = true;
  g_strlcpy(sc->comm_overlap.tp_comm_overlap_cfg, "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192",
            sizeof sc->comm_overlap.tp_comm_overlap_cfg);
  g_autofree char *e = pn_report_json(sc, &r, NULL);
  ck_assert_msg(strstr(e, "\"tp_comm_overlap_cfg\": \"userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192\"\n") != NULL,
                "%s", e);
  ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root3, "mfu")));
  ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root3, "model_tflops_per_gpu")));
  ck_assert_msg(strstr(d, "\"bubble_s\": 0,") != NULL, "%s", d);
  ck_assert_msg(strstr(d, "\"warnings\": []") != NULL, "%s", d);
  cJSON_Delete(root3);
  free_result(&r);
}
END_TEST

/* The text summary has the headline, the comm table, memory, stages and warnings last; the wall
 * time only on request. */
START_TEST(test_report_text)
{
  g_autoptr(PnScenario) sc = report_scenario();
  PnResult r;
  fill_result(&r);
  g_autofree char *t = pn_report_text(sc, &r, NULL);
  const char *must[] = {"tiny-8gpu: tiny on 8 x test-gpu",
                        "iteration time",
                        "1.2346 s",
                        "tokens/s/GPU",
                        "model TFLOP/s/GPU",
                        "MFU",
                        "41.7 %",
                        "communication",
                        "exposed (s)",
                        "hidden",
                        "  tp ",
                        "90.0%",
                        "bubble",
                        "compute",
                        "memory/GPU",
                        "activations",
                        "stage",
                        "iterations (s) 1.3000 1.2346",
                        "simulator: 1000 tasks, 3 kernels priced by roofline\n",
                        "warning: second\n"};
  for (gsize i = 0; i < G_N_ELEMENTS(must); i++)
    ck_assert_msg(strstr(t, must[i]) != NULL, "missing \"%s\" in:\n%s", must[i], t);
  ck_assert(g_str_has_suffix(t, "warning: second\n"));
  ck_assert_msg(strstr(t, "wall") == NULL, "%s", t);
  /* the timing on request, on the simulator's line */
  PnReportOptions timed = {.timing = true};
  g_autofree char *u    = pn_report_text(sc, &r, &timed);
  ck_assert_msg(strstr(u, "\nsimulator: 1000 tasks, 3 kernels priced by roofline, 5000 events, 0.123 s wall\n") != NULL,
                "%s", u);
  free_result(&r);
}
END_TEST

/* What-if: a refused direction shows "-" and its reason in text, null times and the reason in
 * JSON; a knob that ran both ways has its differences and null reasons. */
START_TEST(test_report_what_if)
{
  g_autoptr(PnScenario) sc = report_scenario();
  PnResult r;
  fill_result(&r);
  PnWhatIfKnob knobs[] = {
      {.name = "ddp.overlap_grad_reduce", .now = true, .iteration_time_s = {1.5, 1.25}, .exposed_comm_s = {0.5, 0.125}},
      {.name             = "comm_overlap.overlap_p2p_comm",
       .now              = true,
       .iteration_time_s = {NAN, 1.25},
       .exposed_comm_s   = {NAN, 0.125},
       .refused          = {"/comm_overlap/overlap_p2p_comm: false is not supported", NULL}},
  };
  g_autoptr(GArray) arr = g_array_new(FALSE, FALSE, sizeof(PnWhatIfKnob));
  g_array_append_vals(arr, knobs, G_N_ELEMENTS(knobs));

  g_autofree char *t = pn_report_what_if_text(sc, &r, arr);
  ck_assert_msg(g_str_has_prefix(t, "what-if for "), "%s", t);
  ck_assert_msg(strstr(t, "(baseline 1.2346 s, exposed comm 0.1000 s)\n") != NULL, "%s", t);
  ck_assert_msg(strstr(t, "\nddp.overlap_grad_reduce                          on          1.5000       1.2500      "
                          "-0.2500      -0.3750\n") != NULL,
                "%s", t);
  ck_assert_msg(g_str_has_suffix(t,
                                 "\ncomm_overlap.overlap_p2p_comm                    on               -       1.2500 "
                                 "           -            -\n"
                                 "  off refused: /comm_overlap/overlap_p2p_comm: false is not supported\n"),
                "%s", t);

  g_autofree char *j = pn_report_what_if_json(sc, &r, arr, &build);
  cJSON *root        = cJSON_Parse(j);
  ck_assert_msg(cJSON_IsObject(root), "%s", j);
  ck_assert_msg(g_str_has_prefix(j, "{\n  \"schema_version\": 1,\n  \"penumbra\": {\n    \"version\": \"1.2.3\",\n"
                                    "    \"commit\": \"abc1234-dirty\"\n  },\n  \"baseline\": {\n"),
                "%s", j);
  /* the baseline is the run report's summary: its members, in order, from scenario to overlap */
  g_autofree char *run = pn_report_json(sc, &r, &build);
  cJSON *report        = cJSON_Parse(run);
  cJSON *want          = cJSON_GetObjectItemCaseSensitive(report, "scenario");
  cJSON *got           = cJSON_GetObjectItemCaseSensitive(root, "baseline")->child;
  for (; got != NULL; got = got->next, want = want->next) {
    ck_assert_msg(want != NULL && strcmp(got->string, want->string) == 0 && cJSON_Compare(got, want, true),
                  "baseline.%s differs from the report's", got->string);
    if (strcmp(got->string, "overlap") == 0)
      break;
  }
  ck_assert_msg(got != NULL && got->next == NULL, "the baseline should end with overlap:\n%s", j);
  cJSON_Delete(report);
  cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "knobs");
  ck_assert_msg(cJSON_IsArray(list) && cJSON_GetArraySize(list) == 2, "%s", j);
  ck_assert_msg(
      strstr(j, "\n  \"knobs\": [\n    {\"knob\": \"ddp.overlap_grad_reduce\", \"now\": true, \"off_s\": 1.5, ") !=
          NULL,
      "%s", j);
  cJSON *ran = cJSON_GetArrayItem(list, 0), *refused = cJSON_GetArrayItem(list, 1);
  ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(ran, "knob")->valuestring, "ddp.overlap_grad_reduce");
  ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ran, "now")));
  ck_assert(cJSON_GetObjectItemCaseSensitive(ran, "off_s")->valuedouble == 1.5);
  ck_assert(cJSON_GetObjectItemCaseSensitive(ran, "exposed_on_s")->valuedouble == 0.125);
  ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(ran, "off_refused")));
  ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(ran, "on_refused")));
  ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(refused, "off_s")));
  ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(refused, "exposed_off_s")));
  ck_assert(cJSON_GetObjectItemCaseSensitive(refused, "on_s")->valuedouble == 1.25);
  ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(refused, "off_refused")->valuestring,
                   "/comm_overlap/overlap_p2p_comm: false is not supported");
  ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(refused, "on_refused")));
  cJSON_Delete(root);
  free_result(&r);
}
END_TEST

/* ---- JSON writer ---- */

static gint cmp_names(gconstpointer a, gconstpointer b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names a directory holds, sorted and joined by spaces. */
static char *dir_listing(const char *dir)
{
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GDir) d          = g_dir_open(dir, 0, NULL);
  const char *n;
  while (d != NULL && (n = g_dir_read_name(d)) != NULL)
    g_ptr_array_add(names, g_strdup(n));
  g_ptr_array_sort(names, cmp_names);
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < names->len; i++)
    g_string_append_printf(s, "%s%s", i ? " " : "", (const char *)names->pdata[i]);
  return g_string_free(s, FALSE);
}

/* Block containers indent their members and close on their own line; inline ones stay on one
 * line; empty ones are {} / []; the top-level container ends the text with a newline. */
START_TEST(test_jsonw_layout)
{
  PnJsonWriter *w = pn_jsonw_new(2);
  pn_jsonw_object(w, NULL, PN_JSONW_BLOCK);
  pn_jsonw_int(w, "a", 1);
  pn_jsonw_object(w, "empty", PN_JSONW_BLOCK);
  pn_jsonw_end(w);
  pn_jsonw_array(w, "list", PN_JSONW_BLOCK);
  pn_jsonw_bool(w, NULL, true);
  pn_jsonw_object(w, NULL, PN_JSONW_BLOCK);
  pn_jsonw_string(w, "k", "v");
  pn_jsonw_array(w, "none", PN_JSONW_INLINE);
  pn_jsonw_end(w);
  pn_jsonw_end(w);
  pn_jsonw_end(w);
  pn_jsonw_object(w, "row", PN_JSONW_INLINE);
  pn_jsonw_uint(w, "x", 2);
  pn_jsonw_array(w, "y", PN_JSONW_INLINE);
  pn_jsonw_int(w, NULL, -3);
  pn_jsonw_bool(w, NULL, false);
  pn_jsonw_null(w, NULL);
  pn_jsonw_end(w);
  pn_jsonw_object(w, "z", PN_JSONW_INLINE);
  pn_jsonw_end(w);
  pn_jsonw_end(w);
  pn_jsonw_end(w);
  g_autofree char *text = pn_jsonw_free_to_string(w);
  ck_assert_str_eq(text, "{\n"
                         "  \"a\": 1,\n"
                         "  \"empty\": {},\n"
                         "  \"list\": [\n"
                         "    true,\n"
                         "    {\n"
                         "      \"k\": \"v\",\n"
                         "      \"none\": []\n"
                         "    }\n"
                         "  ],\n"
                         "  \"row\": {\"x\": 2, \"y\": [-3, false, null], \"z\": {}}\n"
                         "}\n");

  /* indent 0: one element a line, unindented (the trace's layout) */
  PnJsonWriter *t = pn_jsonw_new(0);
  pn_jsonw_object(t, NULL, PN_JSONW_INLINE);
  pn_jsonw_string(t, "unit", "ns");
  pn_jsonw_array(t, "events", PN_JSONW_BLOCK);
  for (int i = 0; i < 2; i++) {
    pn_jsonw_object(t, NULL, PN_JSONW_INLINE);
    pn_jsonw_int(t, "id", i);
    pn_jsonw_end(t);
  }
  pn_jsonw_end(t);
  pn_jsonw_end(t);
  g_autofree char *trace = pn_jsonw_free_to_string(t);
  ck_assert_str_eq(trace, "{\"unit\": \"ns\", \"events\": [\n{\"id\": 0},\n{\"id\": 1}\n]}\n");
  cJSON *back = cJSON_Parse(trace);
  ck_assert(back != NULL);
  cJSON_Delete(back);
}
END_TEST

/* Quotes, backslashes and control characters are escaped, in keys as in values; valid UTF-8 is
 * kept and invalid bytes become U+FFFD; the result parses back to the same string. */
START_TEST(test_jsonw_strings)
{
  const char *in  = "q\"b\\n\nr\rt\tc\x01\x1f d\x7f \xc3\xa9";
  PnJsonWriter *w = pn_jsonw_new(2);
  pn_jsonw_object(w, NULL, PN_JSONW_INLINE);
  pn_jsonw_string(w, "s", in);
  pn_jsonw_string(w, "k\"\n", "");
  pn_jsonw_string(w, "bad",
                  "a\xff"
                  "b\xc3");
  pn_jsonw_end(w);
  g_autofree char *text = pn_jsonw_free_to_string(w);
  ck_assert_str_eq(text, "{\"s\": \"q\\\"b\\\\n\\nr\\rt\\tc\\u0001\\u001f d\\u007f \xc3\xa9\", \"k\\\"\\n\": \"\", "
                         "\"bad\": \"a\xef\xbf\xbd"
                         "b\xef\xbf\xbd\"}\n");
  cJSON *back = cJSON_Parse(text);
  ck_assert_msg(back != NULL, "%s", text);
  ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(back, "s")->valuestring, in);
  ck_assert(cJSON_GetObjectItemCaseSensitive(back, "k\"\n") != NULL);
  cJSON_Delete(back);
}
END_TEST

/* 9 significant digits or fixed decimals; -0 as 0; NaN and infinities as null; integers exact
 * to the ends of their range. */
START_TEST(test_jsonw_numbers)
{
  PnJsonWriter *w = pn_jsonw_new(0);
  pn_jsonw_array(w, NULL, PN_JSONW_INLINE);
  pn_jsonw_double(w, NULL, 1.234567891234);
  pn_jsonw_double(w, NULL, 1e-7);
  pn_jsonw_double(w, NULL, 1e21);
  pn_jsonw_double(w, NULL, -0.0);
  pn_jsonw_double(w, NULL, nan(""));
  pn_jsonw_double(w, NULL, HUGE_VAL);
  pn_jsonw_double(w, NULL, -HUGE_VAL);
  pn_jsonw_fixed(w, NULL, 1.5, 3);
  pn_jsonw_fixed(w, NULL, -0.0, 3);
  pn_jsonw_fixed(w, NULL, 2.0 / 3.0, 0);
  pn_jsonw_fixed(w, NULL, nan(""), 3);
  pn_jsonw_int(w, NULL, INT64_MIN);
  pn_jsonw_int(w, NULL, INT64_MAX);
  pn_jsonw_int(w, NULL, 0);
  pn_jsonw_uint(w, NULL, UINT64_MAX);
  pn_jsonw_end(w);
  g_autofree char *text = pn_jsonw_free_to_string(w);
  ck_assert_str_eq(text, "[1.23456789, 1e-07, 1e+21, 0, null, null, null, 1.500, 0.000, 1, null, "
                         "-9223372036854775808, 9223372036854775807, 0, 18446744073709551615]\n");
  /* the largest double in fixed notation fits */
  PnJsonWriter *big = pn_jsonw_new(0);
  pn_jsonw_array(big, NULL, PN_JSONW_INLINE);
  pn_jsonw_fixed(big, NULL, -DBL_MAX, 17);
  pn_jsonw_end(big);
  g_autofree char *bigtext = pn_jsonw_free_to_string(big);
  ck_assert_uint_eq(strlen(bigtext), strlen("[-.]\n") + 309 + 17);
}
END_TEST

/* An output writer streams (past its buffer) the same bytes the in-memory writer makes, counts
 * them, and leaves the file to its output: published by the commit, untouched when abandoned. */
START_TEST(test_jsonw_out)
{
  g_autofree char *dir = tmp_dir();
  g_autofree char *p   = g_build_filename(dir, "out.json", NULL);
  g_autoptr(GError) e  = NULL;
  PnJsonWriter *mem    = pn_jsonw_new(2);
  PnOut *out           = pn_out_open(p, &e);
  ck_assert_msg(out != NULL, "%s", e ? e->message : "");
  PnJsonWriter *file   = pn_jsonw_new_out(out, 2);
  PnJsonWriter *both[] = {mem, file};
  for (int k = 0; k < 2; k++) {
    pn_jsonw_array(both[k], NULL, PN_JSONW_BLOCK);
    for (int i = 0; i < 20000; i++) {
      pn_jsonw_object(both[k], NULL, PN_JSONW_INLINE);
      pn_jsonw_int(both[k], "i", i);
      pn_jsonw_string(both[k], "s", "sixteen bytes...");
      pn_jsonw_end(both[k]);
    }
    pn_jsonw_end(both[k]);
  }
  ck_assert_uint_eq(pn_jsonw_bytes(file), pn_jsonw_bytes(mem));
  g_autofree char *want = pn_jsonw_free_to_string(mem);
  ck_assert_uint_eq(strlen(want), pn_jsonw_bytes(file));
  ck_assert_uint_gt(strlen(want), 4 * PN_JSONW_FLUSH_BYTES);
  /* streamed: all but the last buffer is in the temporary file already */
  const char *staged = pn_out_staged_path(out);
  ck_assert(staged != NULL && g_str_has_prefix(staged, p));
  GStatBuf st;
  ck_assert(g_stat(staged, &st) == 0);
  ck_assert_uint_ge((guint64)st.st_size, strlen(want) - PN_JSONW_FLUSH_BYTES - 4096);
  ck_assert(!g_file_test(p, G_FILE_TEST_EXISTS));
  pn_jsonw_finish(file);
  ck_assert_msg(pn_out_commit(out, &e), "%s", e ? e->message : "");
  g_autofree char *got = NULL;
  ck_assert(g_file_get_contents(p, &got, NULL, NULL));
  ck_assert_str_eq(got, want);
  g_autofree char *after = dir_listing(dir);
  ck_assert_str_eq(after, "out.json");

  /* abandoned: the file keeps its content, the temporary file goes */
  PnOut *out2                  = pn_out_open(p, &e);
  g_autoptr(PnJsonWriter) gone = pn_jsonw_new_out(out2, 2);
  pn_jsonw_object(gone, NULL, PN_JSONW_BLOCK);
  g_clear_pointer(&gone, pn_jsonw_free);
  pn_out_abort(out2);
  g_autofree char *kept = NULL;
  ck_assert(g_file_get_contents(p, &kept, NULL, NULL));
  ck_assert_str_eq(kept, want);
  g_autofree char *after_abort = dir_listing(dir);
  ck_assert_str_eq(after_abort, "out.json");
  rm_rf(dir);
}
END_TEST

/* The trace of a one-task graph, byte for byte: the process and thread names (the streams, the
 * classes' exposed tracks, the bubble), then the task with its label escaped and its times in
 * microseconds, then the counters its SMs change (no span given: no exposed or bubble event). */
START_TEST(test_trace)
{
  g_autoptr(PnGraph) g = pn_graph_new(1);
  PnTask t             = {.gpu        = 0,
                          .stream     = PN_STREAM_TP_COMM,
                          .kind       = PN_TASK_COMM,
                          .cls        = PN_CLASS_TP,
                          .sms        = 16,
                          .chunk      = -1,
                          .layer      = 3,
                          .microbatch = 2,
                          .label      = "ag \"x\""};
  pn_graph_add(g, &t, NULL, 0);
  PnExecResult ex = {.times = g_array_new(FALSE, FALSE, sizeof(PnTaskTime))};
  PnTaskTime tt   = {.start_ns = 1500, .end_ns = 2751};
  g_array_append_val(ex.times, tt);
  g_autofree char *dir  = tmp_dir();
  g_autofree char *path = g_build_filename(dir, "trace.json", NULL);
  g_autoptr(GError) e   = NULL;
  ck_assert_msg(pn_trace_write(path, g, &ex, NULL, NULL, &e), "%s", e ? e->message : "");
  g_autofree char *text = NULL;
  ck_assert(g_file_get_contents(path, &text, NULL, NULL));
  ck_assert_msg(g_str_has_prefix(text, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n"
                                       "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"args\": {\"name\": "
                                       "\"stage 0\"}},\n"
                                       "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": 0, \"args\": "
                                       "{\"name\": \"compute\"}},\n"),
                "%s", text);
  ck_assert_msg(g_str_has_suffix(text, "{\"name\": \"bubble\"}},\n"
                                       "{\"ph\": \"X\", \"name\": \"ag \\\"x\\\"\", \"cat\": \"tp\", \"pid\": 0, "
                                       "\"tid\": 1, \"ts\": 1.500, \"dur\": 1.251, \"args\": {\"id\": 0, \"mb\": 2, "
                                       "\"chunk\": -1, \"layer\": 3, \"sms\": 16}},\n"
                                       "{\"ph\": \"C\", \"name\": \"comm SMs\", \"pid\": 0, \"ts\": 1.500, \"args\": "
                                       "{\"sms\": 16}},\n"
                                       "{\"ph\": \"C\", \"name\": \"link GB/s\", \"pid\": 0, \"ts\": 1.500, \"args\": "
                                       "{\"nvlink\": 0.000, \"nic\": 0.000}},\n"
                                       "{\"ph\": \"C\", \"name\": \"comm SMs\", \"pid\": 0, \"ts\": 2.751, \"args\": "
                                       "{\"sms\": 0}},\n"
                                       "{\"ph\": \"C\", \"name\": \"link GB/s\", \"pid\": 0, \"ts\": 2.751, \"args\": "
                                       "{\"nvlink\": 0.000, \"nic\": 0.000}}\n]}\n"),
                "%s", text);
  cJSON *root = cJSON_Parse(text);
  ck_assert(root != NULL);
  ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "traceEvents")),
                   1 + PN_STREAM_N + PN_CLASS_N + 1 + 1 + 4);
  cJSON_Delete(root);
  g_array_unref(ex.times);
  rm_rf(dir);
}
END_TEST

/* A graph of `n` tasks on one GPU, task i running [1000 i, 1000 i + 1000) ns, labelled "t" (even
 * i) or a 200-character label (odd i, when `long_odd`). */
static PnGraph *row_graph(uint32_t n, bool long_odd, PnExecResult *ex)
{
  static char long_label[201];
  memset(long_label, 'x', 200);
  PnGraph *g = pn_graph_new(1);
  ex->times  = g_array_new(FALSE, FALSE, sizeof(PnTaskTime));
  for (uint32_t i = 0; i < n; i++) {
    PnTask t = {.stream = PN_STREAM_COMPUTE,
                .kind   = PN_TASK_COMPUTE,
                .cls    = PN_CLASS_NONE,
                .chunk  = -1,
                .label  = long_odd && i % 2 ? long_label : "t"};
    pn_graph_add(g, &t, NULL, 0);
    PnTaskTime tt = {.start_ns = 1000 * (PnTimeNs)i, .end_ns = 1000 * (PnTimeNs)i + 1000};
    g_array_append_val(ex->times, tt);
  }
  return g;
}

static guint64 file_size(const char *path)
{
  GStatBuf st;
  ck_assert(g_stat(path, &st) == 0);
  return (guint64)st.st_size;
}

/* A trace over its bound is refused before a byte is written, with its estimated size (exact
 * below 4096 tasks); the file already at the path stays as it was and no temporary file is left.
 * A trace of exactly the bound is written. */
START_TEST(test_trace_bound)
{
  PnExecResult ex      = {0};
  g_autoptr(PnGraph) g = row_graph(1000, false, &ex);
  g_autofree char *dir = tmp_dir();
  g_autofree char *ref = g_build_filename(dir, "ref.json", NULL);
  g_autofree char *p   = g_build_filename(dir, "trace.json", NULL);
  g_autoptr(GError) e  = NULL;
  ck_assert_msg(pn_trace_write(ref, g, &ex, NULL, NULL, &e), "%s", e ? e->message : "");
  guint64 size = file_size(ref);
  ck_assert(g_file_set_contents(p, "old\n", -1, NULL));
  PnTraceOptions opt = {.max_bytes = size - 1};
  ck_assert(!pn_trace_write(p, g, &ex, NULL, &opt, &e));
  ck_assert(g_error_matches(e, PN_IO_ERROR, PN_IO_ERROR_BOUND));
  ck_assert(size > 1024 && size < 1024 * 1024);
  g_autofree char *size_text = g_strdup_printf("%.1f KiB", (double)size / 1024.0);
  g_autofree char *want =
      g_strdup_printf("%s: the trace would take about %s (1000 events), more than its bound", p, size_text);
  ck_assert_msg(g_str_has_prefix(e->message, want), "%s", e->message);
  g_autofree char *old = NULL;
  ck_assert(g_file_get_contents(p, &old, NULL, NULL));
  ck_assert_str_eq(old, "old\n");
  g_clear_error(&e);
  opt.max_bytes = size;
  ck_assert_msg(pn_trace_write(p, g, &ex, NULL, &opt, &e), "%s", e ? e->message : "");
  ck_assert_uint_eq(file_size(p), size);
  g_autofree char *names = dir_listing(dir);
  ck_assert_str_eq(names, "ref.json trace.json");
  g_array_unref(ex.times);
  rm_rf(dir);
}
END_TEST

/* Past 4096 tasks the size is estimated from a sample (every other task of 10000 here, all short):
 * when the long labels in between take the text past the bound, the writing stops there and the
 * path keeps its old content. */
START_TEST(test_trace_bound_written)
{
  PnExecResult ex      = {0};
  g_autoptr(PnGraph) g = row_graph(10000, true, &ex);
  g_autofree char *dir = tmp_dir();
  g_autofree char *ref = g_build_filename(dir, "ref.json", NULL);
  g_autofree char *p   = g_build_filename(dir, "trace.json", NULL);
  g_autoptr(GError) e  = NULL;
  ck_assert_msg(pn_trace_write(ref, g, &ex, NULL, NULL, &e), "%s", e ? e->message : "");
  ck_assert(g_file_set_contents(p, "old\n", -1, NULL));
  PnTraceOptions opt = {.max_bytes = file_size(ref) * 3 / 4}; /* above the estimate (short labels only) */
  ck_assert(!pn_trace_write(p, g, &ex, NULL, &opt, &e));
  ck_assert(g_error_matches(e, PN_IO_ERROR, PN_IO_ERROR_BOUND));
  g_autofree char *want = g_strdup_printf("%s: the trace (10000 events) passed its bound of ", p);
  ck_assert_msg(g_str_has_prefix(e->message, want), "%s", e->message);
  g_autofree char *old = NULL;
  ck_assert(g_file_get_contents(p, &old, NULL, NULL));
  ck_assert_str_eq(old, "old\n");
  g_autofree char *names = dir_listing(dir);
  ck_assert_str_eq(names, "ref.json trace.json");
  g_array_unref(ex.times);
  rm_rf(dir);
}
END_TEST

/* A window keeps the tasks running at some time in [start, end): here [1500, 3000) ns keeps tasks
 * 1 ([1000, 2000)) and 2 ([2000, 3000)), not 0 nor 3 ([3000, 4000), starting at the end). */
START_TEST(test_trace_window)
{
  PnExecResult ex      = {0};
  g_autoptr(PnGraph) g = row_graph(10, false, &ex);
  g_autofree char *dir = tmp_dir();
  g_autofree char *p   = g_build_filename(dir, "trace.json", NULL);
  g_autoptr(GError) e  = NULL;
  PnTraceOptions opt   = {.window = true, .start_ns = 1500, .end_ns = 3000};
  ck_assert_msg(pn_trace_write(p, g, &ex, NULL, &opt, &e), "%s", e ? e->message : "");
  g_autofree char *text = NULL;
  ck_assert(g_file_get_contents(p, &text, NULL, NULL));
  cJSON *root = cJSON_Parse(text);
  ck_assert(root != NULL);
  const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
  GString *ids        = g_string_new(NULL);
  const cJSON *ev;
  cJSON_ArrayForEach(ev, events)
  {
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
    if (strcmp(cJSON_GetObjectItemCaseSensitive(ev, "ph")->valuestring, "X") == 0)
      g_string_append_printf(ids, "%d ", cJSON_GetObjectItemCaseSensitive(args, "id")->valueint);
  }
  ck_assert_str_eq(ids->str, "1 2 ");
  g_string_free(ids, TRUE);
  cJSON_Delete(root);
  g_array_unref(ex.times);
  rm_rf(dir);
}
END_TEST

/* ---- error domains ---- */

/* The domains carry the names GLib shows for them (G_DEFINE_QUARK's argument, once spaced by
 * clang-format, had made them "pn - io - error - quark"). */
START_TEST(test_error_quarks)
{
  ck_assert_str_eq(g_quark_to_string(PN_IO_ERROR), "pn-io-error-quark");
  ck_assert_str_eq(g_quark_to_string(PN_CALIB_ERROR), "pn-calib-error-quark");
  ck_assert_uint_eq(PN_IO_ERROR, g_quark_from_string("pn-io-error-quark"));
}
END_TEST

/* ---- outputs (io/out.h) ---- */

static char *read_text(const char *path)
{
  char *text = NULL;
  ck_assert_msg(g_file_get_contents(path, &text, NULL, NULL), "%s", path);
  return text;
}

static void assert_out_error(const GError *e, const char *want_prefix)
{
  ck_assert(e != NULL);
  ck_assert(g_error_matches(e, PN_IO_ERROR, PN_IO_ERROR_FILE));
  ck_assert_msg(g_str_has_prefix(e->message, want_prefix), "got:  %s\nwant: %s...", e->message, want_prefix);
  ck_assert(strchr(e->message, '\n') == NULL);
}

/* A new or regular file: created, replaced with its permission bits kept, through a temporary
 * file beside it that is the only thing touched until the commit, and gone after an abort. */
START_TEST(test_out_regular)
{
  g_autofree char *dir = tmp_dir();
  g_autofree char *p   = g_build_filename(dir, "out.json", NULL);
  g_autoptr(GError) e  = NULL;
  ck_assert_msg(pn_out_write_file(p, "first\n", 6, &e), "%s", e ? e->message : "");
  ck_assert_msg(pn_out_write_file(p, "second, longer\n", 15, &e), "%s", e ? e->message : "");
  ck_assert_msg(pn_out_write_file(p, "3", 1, &e), "%s", e ? e->message : "");
  g_autofree char *three = read_text(p);
  ck_assert_str_eq(three, "3");
  ck_assert(g_chmod(p, 0640) == 0);
  PnOut *out = pn_out_open(p, &e);
  ck_assert(out != NULL);
  fprintf(pn_out_file(out), "via %s\n", "FILE");
  pn_out_write(out, "and write\n", 10);
  const char *staged           = pn_out_staged_path(out);
  g_autofree char *staged_name = g_path_get_basename(staged);
  ck_assert_msg(g_str_has_prefix(staged_name, "out.json.") && strlen(staged_name) == strlen("out.json.XXXXXX"), "%s",
                staged_name);
  g_autofree char *staged_text = read_text(staged);
  ck_assert_str_eq(staged_text, "via FILE\nand write\n");
  g_autofree char *before = read_text(p);
  ck_assert_str_eq(before, "3");
  ck_assert(pn_out_commit(out, &e));
  g_autofree char *after = read_text(p);
  ck_assert_str_eq(after, "via FILE\nand write\n");
  GStatBuf st;
  ck_assert(g_stat(p, &st) == 0);
  ck_assert_uint_eq(st.st_mode & 0777, 0640);
  out = pn_out_open(p, &e);
  pn_out_write(out, "dropped", 7);
  pn_out_abort(out);
  pn_out_abort(NULL);
  g_autofree char *kept = read_text(p);
  ck_assert_str_eq(kept, "via FILE\nand write\n");
  g_autofree char *names = dir_listing(dir);
  ck_assert_str_eq(names, "out.json");
  rm_rf(dir);
}
END_TEST

/* What cannot be written is refused by the check and the open alike, before anything is created,
 * with the user's path: an empty name, a directory, a missing directory, a path through a file. */
START_TEST(test_out_refused)
{
  g_autofree char *dir  = tmp_dir();
  g_autofree char *sub  = g_build_filename(dir, "sub", NULL);
  g_autofree char *miss = g_build_filename(dir, "no-such-dir", "out.json", NULL);
  g_autofree char *file = g_build_filename(dir, "file", NULL);
  g_autofree char *thru = g_build_filename(file, "out.json", NULL);
  ck_assert(g_mkdir(sub, 0755) == 0);
  ck_assert(g_file_set_contents(file, "x", -1, NULL));
  g_autofree char *no_dir = g_strdup_printf("%s: directory %s/no-such-dir does not exist", miss, dir);
  g_autofree char *is_dir = g_strdup_printf("%s: is a directory, expected a file", sub);
  g_autofree char *not_d  = g_strdup_printf("%s: cannot write: ", thru);
  const struct {
    const char *path, *want;
  } cases[] = {{"", "\"\": expected a file name"}, {sub, is_dir}, {miss, no_dir}, {thru, not_d}};
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) e1 = NULL;
    g_autoptr(GError) e2 = NULL;
    ck_assert(!pn_out_check_path(cases[i].path, &e1));
    assert_out_error(e1, cases[i].want);
    ck_assert(pn_out_open(cases[i].path, &e2) == NULL);
    ck_assert_str_eq(e2->message, e1->message);
  }
  ck_assert(pn_out_check_path("-", NULL));
  g_autofree char *names = dir_listing(dir);
  ck_assert_str_eq(names, "file sub");
  rm_rf(dir);
}
END_TEST

/* A link is followed: a regular target is replaced in its own directory and the link stays; a
 * link to nothing creates its target; a link to a directory or a loop of links is refused. */
START_TEST(test_out_links)
{
  g_autofree char *dir    = tmp_dir();
  g_autofree char *real   = g_build_filename(dir, "real.json", NULL);
  g_autofree char *link   = g_build_filename(dir, "link.json", NULL);
  g_autofree char *dang   = g_build_filename(dir, "dangling.json", NULL);
  g_autofree char *to_dir = g_build_filename(dir, "to-dir", NULL);
  g_autofree char *loop   = g_build_filename(dir, "loop", NULL);
  ck_assert(g_file_set_contents(real, "old", -1, NULL));
  ck_assert(symlink("real.json", link) == 0);
  ck_assert(symlink("made.json", dang) == 0);
  ck_assert(symlink(".", to_dir) == 0);
  ck_assert(symlink("loop", loop) == 0);
  g_autoptr(GError) e = NULL;
  ck_assert_msg(pn_out_write_file(link, "new", 3, &e), "%s", e ? e->message : "");
  g_autofree char *target = g_file_read_link(link, NULL);
  ck_assert_str_eq(target, "real.json");
  g_autofree char *got = read_text(real);
  ck_assert_str_eq(got, "new");
  ck_assert_msg(pn_out_write_file(dang, "made", 4, &e), "%s", e ? e->message : "");
  g_autofree char *made_path = g_build_filename(dir, "made.json", NULL);
  g_autofree char *made      = read_text(made_path);
  ck_assert_str_eq(made, "made");
  ck_assert(g_file_test(dang, G_FILE_TEST_IS_SYMLINK));
  ck_assert(!pn_out_check_path(to_dir, &e));
  g_autofree char *want_dir = g_strdup_printf("%s -> %s/.: is a directory", to_dir, dir);
  assert_out_error(e, want_dir);
  g_clear_error(&e);
  ck_assert(!pn_out_check_path(loop, &e));
  g_autofree char *want_loop = g_strdup_printf("%s: cannot write: too many levels of symbolic links", loop);
  assert_out_error(e, want_loop);
  g_autofree char *names = dir_listing(dir);
  ck_assert_str_eq(names, "dangling.json link.json loop made.json real.json to-dir");
  rm_rf(dir);
}
END_TEST

typedef struct {
  char *path;
  char *got;
} FifoReader;

static gpointer read_fifo(gpointer data)
{
  FifoReader *r = data;
  g_file_get_contents(r->path, &r->got, NULL, NULL);
  return NULL;
}

/* A FIFO is written in place (a reader gets the bytes) and stays a FIFO. */
START_TEST(test_out_fifo)
{
  g_autofree char *dir  = tmp_dir();
  g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
  ck_assert(mkfifo(fifo, 0600) == 0);
  FifoReader r        = {.path = fifo};
  GThread *t          = g_thread_new("fifo", read_fifo, &r);
  g_autoptr(GError) e = NULL;
  PnOut *out          = pn_out_open(fifo, &e);
  ck_assert_msg(out != NULL, "%s", e ? e->message : "");
  ck_assert(pn_out_staged_path(out) == NULL);
  pn_out_write(out, "through the pipe\n", 17);
  ck_assert_msg(pn_out_commit(out, &e), "%s", e ? e->message : "");
  g_thread_join(t);
  ck_assert_str_eq(r.got, "through the pipe\n");
  g_free(r.got);
  GStatBuf st;
  ck_assert(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
  g_autofree char *names = dir_listing(dir);
  ck_assert_str_eq(names, "fifo");
  rm_rf(dir);
}
END_TEST

/* A report directory: created with its parents, reused, its files written atomically; a file at
 * its path, or on the way to it, is refused and left alone. */
START_TEST(test_out_dir)
{
  g_autofree char *dir    = tmp_dir();
  g_autofree char *report = g_build_filename(dir, "a", "b", "report", NULL);
  g_autoptr(GError) e     = NULL;
  ck_assert_msg(pn_out_dir_check_path(report, &e), "%s", e ? e->message : "");
  ck_assert(!g_file_test(report, G_FILE_TEST_EXISTS));
  for (int pass = 0; pass < 2; pass++) {
    g_autoptr(PnOutDir) d = pn_out_dir_open(report, &e);
    ck_assert_msg(d != NULL, "%s", e ? e->message : "");
    ck_assert_str_eq(pn_out_dir_path(d), report);
    PnOut *out = pn_out_dir_file(d, "summary.json", &e);
    ck_assert(out != NULL);
    pn_out_write(out, pass ? "2" : "1", 1);
    ck_assert(pn_out_commit(out, &e));
  }
  g_autofree char *summary_path = g_build_filename(report, "summary.json", NULL);
  g_autofree char *summary      = read_text(summary_path);
  ck_assert_str_eq(summary, "2");
  g_autofree char *listing = dir_listing(report);
  ck_assert_str_eq(listing, "summary.json");

  g_autofree char *file  = g_build_filename(dir, "file", NULL);
  g_autofree char *under = g_build_filename(file, "report", NULL);
  ck_assert(g_file_set_contents(file, "x", -1, NULL));
  ck_assert(pn_out_dir_open(file, &e) == NULL);
  g_autofree char *want_file = g_strdup_printf("%s: is not a directory", file);
  assert_out_error(e, want_file);
  g_clear_error(&e);
  ck_assert(!pn_out_dir_check_path(under, &e));
  g_autofree char *want_under = g_strdup_printf("%s: cannot create it: %s is not a directory", under, file);
  assert_out_error(e, want_under);
  g_clear_error(&e);
  ck_assert(!pn_out_dir_check_path("", &e));
  assert_out_error(e, "\"\": expected a directory name");
  g_autofree char *kept = read_text(file);
  ck_assert_str_eq(kept, "x");
  rm_rf(dir);
}
END_TEST

/* The scenario-key <-> argument table against Megatron-LM's own list: every argument a row writes
 * is one Megatron-LM accepts, with the arity its form needs (a flag, set or unset, takes no
 * value; a value row takes one or more), and every key is one the scenario schema knows (model keys are the
 * model file's). The flag list is sorted, so that lookups by bisection find every entry. */
START_TEST(test_megatron_table)
{
  for (size_t i = 1; i < pn_megatron_n_flags; i++)
    ck_assert_msg(strcmp(pn_megatron_flags[i - 1].name, pn_megatron_flags[i].name) < 0, "%s",
                  pn_megatron_flags[i].name);
  for (size_t i = 0; i < pn_megatron_n_flags; i++)
    ck_assert_ptr_eq(pn_megatron_flag(pn_megatron_flags[i].name), &pn_megatron_flags[i]);
  ck_assert_ptr_null(pn_megatron_flag("--num-layer"));
  for (size_t i = 0; i < pn_megatron_n_args; i++) {
    const PnMegatronArg *a = &pn_megatron_args[i];
    if (!g_str_has_prefix(a->key, "model.")) {
      const char *dot              = strchr(a->key, '.');
      g_autofree char *sec         = g_strndup(a->key, (gsize)(dot - a->key));
      g_autofree const char **keys = pn_scenario_section_keys(sec);
      bool known                   = false;
      for (gsize k = 0; keys != NULL && keys[k] != NULL; k++)
        known |= strcmp(keys[k], dot + 1) == 0;
      ck_assert_msg(known, "%s is no scenario key", a->key);
    }
    if (a->form != PN_MEGATRON_VALUE && a->form != PN_MEGATRON_FLAG && a->form != PN_MEGATRON_NEG_FLAG)
      continue;
    const PnMegatronFlag *f = pn_megatron_flag(a->arg);
    ck_assert_msg(f != NULL, "%s (%s): Megatron-LM rejects it", a->arg, a->key);
    bool takes_value = f->arity >= PN_MEGATRON_ONE_VALUE;
    ck_assert_msg(takes_value == (a->form == PN_MEGATRON_VALUE), "%s: arity %d", a->arg, f->arity);
  }
}
END_TEST

/* A log in Megatron-LM's formats, parsed: two iteration lines (one without throughput), a memory
 * report, a dump whose list, enum, boolean and None values become arguments. */
START_TEST(test_megatron_log)
{
  g_autofree char *path = g_build_filename(g_get_tmp_dir(), "pn-test-megatron.log", NULL);
  const char *text      = "------------------------ arguments ------------------------\n"
                          "  attention_backend ............................... AttnBackend.flash\n"
                          "  bf16 ............................................ True\n"
                          "  cp_comm_type .................................... ['a2a', 'a2a']\n"
                          "  fp8 ............................................. None\n"
                          "  overlap_p2p_comm ................................ False\n"
                          "  swiglu .......................................... False\n"
                          "  world_size ...................................... 16\n"
                          "-------------------- end of arguments ---------------------\n"
                          " [2026-01-01 00:00:00.1] iteration        1/       2 | consumed samples:            8 | "
                          "elapsed time per iteration (ms): 1234.5 | throughput per GPU (TFLOP/s/GPU): 300.1 |\n"
                          "[Rank 3] (after 1 iterations) memory (MB) | allocated: 10.50 | max allocated: 20.25 | "
                          "reserved: 30.00 | max reserved: 40.00\n"
                          "0:  iteration        2/       2 | elapsed time per iteration (ms): 999.0 |\n";
  ck_assert(g_file_set_contents(path, text, -1, NULL));
  g_autoptr(GError) error      = NULL;
  g_autoptr(PnMegatronLog) log = pn_megatron_log_read(path, &error);
  g_unlink(path);
  ck_assert_ptr_nonnull(log);
  ck_assert_int_eq(log->iterations->len, 2);
  const PnMegatronLogIteration *it = &g_array_index(log->iterations, PnMegatronLogIteration, 0);
  ck_assert_int_eq(it->iteration, 1);
  ck_assert_double_eq(it->elapsed_ms, 1234.5);
  ck_assert_double_eq(it->tflops_per_gpu, 300.1);
  it = &g_array_index(log->iterations, PnMegatronLogIteration, 1);
  ck_assert_int_eq(it->iteration, 2);
  ck_assert(isnan(it->tflops_per_gpu));
  ck_assert_int_eq(log->memory->len, 1);
  const PnMegatronLogMemory *m = &g_array_index(log->memory, PnMegatronLogMemory, 0);
  ck_assert_int_eq(m->rank, 3);
  ck_assert_int_eq(m->after_iteration, 1);
  ck_assert_double_eq(m->max_allocated_mib, 20.25);
  ck_assert_double_eq(m->max_reserved_mib, 40.0);
  g_auto(GStrv) args    = pn_megatron_log_args(log);
  g_autofree char *line = g_strjoinv(" ", args);
  ck_assert_str_eq(line, "WORLD_SIZE=16 --attention-backend flash --bf16 --cp-comm-type a2a a2a "
                         "--no-overlap-p2p-communication");
}
END_TEST

static Suite *io_suite(void)
{
  Suite *s = suite_create("io");
  struct {
    const char *name;
    const TTest *test;
  } cases[] = {
      {"inline_defaults", test_inline_defaults},
      {"megatron_table", test_megatron_table},
      {"megatron_log", test_megatron_log},
      {"by_name", test_by_name},
      {"model_base", test_model_base},
      {"model_load", test_model_load},
      {"repo_files", test_repo_files},
      {"schema_errors", test_schema_errors},
      {"numbers", test_numbers},
      {"did_you_mean", test_did_you_mean},
      {"semantic_errors", test_semantic_errors},
      {"warnings", test_warnings},
      {"set_values", test_set_values},
      {"set_model_field", test_set_model_field},
      {"set_errors", test_set_errors},
      {"truncated", test_truncated},
      {"bad_files", test_bad_files},
      {"garbage", test_garbage},
      {"huge_file", test_huge_file},
      {"deep_nesting", test_deep_nesting},
      {"echo_bounded", test_echo_bounded},
      {"json_nul", test_json_nul},
      {"json_duplicates", test_json_duplicates},
      {"json_surrogate", test_json_surrogate},
      {"json_acceptances", test_json_acceptances},
      {"hw_profile_valid", test_hw_profile_valid},
      {"hw_profile_errors", test_hw_profile_errors},
      {"hw_profile_calibrated", test_hw_profile_calibrated},
      {"hw_profile_cache", test_hw_profile_cache},
      {"calib_host", test_calib_host},
      {"calib_gemm_accum", test_calib_gemm_accum},
      {"calib_torch_mem", test_calib_torch_mem},
      {"calib_unfused_attn", test_calib_unfused_attn},
      {"calib_host_errors", test_calib_host_errors},
      {"report_json", test_report_json},
      {"report_text", test_report_text},
      {"report_what_if", test_report_what_if},
      {"jsonw_layout", test_jsonw_layout},
      {"jsonw_strings", test_jsonw_strings},
      {"jsonw_numbers", test_jsonw_numbers},
      {"jsonw_out", test_jsonw_out},
      {"trace", test_trace},
      {"trace_bound", test_trace_bound},
      {"trace_bound_written", test_trace_bound_written},
      {"trace_window", test_trace_window},
      {"out_regular", test_out_regular},
      {"out_refused", test_out_refused},
      {"out_links", test_out_links},
      {"out_fifo", test_out_fifo},
      {"out_dir", test_out_dir},
      {"error_quarks", test_error_quarks},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    TCase *tc = tcase_create(cases[i].name);
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, cases[i].test);
    suite_add_tcase(s, tc);
  }
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(io_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
