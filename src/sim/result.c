/* result.c — PnResult lifetime and names. */
#include "sim/result.h"

PnResult *pn_result_new(void)
{
  PnResult *r          = g_new0(PnResult, 1);
  r->iteration_times_s = g_array_new(FALSE, FALSE, sizeof(double));
  r->stages            = g_array_new(FALSE, TRUE, sizeof(PnStageStats));
  r->comm_ops          = g_array_new(FALSE, TRUE, sizeof(PnOpStats));
  r->warnings          = g_ptr_array_new_with_free_func(g_free);
  return r;
}

void pn_result_free(PnResult *r)
{
  if (!r)
    return;
  g_array_unref(r->iteration_times_s);
  g_array_unref(r->stages);
  g_array_unref(r->comm_ops);
  g_ptr_array_unref(r->warnings);
  g_free(r);
}

const char *pn_comm_class_name(PnCommClass c)
{
  static const char *const names[PN_CLASS_N] = {"dp", "tp", "pp", "cp", "ep"};
  return (c >= 0 && c < PN_CLASS_N) ? names[c] : "none";
}
