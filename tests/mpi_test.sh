#!/usr/bin/env bash
# The demo over MPI (one worker per rank, frames moved by MPI_Alltoallv and
# MPI_Allgatherv) against the single-process simulation: for 2 and 4 ranks,
# every parameter-server method must end with the same parameters bit for
# bit (the crc32c column of the summary), the same accuracy and bytes.
set -euo pipefail
local_exe=$1 mpi_exe=$2
source "$(dirname "${BASH_SOURCE[0]}")/mpi_common.sh"
rows() { grep -E '^  (sgdm|ef|topk) +[0-9]' | awk '{print $1, $2, $4, $NF}'; }
for M in 2 4; do
    args=(--quick --methods sgdm,ef,topk --workers "$M" --threads 1)
    want=$("$local_exe" "${args[@]}" 2>/dev/null | rows)
    got=$(mpirun "${mpirun_args[@]}" -np "$M" "$mpi_exe" "${args[@]}" 2>/dev/null | rows)
    echo "M=$M single process:"; echo "$want" | sed 's/^/  /'
    echo "M=$M over MPI:";       echo "$got" | sed 's/^/  /'
    [ "$(echo "$want" | wc -l)" -eq 3 ] || { echo "FAIL: the single-process run did not finish"; exit 1; }
    [ "$got" = "$want" ] || { echo "FAIL: M=$M differs"; exit 1; }
done
echo "MPI runs equal the simulation bit for bit (2 and 4 ranks)"
