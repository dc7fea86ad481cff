"""slowloris.py — /metrics under a slow-client attack: slow requests and a
connect/close flood.

Starts lmscored with --metrics-listen, then from SOURCE opens N_SLOW
connections that send `GET /metrics HTTP/1.1` and one header line every 5 s
(reconnecting when dropped) and makes N_FLOOD connect/close, for SECONDS,
while scraping from 127.0.0.1 every 0.5 s (2 s timeout). Prints how many
scrapes were answered and the slowest, the metrics port's sockets during the
attack (established, CLOSE-WAIT, listen queue), how long after the attacker
closed everything the next scrape was answered, and the sockets 6 s later.

  LMSCORE_BUILD_DIR=build PYTHONPATH=build/clients/python:tests/service \\
    python3 bench/metrics/slowloris.py N_SLOW N_FLOOD SECONDS [SOURCE]
"""
import socket
import sys
import threading
import time

from harness import Daemon, Metrics
from test_metrics import metrics_port_sockets, scrape_seconds, slowloris


def flood(port, source, n):
    for _ in range(n):
        s = socket.socket()
        try:
            s.bind((source, 0))
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
        finally:
            s.close()


def main(n_slow, n_flood, seconds, source="127.0.0.2"):
    with Daemon("--metrics-listen", "127.0.0.1:0") as d:
        url = Metrics(d).url
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        attack = slowloris(port, source, n_slow, 5.0)
        flooder = threading.Thread(target=flood, args=(port, source, n_flood))
        flooder.start()
        scrapes, end = [], time.monotonic() + seconds
        while time.monotonic() < end:
            scrapes.append(scrape_seconds(url))
            time.sleep(0.5)
        during = metrics_port_sockets(port)
        attack.stdin.close()  # the slowloris process closes everything and exits
        attack.wait(timeout=60)
        flooder.join()
        closed, recovered = time.monotonic(), None
        while recovered is None and time.monotonic() - closed < 30:
            if scrape_seconds(url) is not None:
                recovered = time.monotonic() - closed
            else:
                time.sleep(0.2)
        time.sleep(6)
        answered = [t for t in scrapes if t is not None]
        print(f"{n_slow} slow + {n_flood} connect/close from {source}, {seconds:g} s: "
              f"{len(answered)} of {len(scrapes)} scrapes answered, slowest "
              f"{max(answered, default=float('nan')) * 1000:.1f} ms; during {during}; "
              f"next scrape {recovered} s after the attacker closed; 6 s later "
              f"{metrics_port_sockets(port)}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), *sys.argv[4:5])
