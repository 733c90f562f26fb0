-- tools/call integrationList POSTed to /mcp/<key> (bench.sh's MCP rows; the body is its MCP_BODY)
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"integrationList","arguments":{}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
