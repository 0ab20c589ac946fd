"""Following a list call's pages (Google's AIP-158: page_size, page_token, next_page_token) to the end.

Why the client asks for large pages: every page is a round trip, and the controller works out a listing once per
snapshot and keeps it for the pages after the first, so a big page costs it no more than several small ones.
"""

from __future__ import annotations

from typing import Callable

PAGE_SIZE = 1000


def every_page(call: Callable, request, gone: Callable[[Exception], bool] = lambda e: False, tries: int = 3):
    """Every page of `call(request)` merged into one response of its type (its list field holds every item, its
    next_page_token is empty), all from one moment: when the controller no longer keeps the listing a page token
    names (`gone(error)`), the listing starts again from its first page, up to `tries` times. `request` is not
    changed."""
    for attempt in range(tries):
        try:
            return _pages(call, request)
        except Exception as e:
            if attempt == tries - 1 or not gone(e):
                raise
    raise AssertionError("unreachable")


def pages(call: Callable, request):
    """Each reply of `call(request)`, page after page, to the last; `request` is not changed."""
    asked = type(request)()
    asked.CopyFrom(request)
    if not asked.page_size:
        asked.page_size = PAGE_SIZE
    while True:
        reply = call(asked)
        yield reply
        if not reply.next_page_token:
            return
        asked.page_token = reply.next_page_token


def items_of(reply) -> list:
    """A list response's items: field 1 of every list response."""
    return getattr(reply, reply.DESCRIPTOR.fields_by_number[1].name)


def _pages(call: Callable, request):
    merged = None
    for reply in pages(call, request):
        if merged is None:
            merged = reply
        else:
            items_of(merged).extend(items_of(reply))
    merged.next_page_token = ""
    return merged
