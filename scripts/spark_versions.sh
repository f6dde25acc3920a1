#!/usr/bin/env bash
# Runs the Spark tests that apply to one PySpark version, in a venv of its own:
#
#   scripts/spark_versions.sh 3.5.9        # what needs no data source API
#   scripts/spark_versions.sh 4.0.5        # all of tests/spark
#   scripts/spark_versions.sh 4.0.5 -k stream   # extra arguments go to pytest
#
# The venv (.venv-pyspark-VERSION) gets that PySpark, the other requirements of the
# `spark` and `test` extras, and tubemq as a wheel built once by the main .venv (from the
# incremental build directory, so it costs seconds after scripts/bootstrap.sh). PySpark 3
# lacks the Python data source API: there the script runs the tests of what works without
# it (the barrier helper, send_dataframe, the version check); on 4.x the whole tests/spark.
set -euo pipefail
cd "$(dirname "$0")/.."
if (($# < 1)); then
  echo "usage: $0 PYSPARK_VERSION [pytest arguments]" >&2
  exit 2
fi
version=$1
shift
log() { printf '[spark_versions %s] %s\n' "$version" "$*"; }

scripts/bootstrap.sh >/dev/null
log "building the tubemq wheel"
rm -rf build/version-wheels
.venv/bin/python -m pip wheel -q --no-build-isolation --no-deps -Cbuild-dir=build/release \
  -w build/version-wheels .
wheel=$(ls build/version-wheels/tubemq-*.whl)

venv=.venv-pyspark-$version
if [[ ! -x $venv/bin/python ]]; then
  log "creating $venv"
  "${PYTHON:-python3}" -m venv "$venv"
fi
# The extras' requirements, with this PySpark in place of the extra's own.
requirements=$(.venv/bin/python scripts/extras.py spark test | grep -v '^pyspark')
mapfile -t requirements <<<"$requirements"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q "pyspark==$version" "${requirements[@]}"
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel"
log "$("$venv/bin/python" -c 'import pyspark, tubemq; print("pyspark", pyspark.__version__, "tubemq", tubemq.__version__)')"

if [[ $version == 3.* ]]; then
  tests=(tests/spark/test_versions.py tests/spark/test_barrier.py)
else
  tests=(tests/spark)
fi
log "running ${tests[*]}"
# From the repository root, so that pytest finds tests/conftest.py; with the venv's
# interpreter, which the Spark fixtures hand to Spark's Python workers.
exec "$venv/bin/python" -m pytest -q "${tests[@]}" "$@"
