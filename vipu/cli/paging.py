"""Following a list call's pages (Google's AIP-158: page_size, page_token, next_page_token) to the end.

Why the CLI asks for large pages: every page is a round trip, and the controller works out a listing once per
snapshot and keeps it for the pages after the first, so a big page costs it no more than several small ones.
"""

from __future__ import annotations

from typing import Callable

PAGE_SIZE = 1000


class ListingGone(Exception):
    """The controller no longer keeps the listing a page token names."""


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


def _pages(call: Callable, request):
    asked = type(request)()
    asked.CopyFrom(request)
    if not asked.page_size:
        asked.page_size = PAGE_SIZE
    merged = None
    while True:
        reply = call(asked)
        if merged is None:
            merged = reply
        else:
            items = reply.DESCRIPTOR.fields_by_number[1].name  # every list response has its items as field 1
            getattr(merged, items).extend(getattr(reply, items))
        if not reply.next_page_token:
            break
        asked.page_token = reply.next_page_token
    merged.next_page_token = ""
    return merged
