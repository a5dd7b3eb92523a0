/* transport_mpi.h: the demo's workers spread over MPI ranks, one worker per
 * rank (worker i on rank i), slot j served by rank j mod M. Between the
 * phases of a step (sim.h) the frames move with MPI collectives:
 *   after push   an all-to-all of worker frames to the slots' owners (the
 *                reduce-scatter pattern of a sharded parameter server)
 *   after serve  an all-gather of the servers' broadcast frames
 * Frame sizes differ per rank and step (sparse codecs), so each exchange
 * first shares the sizes, then the bytes (MPI_Alltoallv / MPI_Allgatherv). */
#ifndef EXAMPLES_TRANSPORT_MPI_H
#define EXAMPLES_TRANSPORT_MPI_H

#include "sim.h"

/* For MPI_COMM_WORLD; the caller has initialized MPI. Returns NULL (after a
 * message) unless the world has exactly `workers` ranks. */
const sim_transport *transport_mpi(int workers);
int transport_mpi_rank(void);

#endif
