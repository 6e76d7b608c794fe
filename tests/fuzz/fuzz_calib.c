/* fuzz_calib.c — libFuzzer harness: microbenchmark result files (pn_calib_read_results, through
 * a temporary file), the input of `penumbra calibrate`.
 *
 * Accepted data is fitted onto the fixture profile tests/data/io/hwprofiles/test-gpu.json (132
 * SMs, like the measured GPUs) and replayed through the cost model (pn_calib_check). A fit that
 * succeeds is written as a calibrated profile and loaded back: what `penumbra calibrate` writes
 * must be a profile penumbra accepts (or the write must fail and leave nothing). */
#include <glib/gstdio.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "calib/calib.h"
#include "fuzz_common.h"
#include "io/calibio.h"
#include "io/hwprofile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  pn_fuzz_init();
  static char *base = NULL, *out = NULL;
  if (base == NULL) {
    base = g_build_filename(pn_fuzz_source_dir(), "tests", "data", "io", "hwprofiles", "test-gpu.json", NULL);
    out  = pn_fuzz_temp_path("calibrated.json");
  }
  const char *path        = pn_fuzz_temp_file(data, size);
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) prov = g_string_new(NULL);
  PnCalData d;
  pn_cal_data_init(&d);
  if (!pn_calib_read_results(path, &d, prov, &error)) {
    g_assert(error != NULL && error->domain == PN_IO_ERROR && strchr(error->message, '\n') == NULL);
    pn_cal_data_clear(&d);
    return 0;
  }
  g_autoptr(PnHwProfile) p = pn_hw_profile_load(base, &error);
  g_assert(p != NULL);
  PnCalCheck check;
  pn_calib_check(&d, p, &check);
  pn_cal_check_clear(&check);
  PnCalFitted fitted;
  if (pn_calib_fit(&d, p, &fitted, &error)) {
    g_unlink(out);
    if (pn_calib_write_profile(base, out, p, &fitted, prov->str, &error)) {
      g_autoptr(PnHwProfile) back = pn_hw_profile_load(out, &error);
      if (back == NULL)
        g_error("penumbra calibrate wrote a profile it cannot load: %s", error->message);
    } else {
      /* refused because the fitted profile would not load: nothing may have been written */
      g_assert(error->domain == PN_IO_ERROR && error->code == PN_IO_ERROR_INVALID);
      g_assert(!g_file_test(out, G_FILE_TEST_EXISTS));
    }
  } else {
    g_assert(error != NULL && strchr(error->message, '\n') == NULL);
  }
  pn_cal_data_clear(&d);
  return 0;
}
