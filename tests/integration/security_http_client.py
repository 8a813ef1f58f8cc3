"""Raw HTTP clients for tests/integration/security_http_test.sh: what curl cannot send (a
byte at a time, a flood of headers, many idle connections, a body on any method). Each prints
one JSON line: {"status": CODE or null, "closed": bool, ...}.

    security_http_client.py PORT chunked PATH MIB [HEADER...]   a chunked body of MIB MiB
    security_http_client.py PORT slow SECONDS                  request headers, a byte a second
    security_http_client.py PORT headers KIB                   KIB KiB of headers
    security_http_client.py PORT raw TEXT                      TEXT as sent (\\r\\n escapes)
    security_http_client.py PORT connections N                 N idle connections at once
"""
import json
import select
import socket
import sys
import time


def connect(port, timeout=30):
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_answer(sock):
    """The status of the answer (None when the server sent none) and whether it closed."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
    except (ConnectionResetError, socket.timeout, BrokenPipeError):
        pass
    status = int(data.split(b" ")[1]) if data.startswith(b"HTTP/1.1 ") else None
    closed = False
    try:
        sock.settimeout(2)
        while True:
            piece = sock.recv(65536)
            if not piece:
                closed = True
                break
    except ConnectionResetError:
        closed = True
    except socket.timeout:
        pass
    return status, closed


def send_all(sock, data):
    """Sends until done or the server stops reading; returns how much was sent."""
    sent = 0
    try:
        while sent < len(data):
            sent += sock.send(data[sent:])
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    return sent


def chunked(port, path, mib, headers):
    sock = connect(port)
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
    head += "".join(h + "\r\n" for h in headers) + "\r\n"
    sock.sendall(head.encode())
    chunk = b"%x\r\n" % (1 << 20) + b"a" * (1 << 20) + b"\r\n"
    sent_mib = 0
    for _ in range(mib):
        if send_all(sock, chunk) < len(chunk):
            break
        sent_mib += 1
    else:
        send_all(sock, b"0\r\n\r\n")
    status, closed = read_answer(sock)
    return {"status": status, "closed": closed, "sent_mib": sent_mib}


def slow(port, seconds):
    sock = connect(port)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    request = b"X-Pad: " + b"a" * 1000
    start = time.monotonic()
    sent = 0
    for byte in request:
        if time.monotonic() - start > seconds:
            break
        if send_all(sock, bytes([byte])) == 0:
            break
        sent += 1
        time.sleep(1)
        sock.setblocking(False)
        try:
            if sock.recv(1, socket.MSG_PEEK) is not None:
                break  # the server answered (or closed)
        except BlockingIOError:
            pass
        finally:
            sock.setblocking(True)
            sock.settimeout(30)
    status, closed = read_answer(sock)
    return {"status": status, "closed": closed, "sent_bytes": sent,
            "seconds": round(time.monotonic() - start, 1)}


def many_headers(port, kib):
    sock = connect(port)
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
    line = b"X-Flood: " + b"b" * 1000 + b"\r\n"
    sent = send_all(sock, head)
    for _ in range(kib):
        if send_all(sock, line) < len(line):
            break
        sent += len(line)
    send_all(sock, b"\r\n")
    status, closed = read_answer(sock)
    return {"status": status, "closed": closed, "sent_bytes": sent}


def raw(port, text):
    sock = connect(port)
    send_all(sock, text.encode().decode("unicode_escape").encode("latin-1"))
    status, closed = read_answer(sock)
    return {"status": status, "closed": closed}


def connections(port, n):
    """Opens N idle connections and waits for each one's fate: a 429 answer (refused at once) or
    the server closing it when its keep-alive wait ends. No fixed sleep: on a loaded machine the
    server's workers may reach the refused ones late, and they are still refused then, since
    the first ones hold their slots for the whole keep-alive wait."""
    socks = [connect(port, timeout=3) for _ in range(n)]
    for sock in socks:
        sock.setblocking(False)
    refused, closed, pending = 0, 0, set(range(n))
    deadline = time.monotonic() + 30
    while pending and time.monotonic() < deadline:
        ready, _, _ = select.select([socks[i] for i in pending], [], [], 1.0)
        for sock in ready:
            i = socks.index(sock)
            try:
                data = sock.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                data = b""
            if data.startswith(b"HTTP/1.1 429"):
                refused += 1
            else:
                closed += 1
            pending.discard(i)
    for sock in socks:
        sock.close()
    return {"opened": n, "refused_429": refused, "closed_idle": closed, "unanswered": len(pending)}


def main():
    port, what = int(sys.argv[1]), sys.argv[2]
    args = sys.argv[3:]
    if what == "chunked":
        result = chunked(port, args[0], int(args[1]), args[2:])
    elif what == "slow":
        result = slow(port, float(args[0]))
    elif what == "headers":
        result = many_headers(port, int(args[0]))
    elif what == "raw":
        result = raw(port, args[0])
    elif what == "connections":
        result = connections(port, int(args[0]))
    else:
        sys.exit(f"unknown client {what}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
