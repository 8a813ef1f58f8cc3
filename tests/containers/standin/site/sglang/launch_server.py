"""Stand-in sglang server: loads the model's config.json and serves /health and /generate."""
import argparse
import http.server
import json
import os


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--mem-fraction-static", type=float, default=0.9)
    args = parser.parse_args()
    with open(os.path.join(args.model_path, "config.json")) as file:
        config = json.load(file)

    class Handler(http.server.BaseHTTPRequestHandler):
        def reply(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply(200, {"status": "ok"}) if self.path == "/health" else self.reply(404, {})

        def do_POST(self):
            if self.path != "/generate":
                return self.reply(404, {})
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            words = min(int(request.get("max_tokens", 16)), 8)
            self.reply(200, {"text": request["text"] + " ..." * words,
                             "meta_info": {"model": config.get("model_type", "?")}})

        def log_message(self, *_):
            pass

    http.server.ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
