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
# A real Bluesky PDS (npm's @atproto/dev-env, ~3 min and 360 MB the first time) where node and npm
# are installed; without them, or when the install fails, its test is skipped and says why.
export RUSTIZ_TEST_BSKY_DEVENV=${RUSTIZ_TEST_BSKY_DEVENV:-$PWD/.peers/bsky}
if command -v npm >/dev/null && [ ! -d "$RUSTIZ_TEST_BSKY_DEVENV/node_modules/@atproto/dev-env" ]; then
    mkdir -p "$RUSTIZ_TEST_BSKY_DEVENV"
    (cd "$RUSTIZ_TEST_BSKY_DEVENV" && timeout 900 npm install --no-audit --no-fund --loglevel=error \
        @atproto/dev-env@0.3.215 >npm-install.log 2>&1) || echo "run_tests.sh: npm install @atproto/dev-env failed" \
        "(see $RUSTIZ_TEST_BSKY_DEVENV/npm-install.log); the real Bluesky PDS test will be skipped" >&2
fi
# A real OpenID Connect provider (npm's oidc-provider, a few seconds and ~5 MB) for the single sign-on tests,
# where node and npm are installed; without them, or when the install fails, those tests are skipped and say why.
export RUSTIZ_TEST_OIDC_PROVIDER=${RUSTIZ_TEST_OIDC_PROVIDER:-$PWD/.peers/oidc}
if command -v npm >/dev/null && [ ! -d "$RUSTIZ_TEST_OIDC_PROVIDER/node_modules/oidc-provider" ]; then
    mkdir -p "$RUSTIZ_TEST_OIDC_PROVIDER"
    (cd "$RUSTIZ_TEST_OIDC_PROVIDER" && timeout 300 npm install --no-audit --no-fund --loglevel=error \
        oidc-provider@9.13.3 >npm-install.log 2>&1) || echo "run_tests.sh: npm install oidc-provider failed" \
        "(see $RUSTIZ_TEST_OIDC_PROVIDER/npm-install.log); the single sign-on tests will be skipped" >&2
fi
.venv/bin/python build_zipapp.py
# Two workers per core (RUSTIZ_TEST_WORKERS to choose; 0 runs in this process): much of a test's time is waiting
# (a post's date, a retry, a browser): with one per core and one more, the cores were busy under half the time.
# Each file's tests run on one worker: module fixtures (one server for a file) stay shared, and every server and
# fake binds its own port.
# (pytest.ini lists the 25 slowest tests at the end of the log.)
workers=${RUSTIZ_TEST_WORKERS:-$(( $(nproc) * 2 ))}
RUSTIZ_TEST_SKIP_BUILD=1 exec .venv/bin/python -m pytest -n "$workers" --dist loadfile "$@"
