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
# A real Nostr relay (PyPI's nostr-relay) for the Nostr provider's end-to-end test, in its own venv:
# its dependencies (SQLAlchemy, uvicorn...) stay out of the test environment.
if [ ! -x .peers/nostr/bin/nostr-relay ]; then
    "$python" -m venv .peers/nostr
    .peers/nostr/bin/python -m pip install --quiet --disable-pip-version-check \
        nostr-relay==1.14 websockets==17.4 coincurve==21.0.0
fi
export RUSTIZ_TEST_NOSTR_RELAY=$PWD/.peers/nostr/bin/nostr-relay
.venv/bin/python build_zipapp.py
RUSTIZ_TEST_SKIP_BUILD=1 exec .venv/bin/python -m pytest "$@"
