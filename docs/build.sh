#!/usr/bin/env bash
# Build the documentation site into docs/_build/html with warnings as errors; the examples of examples/
# run during the build. Needs the docs extra: pip install -e ".[docs]". Nothing is downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
export MPLBACKEND=Agg OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONHASHSEED=0
rm -rf docs/_build docs/api docs/auto_examples docs/sg_execution_times.rst  # all written afresh: API pages from the package, examples run
python -m sphinx -W --keep-going -E -b html docs docs/_build/html "$@"
