#!/usr/bin/python3
"""drop-proxy.py - a TCP proxy to a real server that loses answers.

    drop-proxy.py --upstream PORT --control FILE [--match TEXT]... [--status N]

Listens on 127.0.0.1 (a free port, printed on the first line of stdout)
and passes every connection through to 127.0.0.1:PORT, both ways, as it
comes, one request per connection (the request gets "Connection:
close").  FILE holds a number N (absent or empty: 0).  While N > 0, the
first request on a connection whose request line contains a TEXT (every
request when no TEXT is given) is sent to the server whole, the proxy
waits until the server starts its answer (so the server has carried the
request out), and then resets the client's connection without a byte of
the answer (with --status, it answers N itself instead, as a proxy's 502
or 504 would); N is decremented in FILE.  That is a reply lost on the way
back, the one fault a client must not answer by simply sending again.
Each dropped request is logged on stderr.  Stops on SIGTERM.
"""
import argparse
import os
import socket
import struct
import sys
import threading

lock = threading.Lock()


def take_drop(control):
    with lock:
        try:
            with open(control) as f:
                n = int(f.read().strip() or "0")
        except (OSError, ValueError):
            n = 0
        if n <= 0:
            return False
        with open(control + ".tmp", "w") as f:
            f.write("%d\n" % (n - 1))
        os.replace(control + ".tmp", control)
        return True


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s in (dst, src):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def reset(sock):
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def serve(client, args):
    up = None
    try:
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 65536:
            data = client.recv(65536)
            if not data:
                client.close()
                return
            head += data
        # one request per connection, so that each is seen: the server
        # is told to close after its answer
        hdr, sep, rest = head.partition(b"\r\n\r\n")
        lines = [h for h in hdr.split(b"\r\n")
                 if not h.lower().startswith(b"connection:")]
        head = b"\r\n".join(lines + [b"Connection: close"]) + sep + rest
        line = lines[0].decode("latin-1")
        up = socket.create_connection(("127.0.0.1", args.upstream))
        if (not args.match or any(m in line for m in args.match)) and take_drop(args.control):
            hdr, _, body = head.partition(b"\r\n\r\n")
            length = 0
            for h in hdr.split(b"\r\n")[1:]:
                k, _, v = h.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v.strip())
            while len(body) < length:
                data = client.recv(65536)
                if not data:
                    break
                body += data
            up.sendall(hdr + b"\r\n\r\n" + body)
            up.settimeout(30)
            try:
                up.recv(1)  # the server answers: it has done it
            except OSError:
                pass
            print("drop-proxy: dropped the answer to %s" % line,
                  file=sys.stderr, flush=True)
            if args.status:
                client.sendall(b"HTTP/1.1 %d Bad Gateway\r\nContent-Type: text/html\r\n"
                               b"Content-Length: 0\r\nConnection: close\r\n\r\n"
                               % args.status)
                client.close()
                up.close()
                return
            reset(client)
            up.close()
            return
        up.sendall(head)
        t = threading.Thread(target=pipe, args=(up, client), daemon=True)
        t.start()
        pipe(client, up)
        t.join()
    except OSError:
        pass
    finally:
        for s in (client, up):
            try:
                if s is not None:
                    s.close()
            except OSError:
                pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", type=int, required=True)
    ap.add_argument("--control", required=True)
    ap.add_argument("--match", action="append")
    ap.add_argument("--status", type=int)
    args = ap.parse_args()
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    print(ls.getsockname()[1], flush=True)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c, args), daemon=True).start()


if __name__ == "__main__":
    main()
