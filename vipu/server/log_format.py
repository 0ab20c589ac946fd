"""How vipu-server writes its log on stderr: text for a person at a terminal, or JSON, one object a line, for a log
pipeline (journald, Kubernetes, Loki, Elasticsearch); every line written while an RPC is served carries its
request id. docs/logging.md lists the fields.

Why `auto` by default: a terminal gets the text it always had, and the places a log is collected (a systemd unit,
a container) get lines a pipeline can parse without configuration.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TextIO

from vipu.control.callers import current

FORMATS = ("auto", "text", "json")
LEVELS = ("debug", "info", "warning", "error")
TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class RequestIds(logging.Filter):
    """Puts the request id of the RPC this thread serves (None outside one) on every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        call = current()
        record.request_id = call.request_id if call is not None else None
        return True


class JsonLines(logging.Formatter):
    """{"time", "level", "logger", "message", "request_id"?, the record's own fields?, "exception"?} a line."""

    def format(self, record: logging.LogRecord) -> str:
        line = {"time": _utc(record.created), "level": record.levelname, "logger": record.name,
                "message": record.getMessage()}
        if getattr(record, "request_id", None) is not None:
            line["request_id"] = record.request_id
        line.update(getattr(record, "fields", {}))
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, default=str)


class Text(logging.Formatter):
    """Python's usual line, with the request id at its end when there is one."""

    def __init__(self):
        super().__init__(TEXT)

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        request_id = getattr(record, "request_id", None)
        return text if request_id is None else f"{text} [request {request_id}]"


def _utc(created: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(created % 1 * 1000):03d}Z"


def setup(log_format: str = "auto", level: str = "info", stream: TextIO | None = None) -> str:
    """Send every log record to `stream` (stderr) in `log_format`; returns the format used (auto resolved)."""
    stream = stream or sys.stderr
    if log_format == "auto":
        log_format = "text" if stream.isatty() else "json"
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIds())
    handler.setFormatter(JsonLines() if log_format == "json" else Text())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    return log_format
