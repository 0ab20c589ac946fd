"""How vipu-server writes its log on stderr: text for a person at a terminal, or JSON, one object a line, for a log
pipeline (journald, Kubernetes, Loki, Elasticsearch); every line written while an RPC is served carries its
request id. docs/logging.md lists the fields.

Why `auto` by default: a terminal gets the text it always had, and the places a log is collected (a systemd unit,
a container) get lines a pipeline can parse without configuration.

Why a thread writes the lines: a submission's lifecycle line was written under the state lock, and formatting and
writing it was a third of a SubmitJob call's time on the server (sampled under bench/bench_cli.py's load). The
caller now only hands the record over, with its message, request id and traceback already worked out; the order of
lines is kept, and the writer writes what gathered in LINGER_S at once (Writer). The log is not the state: a kill -9
may lose the last lines, never a committed change (SQLite). The writer also works out the lifecycle events of each
commit (control/lifecycle.py: work_elsewhere), in their place among the other lines.
"""

from __future__ import annotations

import atexit
import json
import logging
import queue
import sys
import threading
import time
from logging.handlers import QueueHandler
from typing import TextIO

from vipu.control import lifecycle
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
        return _ENCODER.encode(line)


class Text(logging.Formatter):
    """Python's usual line, with the request id at its end when there is one."""

    def __init__(self):
        super().__init__(TEXT)

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        request_id = getattr(record, "request_id", None)
        return text if request_id is None else f"{text} [request {request_id}]"


_ENCODER = json.JSONEncoder(default=str)  # json.dumps(line, default=str) made a new encoder for every line
_second: tuple[int, str] = (-1, "")  # the last whole second formatted: a burst's lines share it


def _utc(created: float) -> str:
    global _second
    whole, seen = int(created), _second
    if whole != seen[0]:
        seen = _second = (whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)))
    return f"{seen[1]}.{int(created % 1 * 1000):03d}Z"


class Handoff(QueueHandler):
    """Hands each record to the writer thread with what only the caller's thread knows resolved: the message
    (its arguments may change later) and the traceback's text; the formatter runs in the writer."""

    def enqueue(self, record: logging.LogRecord) -> None:
        writer = _writer
        if writer is not None and writer.working():  # a line of work the writer runs: in that work's place
            writer.inline.append(record)
        else:
            self.queue.put_nowait(record)

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        record.msg, record.args = record.getMessage(), None
        if record.exc_info:
            if not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None  # a traceback holds frames: not for another thread
        return record


LINGER_S = 0.02  # after a record wakes the writer, how long it lets more gather
_STOP = object()


class Writer:
    """The thread that writes the lines: woken by a record, it lets more gather for LINGER_S, then formats them all
    and writes them with one write and one flush. Why: woken for each line, formatting and writing it alone, it
    wanted the GIL just as each SubmitJob call was answering (every submission logs a line), and a line waited at
    most LINGER_S more for it."""

    def __init__(self, records: queue.SimpleQueue, handler: logging.StreamHandler):
        self.records, self.handler = records, handler
        self.inline: list[logging.LogRecord] = []  # the lines of the work being run
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="vipu-log", daemon=True)
        self._thread.start()

    def later(self, work) -> None:
        """Run work() on this thread, after the records and work handed over before it; its lines go in its place."""
        self.records.put(work)

    def working(self) -> bool:
        return threading.current_thread() is self._thread

    def _run(self) -> None:
        while True:
            batch = [self.records.get()]
            self._stopping.wait(LINGER_S)
            while True:
                try:
                    batch.append(self.records.get_nowait())
                except queue.Empty:
                    break
            self._write(self._lines_of(batch))
            if any(item is _STOP for item in batch):
                return

    def _lines_of(self, batch: list) -> list[logging.LogRecord]:
        """The batch's records, each work's in its place."""
        records = []
        for item in batch:
            if isinstance(item, logging.LogRecord):
                records.append(item)
            elif item is not _STOP:
                try:
                    item()
                except Exception:  # noqa: BLE001 - the writer must go on; the line says what failed, in its place
                    logging.getLogger("vipu.log").exception("could not work out a log line")
                records += self.inline
                self.inline.clear()
        return records

    def _write(self, records: list[logging.LogRecord]) -> None:
        lines = []
        for record in records:
            try:
                lines.append(self.handler.format(record) + self.handler.terminator)
            except Exception:  # noqa: BLE001 - as a handler reports a line it cannot write, and goes on
                self.handler.handleError(record)
        if lines:
            try:
                self.handler.stream.write("".join(lines))
                self.handler.flush()
            except Exception:  # noqa: BLE001
                self.handler.handleError(records[-1])

    def stop(self, within: float) -> bool:
        """Write every line handed over so far, then end; False if that took over `within` seconds (a write to
        stderr blocked: a pipe nobody reads, a frozen disk), the thread then left behind."""
        self._stopping.set()
        self.records.put(_STOP)
        self._thread.join(within)
        return not self._thread.is_alive()


_writer: Writer | None = None


def setup(log_format: str = "auto", level: str = "info", stream: TextIO | None = None) -> str:
    """Send every log record to `stream` (stderr) in `log_format`, written by a thread of its own; returns the
    format used (auto resolved)."""
    global _writer
    stream = stream or sys.stderr
    if log_format == "auto":
        log_format = "text" if stream.isatty() else "json"
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines() if log_format == "json" else Text())
    handoff = Handoff(queue.SimpleQueue())
    handoff.addFilter(RequestIds())  # in the caller's thread, which serves the RPC
    stop()
    # What no line shows is not worked out for each record: its caller's file and line (a walk up the stack), its
    # thread and process: the logging HOWTO's own optimisations (its "Optimization" section), for a server that
    # logs a line for every submission.
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    _writer = Writer(handoff.queue, handler)
    root = logging.getLogger()
    root.handlers[:] = [handoff]
    root.setLevel(level.upper())
    lifecycle.work_elsewhere(_writer.later)
    return log_format


STOP_WAIT_S = 5.0  # how long a stop waits for the last lines; a write to stderr may block for ever


@atexit.register
def stop(within: float = STOP_WAIT_S) -> bool:
    """Write every line handed over so far and end the writer (at exit; before os._exit, which skips atexit);
    False if its writes did not end in `within` seconds."""
    global _writer
    lifecycle.work_elsewhere(None)
    if _writer is None:
        return True
    ended = _writer.stop(within)  # (_writer still set meanwhile: the lines of its work go in their place)
    _writer = None
    return ended
