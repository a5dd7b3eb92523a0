# Sourced by the MPI demo tests: their skip rules and mpirun's arguments.
if [ "${GW_SANITIZED:-0}" = 1 ]; then
    echo "skipped: sanitizer build (OpenMPI's own allocations trip LeakSanitizer)"; exit 77
fi
command -v mpirun >/dev/null || { echo "skipped: no mpirun"; exit 77; }
mpirun_args=(--oversubscribe)
[ "$(id -u)" -eq 0 ] && mpirun_args+=(--allow-run-as-root)
