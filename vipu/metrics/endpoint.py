"""The /metrics endpoint: Prometheus's text format over HTTP, and under --secure only for an admin's key.

Why a key under --secure: the metrics name every user's partitions and jobs (vipu_ipu_allocation_info and others),
which the API shows a user only for their own. Slurm's exporters answer anyone who can reach them and leave it to
the network; here the controller has users, so /metrics asks what the API asks: an admin's access key, sent by
Prometheus as `authorization: {credentials_file: ...}` in its scrape config (deploy/prometheus/prometheus.yml).
`vipu-server --metrics-open` serves them to anyone, as before.

/healthz answers anyone, with what gRPC health says (200 SERVING; 503 NOT_SERVING while the state store cannot
write): an HTTP probe (Kubernetes' readinessProbe, a load balancer) needs no key and no TLS, where the gRPC port may
have both.
"""

from __future__ import annotations

import threading
from typing import Callable
from wsgiref.simple_server import WSGIServer, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer, _SilentHandler

DENIED = b"an admin's access key is needed: send Authorization: Bearer KEY (Prometheus: authorization.credentials)\n"


def guarded(app, key_role: Callable[[str], str | None]):
    """`app`, answering 401 without a valid bearer key and 403 for a key that is not an admin's (`key_role`)."""

    def wsgi(environ, start_response):
        scheme, _, key = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        role = key_role(key.strip()) if scheme.lower() == "bearer" and key.strip() else None
        if role == "admin":
            return app(environ, start_response)
        if role is None:
            start_response("401 Unauthorized", [("Content-Type", "text/plain"),
                                                ("WWW-Authenticate", 'Bearer realm="vipu-sim metrics"')])
        else:  # a user's key: known, but the metrics name every user's objects
            start_response("403 Forbidden", [("Content-Type", "text/plain")])
        return [DENIED]

    return wsgi


def with_health(app, serving: Callable[[], bool]):
    """`app`, with /healthz answered before it (and before any key check)."""

    def wsgi(environ, start_response):
        if environ.get("PATH_INFO") != "/healthz":
            return app(environ, start_response)
        if serving():
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"SERVING\n"]
        start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
        return [b"NOT_SERVING: the state store cannot write (see vipu_store_writable)\n"]

    return wsgi


def serve(port: int, host: str, registry, key_role: Callable[[str], str | None] | None,
          serving: Callable[[], bool] = lambda: True) -> WSGIServer:
    """Serve `registry` on host:port in a daemon thread; `key_role`: whose a request's key is, admin or user (None:
    open to anyone); `serving`: what /healthz reports."""
    app = make_wsgi_app(registry)
    if key_role is not None:
        app = guarded(app, key_role)
    app = with_health(app, serving)
    httpd = make_server(host, port, app, ThreadingWSGIServer, handler_class=_SilentHandler)
    threading.Thread(target=httpd.serve_forever, name="vipu-metrics", daemon=True).start()
    return httpd
