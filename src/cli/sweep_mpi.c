/* sweep_mpi.c — `mpirun -n N penumbra sweep ...`: the accepted layouts are split across the ranks
 * (layout k on rank k mod N), every rank checks the whole space (the check is cheap and the same
 * everywhere, so no list travels), and rank 0 gathers the rows, ranks them and writes exactly
 * the files one process would. Built with -DPN_MPI=ON (Open MPI from Debian); without it, or when
 * not started by mpirun, a sweep is one process. */
#include "cli/cli-private.h"

#ifdef PN_MPI
#include <mpi.h>
#include <stdlib.h>

static bool mpi_on;

void pn__cli_mpi_init(int *argc, char ***argv, int *rank, int *size)
{
  *rank = 0, *size = 1;
  /* only under a launcher: a plain `penumbra sweep` must not pay for (or print from) MPI's start */
  if (g_getenv("OMPI_COMM_WORLD_SIZE") == NULL && g_getenv("PMI_SIZE") == NULL)
    return;
  MPI_Init(argc, argv);
  mpi_on = true;
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
}

void pn__cli_mpi_finalize(void)
{
  if (mpi_on)
    MPI_Finalize();
  mpi_on = false;
}

/* A row on the wire: the struct without its error pointer, then the error's bytes. */
static void pack(GByteArray *out, const PnSweepRow *row)
{
  PnSweepRow copy = *row;
  copy.error      = NULL;
  uint32_t n      = row->error ? (uint32_t)strlen(row->error) : 0;
  g_byte_array_append(out, (const guint8 *)&copy, sizeof copy);
  g_byte_array_append(out, (const guint8 *)&n, sizeof n);
  if (n > 0)
    g_byte_array_append(out, (const guint8 *)row->error, n);
}

void pn__cli_mpi_gather(PnSweepResult *r, int rank, int size)
{
  if (!mpi_on || size == 1)
    return;
  g_autoptr(GByteArray) mine = g_byte_array_new();
  for (guint k = 0; rank != 0 && k < r->rows->len; k++)
    pack(mine, &g_array_index(r->rows, PnSweepRow, k));
  int len = (int)mine->len, interrupted = r->interrupted;
  g_autofree int *lens = rank == 0 ? g_new0(int, size) : NULL, *offs = rank == 0 ? g_new0(int, size) : NULL;
  MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
  int any_interrupted = 0;
  MPI_Reduce(&interrupted, &any_interrupted, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int i = 0; rank == 0 && i < size; i++)
    offs[i] = total, total += lens[i];
  g_autofree guint8 *all = rank == 0 ? g_malloc(MAX(total, 1)) : NULL;
  MPI_Gatherv(mine->data, len, MPI_BYTE, all, lens, offs, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (rank != 0)
    return;
  for (int at = 0; at < total;) {
    PnSweepRow row;
    uint32_t n;
    memcpy(&row, all + at, sizeof row);
    memcpy(&n, all + at + sizeof row, sizeof n);
    row.error = n > 0 ? g_strndup((const char *)all + at + sizeof row + sizeof n, n) : NULL;
    at += (int)(sizeof row + sizeof n + n);
    g_array_append_val(r->rows, row);
    r->simulated++;
  }
  r->interrupted = any_interrupted != 0;
  pn_sweep_rank(r);
}

#else

void pn__cli_mpi_init(int *argc, char ***argv, int *rank, int *size)
{
  (void)argc, (void)argv;
  *rank = 0, *size = 1;
}
void pn__cli_mpi_finalize(void) {}
void pn__cli_mpi_gather(PnSweepResult *r, int rank, int size) { (void)r, (void)rank, (void)size; }

#endif
