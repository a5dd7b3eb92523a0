#!/usr/bin/env bash
# Install what is missing, build only what the chosen demo runs, run it, and
# plot its CSV. Four demos:
#   bash scripts/demo.sh                  M simulated workers train an MLP on
#       Fashion-MNIST with full-precision SGD with momentum and every compressed
#       method (dist-EF-blockSGDM, top-k, SLGS, ScaleCom CLT-k, LAGS-SGD)
#   bash scripts/demo.sh --mpi 4          the same, one worker per MPI rank
#   bash scripts/demo.sh --processes 4    a real multi-process torch DDP job on
#       localhost, the methods through the gradwire DDP hook
#   bash scripts/demo.sh --asylpg         the double-quantization reproduction
#       (AsyFPG, AsyLPG, Sparse-AsyLPG, Acc-AsyLPG: bits until a loss threshold)
# Other arguments go to the demo (see its --help), e.g.
#   bash scripts/demo.sh --quick --methods sgdm,ef
# Each writes its CSV and a plot of it into demo-results/ (MODE.csv, MODE.png;
# MODE-quick.* with --quick; --csv FILE moves the CSV, the plot goes beside it)
# and ends with a summary.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mode=sim
np=0
args=()
csv=""
while [ $# -gt 0 ]; do
    case $1 in
        --processes|--processes=*) mode=ddp; args+=("$1"); [ "$1" = --processes ] && { args+=("$2"); shift; } ;;
        --asylpg) mode=asylpg ;;
        --mpi) mode=mpi; np=${2:?--mpi needs a number of ranks}; shift ;;
        --mpi=*) mode=mpi; np=${1#--mpi=} ;;
        --csv) csv=${2:?--csv needs a file}; shift ;;
        --csv=*) csv=${1#--csv=} ;;
        *) args+=("$1") ;;
    esac
    shift
done
quick=""
for a in "${args[@]}"; do [ "$a" = --quick ] && quick=-quick; done
# A --quick run does not overwrite the full run's results.
[ -n "$csv" ] || { mkdir -p demo-results; csv=demo-results/$mode$quick.csv; }
png=${csv%.csv}.png

plot() {  # PYTHON SCRIPT [ARGS...]: a plot is a bonus; its failure is reported, not fatal
    if "$@" 2>"$csv.plot.log"; then
        echo "plot: $png (CSV: $csv)"
    else
        echo "plot failed (CSV kept: $csv):"; cat "$csv.plot.log"
    fi
    rm -f "$csv.plot.log"
}

# One apt-get run for everything the chosen demo needs (an update each costs).
case $mode in
    sim) ensure_packages "${BASE_PACKAGES[@]}" python3-matplotlib ;;
    mpi) ensure_packages "${BASE_PACKAGES[@]}" python3-matplotlib openmpi-bin libopenmpi-dev ;;
    *) ensure_packages "${BASE_PACKAGES[@]}" swig ;;
esac
case $mode in
    ddp|asylpg)
        build_python_package
        if [ $mode = ddp ]; then
            "$GW_VENV/bin/python" examples/train_fmnist_ddp.py --csv "$csv" "${args[@]}"
            plot "$GW_VENV/bin/python" scripts/plot_demo.py "$csv" "$png" \
                --title "Fashion-MNIST, torch DDP through the gradwire hook"
        else
            "$GW_VENV/bin/python" examples/asylpg_fmnist.py --csv "$csv" "${args[@]}"
            plot "$GW_VENV/bin/python" scripts/plot_asylpg.py "$csv" "$png"
        fi
        ;;
    sim|mpi)
        target=examples/train_fmnist
        [ $mode = mpi ] && target=examples/train_fmnist_mpi
        # Configured like scripts/test.sh's build, but only the demo is built; a
        # build dir set up before MPI was installed learns of it first.
        if [ ! -f build/build.ninja ]; then
            build build -Dwerror=true -- "$target"
        else
            ninja -C build -t query "$target" >/dev/null 2>&1 ||
                meson setup --reconfigure build >/dev/null
            build build -- "$target"
        fi
        if [ $mode = mpi ]; then
            mpirun_args=(-np "$np" --oversubscribe)
            [ "$(id -u)" -eq 0 ] && mpirun_args+=(--allow-run-as-root)
            mpirun "${mpirun_args[@]}" "./build/$target" --workers "$np" --csv "$csv" "${args[@]}"
        else
            "./build/$target" --csv "$csv" "${args[@]}"
        fi
        title="Fashion-MNIST, MLP 784-256-10"
        [ $mode = mpi ] && title+=", $np MPI ranks"
        plot /usr/bin/python3 scripts/plot_demo.py "$csv" "$png" --title "$title"
        ;;
esac
