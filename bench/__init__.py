"""bench.sh's programs and report: rustiz measured beside its peers (uvicorn+starlette, nginx, Postiz).

Rules: standard library only (it runs where the project's .venv may not exist, on the python3 bench.sh
finds); nothing here is packed into rustiz.pyz (build_zipapp.py packs rustiz.py and rustiz_features/ only).
The files beside this one are the programs bench.sh runs: poller.c (the C start-up poller), peer_app.py
(the uvicorn+starlette peer), hostile_bench.py, sched_bench.py and sched_scale.py with bench_receiver.py
(run as scripts, each importing its neighbours from this folder), and the templates nginx.conf,
mcp_call.lua and prisma.config.ts.
"""
