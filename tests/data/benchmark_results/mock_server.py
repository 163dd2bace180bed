"""A stand-in OpenAI-compatible server on 127.0.0.1 for producing benchmark tools' result files
here, where no GPU serves a model (README.md beside this file). It streams the requested number
of tokens ("max_tokens" / "max_completion_tokens") with a step time that grows with the requests
in flight (5 ms + 0.3 ms per running request), so the tools measure a real, load-dependent
TTFT, TPOT and throughput. It is test-data tooling, not part of the package.

    python tests/data/benchmark_results/mock_server.py 8123 120   # port, seconds to live
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STEP_S = 0.005
PER_REQUEST_S = 0.0003
_running = 0
_lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "mock", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        global _running
        length = int(self.headers.get("Content-Length", 0))
        req = json.loads(self.rfile.read(length) or b"{}")
        n = int(req.get("max_completion_tokens") or req.get("max_tokens") or 16)
        chat = self.path.endswith("/chat/completions")
        prompt = req.get("prompt") or " ".join(
            m.get("content", "") if isinstance(m.get("content"), str) else ""
            for m in req.get("messages", [])
        )
        prompt_tokens = max(1, len(str(prompt).split()))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        with _lock:
            _running += 1
        try:
            time.sleep(STEP_S + prompt_tokens * 2e-6)  # the prompt's prefill
            for i in range(n):
                with _lock:
                    busy = _running
                time.sleep(STEP_S + PER_REQUEST_S * busy)
                text = " tok"
                choice = (
                    {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
                )
                choice["finish_reason"] = "length" if i == n - 1 else None
                chunk = {
                    "id": "x",
                    "object": "chat.completion.chunk" if chat else "text_completion",
                    "created": int(time.time()),
                    "model": req.get("model", "mock"),
                    "choices": [choice],
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            usage = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": n,
                "total_tokens": prompt_tokens + n,
            }
            tail = {"id": "x", "object": "chat.completion.chunk", "choices": [], "usage": usage}
            self.wfile.write(f"data: {json.dumps(tail)}\n\ndata: [DONE]\n\n".encode())
            self.wfile.flush()
        finally:
            with _lock:
                _running -= 1
        self.close_connection = True


if __name__ == "__main__":
    port, ttl = int(sys.argv[1]), float(sys.argv[2])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Timer(ttl, server.shutdown).start()
    server.serve_forever()
