/* help.c — what `penumbra` says about itself: --version (the build and the shipped profiles'
 * calibration dates), --help-man (the man page, from the same help text every subcommand prints:
 * each `penumbra COMMAND --help` is run and set in the page, so a subcommand added to main.c's
 * table is documented without more code), and the lists the bash completion asks for. */
#include "cli/cli-private.h"
#include "io/hwprofile.h"
#include "pn_version.h" /* generated at build time (cmake/version.cmake) */

static gint cmp_names(gconstpointer a, gconstpointer b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The profiles in the data directory, sorted: "name" and its calibration date, or why not. */
static void profile_dates(GString *out)
{
  g_autofree char *data     = pn_io_data_dir();
  g_autofree char *dir      = g_build_filename(data, "hwprofiles", NULL);
  g_autoptr(GDir) d         = g_dir_open(dir, 0, NULL);
  g_autoptr(GPtrArray) list = g_ptr_array_new_with_free_func(g_free);
  for (const char *f; d != NULL && (f = g_dir_read_name(d)) != NULL;)
    if (g_str_has_suffix(f, ".json"))
      g_ptr_array_add(list, g_strdup(f));
  g_ptr_array_sort(list, cmp_names);
  g_string_append_printf(out, "hardware profiles (%s):\n", dir);
  for (guint i = 0; i < list->len; i++) {
    g_autofree char *path       = g_build_filename(dir, (const char *)list->pdata[i], NULL);
    g_autoptr(GError) error     = NULL;
    g_autoptr(PnHwProfile) prof = pn_hw_profile_load(path, &error);
    g_autofree char *name       = g_strndup(list->pdata[i], strlen(list->pdata[i]) - strlen(".json"));
    if (prof == NULL)
      g_string_append_printf(out, "  %-16s not readable: %s\n", name, error->message);
    else
      g_string_append_printf(out, "  %-16s calibrated %s\n", name,
                             prof->calibrated[0] ? prof->calibrated : "(no date)");
  }
}

int pn__cli_version(void)
{
  g_autoptr(GString) out = g_string_new(NULL);
#ifdef PN_MPI
  g_string_append_printf(out, "penumbra %s (%s) with MPI\n", PN_VERSION, PN_GIT_COMMIT);
#else
  g_string_append_printf(out, "penumbra %s (%s)\n", PN_VERSION, PN_GIT_COMMIT);
#endif
  profile_dates(out);
  fputs(out->str, stdout);
  return 0;
}

/* `text` set verbatim in troff: backslashes escaped, lines that would be requests guarded. */
static void troff_verbatim(GString *out, const char *text)
{
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_string_append(out, ".nf\n");
  for (char **l = lines; *l; l++) {
    if (**l == '\0' && l[1] == NULL)
      break;
    if (**l == '.' || **l == '\'')
      g_string_append(out, "\\&");
    for (const char *c = *l; *c; c++)
      if (*c == '\\')
        g_string_append(out, "\\e");
      else if (*c == '-')
        g_string_append(out, "\\-");
      else
        g_string_append_c(out, *c);
    g_string_append_c(out, '\n');
  }
  g_string_append(out, ".fi\n");
}

/* `penumbra COMMAND --help` of this very binary. */
static char *command_help(const char *name)
{
  char *argv[]          = {"/proc/self/exe", (char *)name, "--help", NULL};
  char *text            = NULL;
  g_autoptr(GError) err = NULL;
  g_autofree char *errs = NULL;
  if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &text, &errs, NULL, &err))
    return g_strdup_printf("(penumbra %s --help could not be run: %s)\n", name, err->message);
  return text;
}

int pn__cli_help_man(const PnCliCommand *commands, size_t n)
{
  g_autoptr(GString) out = g_string_new(NULL);
  g_string_append_printf(out, ".TH PENUMBRA 1 \"\" \"penumbra %s\" \"User Commands\"\n", PN_VERSION);
  g_string_append(out, ".SH NAME\npenumbra \\- predict the step time and exposed communication of Megatron-Core "
                       "training\n.SH SYNOPSIS\n.B penumbra\n.I COMMAND\n[\\fIOPTIONS\\fR] ...\n.br\n"
                       ".B penumbra\n\\-\\-help | \\-\\-version\n.SH DESCRIPTION\n"
                       "penumbra is a discrete-event simulator of Megatron-Core training on GPU clusters: it "
                       "predicts the iteration time, where it goes (compute, exposed communication per "
                       "parallelism, pipeline bubble) and the memory per GPU, from a scenario file, a "
                       "Megatron-LM command line or a training log.\n.SH COMMANDS\n");
  for (size_t i = 0; i < n; i++) {
    g_string_append_printf(out, ".SS %s\n%s\n", commands[i].name, commands[i].summary);
    g_autofree char *help = command_help(commands[i].name);
    troff_verbatim(out, help);
  }
  g_string_append(out, ".SH EXIT STATUS\n");
  troff_verbatim(out, PN_CLI_EXIT_STATUS);
  g_string_append(out, ".SH ENVIRONMENT\n.TP\n.B PENUMBRA_DATA_DIR\nA directory searched first for models/ and "
                       "hwprofiles/.\n.TP\n.B NO_COLOR\npenumbra prints no colour; progress lines on a terminal "
                       "use only carriage returns and line erasure.\n.SH FILES\n"
                       "The data directory (models/, hwprofiles/, scenarios/): share/penumbra beside the "
                       "installed binary, else the source tree it was built from; \\fBpenumbra \\-\\-data-dir\\fR "
                       "prints it.\n.SH SEE ALSO\nREADME.md in the source tree.\n");
  fputs(out->str, stdout);
  return 0;
}

int pn__cli_list(const char *what, const PnCliCommand *commands, size_t n)
{
  if (strcmp(what, "--list-commands") == 0) {
    for (size_t i = 0; i < n; i++)
      printf("%s\n", commands[i].name);
    return 0;
  }
  g_autofree char *data = pn_io_data_dir();
  printf("%s\n", data);
  return 0;
}
