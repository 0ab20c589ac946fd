"""--machine-bundle as vipu-server reads it: RESOURCE=AMOUNT pairs, each amount positive and finite; a refusal
names the pair and shows the form."""

from __future__ import annotations

import pytest

from vipu.server.arguments import parse_bundle


def test_pairs_are_read():
    assert parse_bundle("ipu_host=1, CPU=0.01") == {"ipu_host": 1.0, "CPU": 0.01}


@pytest.mark.parametrize("text", ["ipu_host=abc", "ipu_host=nan", "ipu_host=inf", "ipu_host=0", "=1", "ipu_host"])
def test_a_bad_pair_is_refused_naming_it_and_the_form(text):
    """Regression: `abc` gave Python's "could not convert string to float", and nan and inf were taken (a bundle
    no node can ever hold)."""
    with pytest.raises(ValueError, match=rf"^{text!r} is not RESOURCE=AMOUNT .* give pairs such as ipu_host=1"):
        parse_bundle(text)
