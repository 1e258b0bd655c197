#!/usr/bin/python3
"""fake-git-http.py PORTFILE LOG - a git smart-HTTP server that refuses
every credential, as a real one does for a wrong token.

It answers `GET /<repo>/info/refs?service=git-receive-pack` (the first
request of a push) with 401 and `WWW-Authenticate: Basic realm="git"`,
with or without an Authorization header, exactly like git-http-backend
behind a web server whose authentication fails: no body a client could
take for refs.  Any other request is 404.  Each request's Authorization
header (or "-") is appended to LOG, one line each, so that a test can see
what was sent.  It listens on 127.0.0.1, a free port written to PORTFILE,
and stops by itself after 60 s or 50 requests.
"""
import http.server
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.handled += 1
        with open(sys.argv[2], "a") as f:
            f.write((self.headers.get("Authorization") or "-") + "\n")
        if self.path.endswith("/info/refs?service=git-receive-pack"):
            body = b"Unauthorized\n"
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
        else:
            body = b"Not Found\n"
            self.send_response(404)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET


def main():
    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1], "w") as f:
        f.write("%d\n" % srv.server_address[1])
    srv.timeout = 1
    srv.handled = 0
    end = time.monotonic() + 60
    while srv.handled < 50 and time.monotonic() < end:
        srv.handle_request()


if __name__ == "__main__":
    main()
