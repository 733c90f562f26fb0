"""The MCP rows: `tools/call integrationList` POSTed to /mcp/<key> beside REST GET /public/v1/integrations on
the same server, wrk -t1 -c32 each, for the stdlib rustiz and (when built) the uvloop+orjson one.

Rules: standard library only; wrk drives both loads (bench/mcp_call.lua sets the POST), never a Python
client, which would be slower than the server it measures. Run by bench.sh as `python3 -m bench.mcp`
(see bench/common.py for what it hands over and reads back): records MCP_RPS, MCP_P99, MCP_REST_RPS and
MCP_REST_P99 per row.
"""
import os
import sys

from bench.common import (Context, Ports, Server, check_quiet, get, log, measured_wrk, note, record,
                          stop_on_sigterm, wait_health, wrk, wrk_errors_text)
from bench.loadgen import wrk_summary

MCP_BODY = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"integrationList","arguments":{}}}'
MCP_EXPECTED = ('{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\\"output\\":[]}"}],'
                '"structuredContent":{"output":[]},"isError":false}}')


def mcp_row(context: Context, row: str, port: int, command: list, env: dict) -> None:
    """One server: the MCP answer checked, a warm-up, the MCP load, then the REST load."""
    check_quiet(f"{row}.mcp")
    log(f"MCP load: {context.labels.get(row, row)} on :{port}")
    server = Server(command, context.raw(f"{row}.mcp.server.log"), context.server_ttl, env)
    try:
        if not wait_health(port, server, 30):
            note(f"{row}: not ready within 30 s for the MCP rows")
            return
        body = get(port, f"/mcp/{context.key}", {"Content-Type": "application/json"}, MCP_BODY.encode()).rstrip("\n")
        if body != MCP_EXPECTED:
            note(f"{row}: MCP tools/call integrationList answered '{body}'")
        url, script = f"http://127.0.0.1:{port}/mcp/{context.key}", os.path.join(context.files, "mcp_call.lua")
        wrk(["-c32", "-d1s", "-s", script], url, context.raw(f"{row}.mcp.warmup.txt"), 30)
        output_path = context.raw(f"{row}.mcp.wrk-c32.txt")
        wrk(["-c32", f"-d{context.duration}s", "--latency", "-s", script], url, output_path, context.duration + 20)
        with open(output_path, encoding="utf-8", errors="replace") as written:
            mcp = wrk_summary(written.read())
        errors = wrk_errors_text(output_path)
        if errors:
            note(f"{row}: MCP wrk: {errors}")
        rest = measured_wrk(context, f"{row}.mcp-rest", port, 32, [f"Authorization: Bearer {context.key}"])
        for array, figure in (("MCP_RPS", mcp.requests_per_second), ("MCP_P99", mcp.p99_ms),
                              ("MCP_REST_RPS", rest.requests_per_second), ("MCP_REST_P99", rest.p99_ms)):
            record(array, row, figure)
    finally:
        server.stop()


def main() -> int:
    stop_on_sigterm()
    context = Context.from_environment()
    ports = Ports(context.first_port)
    builds = [("rz_std", context.pyz, {"RUSTIZ_NO_SPEEDUPS": "1"})]
    if context.pyz_fast:
        builds.append(("rz_fast", context.pyz_fast, {}))
    for row, pyz, extra in builds:
        port = ports.free()
        env = {**os.environ, **context.rustiz_env, "PORT": str(port), **extra}
        mcp_row(context, row, port, [context.rustiz_python, pyz, "serve"], env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
