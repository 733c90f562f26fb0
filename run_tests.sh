#!/usr/bin/env bash
# The one test command: a virtual environment with requirements-dev.txt, a fresh dist/rustiz.pyz,
# then pytest against servers started from that .pyz. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
.venv/bin/python build_zipapp.py
RUSTIZ_TEST_SKIP_BUILD=1 exec .venv/bin/python -m pytest "$@"
