"""The Pod config: the four presets, a site's own file, and what a malformed file is told.

Figures from hardware.md: Pod16 = 4 machines (one ILD, direct attach), Pod64 = 16 machines (one 2D-torus ILD),
Pod128 = two Pod64s, Pod256 = four; 4 IPUs per Bow-2000; an ILD holds at most 64 IPUs; Bow IPU ~350 TFLOPS FP16.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vipu.errors import InvalidArgument
from vipu.hardware.pod import MAX_ILD_IPUS, MAX_POD_IPUS
from vipu.hardware.pod_files import PRESETS, load_pod

ROOT = Path(__file__).resolve().parents[2]
PRESET_TABLE = [
    # preset, IPUs, machines, ILDs, machines per ILD, ILD topology, cluster topology, largest partition
    ("bow-pod16", 16, 4, 1, 4, "mesh", "direct-attach", 16),
    ("bow-pod64", 64, 16, 1, 16, "torus", "looped", 64),
    ("bow-pod128", 128, 32, 2, 16, "torus", "looped", 128),
    ("bow-pod256", 256, 64, 4, 16, "torus", "looped", 256),
    ("bow-pod1024", 1024, 256, 16, 16, "torus", "looped", 1024),  # 16 Pod64 racks (early access)
]


@pytest.mark.parametrize("name,ipus,machines,ilds,per_ild,topology,cluster_topology,largest", PRESET_TABLE)
def test_presets(name, ipus, machines, ilds, per_ild, topology, cluster_topology, largest):
    pod = load_pod(name)
    assert (pod.name, pod.ipus, pod.machines, pod.ilds, pod.machines_per_ild) == (name, ipus, machines, ilds, per_ild)
    assert (pod.ild_topology, pod.cluster_topology, pod.max_partition_ipus) == (topology, cluster_topology, largest)
    assert pod.machine.ipus == 4
    assert pod.ild_ipus == min(ipus, MAX_ILD_IPUS)
    assert pod.ipu.tiles == 1472
    assert pod.ipu.flops_per_s() == pytest.approx(348.6e12, rel=1e-3)  # 1,472 tiles x 128 x 1.85 GHz
    assert pod.ipu.flops_per_s("fp32") == pytest.approx(348.6e12 / 4, rel=1e-3)


def test_the_preset_list_is_the_five_bow_pods():
    assert PRESETS == ("bow-pod16", "bow-pod64", "bow-pod128", "bow-pod256", "bow-pod1024")


@pytest.mark.parametrize("path,ipus,ilds", [("examples/pods/pod4096.yaml", 4096, 64),
                                            ("examples/pods/pod65536.yaml", 65536, 1024)])
def test_the_example_site_files_load_up_to_the_largest_pod_graphcore_names(path, ipus, ilds):
    pod = load_pod(str(ROOT / path))
    assert (pod.ipus, pod.ilds, pod.machines, pod.max_partition_ipus) == (ipus, ilds, ipus // 4, ipus)
    assert pod.ipus <= MAX_POD_IPUS == 65_536


def site_pod(**overrides) -> dict:
    """A site's own Pod: 4 torus ILDs of 16 Bow-2000s; None deletes a field."""
    data = {"name": "site", "machine_preset": "bow-2000", "ilds": 4, "machines_per_ild": 16, "ild_topology": "torus"}
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not None}


def write(tmp_path, filename: str, content) -> str:
    path = tmp_path / filename
    if isinstance(content, str):
        path.write_text(content)
    elif filename.endswith(".json"):
        path.write_text(json.dumps(content))
    else:
        path.write_text(yaml.safe_dump(content))
    return str(path)


@pytest.mark.parametrize(
    "filename,content,want",
    [
        # file, content, wanted (ipus, ilds, largest partition, ILD topology)
        ("site.yaml", site_pod(), (256, 4, 256, "torus")),
        ("site.json", site_pod(), (256, 4, 256, "torus")),
        ("pod512.yaml", site_pod(ilds=8), (512, 8, 512, "torus")),
        ("small.yaml", site_pod(ilds=1, machines_per_ild=2, ild_topology="mesh"), (8, 1, 8, "mesh")),
        ("checked.yaml", site_pod(total_ipus=256), (256, 4, 256, "torus")),
        ("own-chip.yaml", {**site_pod(machine_preset=None), **yaml.safe_load(
            "ipu: {tiles: 1216, sram_per_tile_bytes: 638976, clock_hz: 1.33e9, fp16_flops_per_tile_cycle: 64,"
            " fp32_flops_per_tile_cycle: 16, threads_per_tile: 6, exchange_bytes_per_s: 8.0e12,"
            " sram_bytes_per_s: 47.5e12, sync_s: 2.0e-7}\n"
            "machine: {ipus: 4, streaming_memory_bytes: 1.0e11, streaming_memory_bytes_per_s: 1.0e10,"
            " streaming_memory_latency_s: 2.0e-6}\n"
            "links: {ipu_link: {bytes_per_s: 3.2e10, latency_s: 1.0e-6},"
            " gw_link: {bytes_per_s: 1.25e10, latency_s: 5.0e-6, links_per_machine: 2}}\n")},
         (256, 4, 256, "torus")),
    ],
)
def test_a_sites_own_pod_file_loads(tmp_path, filename, content, want):
    pod = load_pod(write(tmp_path, filename, content))
    assert (pod.ipus, pod.ilds, pod.max_partition_ipus, pod.ild_topology) == want


def test_a_site_file_may_override_a_machine_preset_section(tmp_path):
    preset = load_pod("bow-pod64")
    links = preset.links.model_dump()
    links["ipu_link"]["bytes_per_s"] = 15.75e9  # the seed's "IPU Link 15.75 GB/s raw"
    pod = load_pod(write(tmp_path, "slow-links.yaml", site_pod(links=links)))
    assert pod.links.ipu_link.bytes_per_s == 15.75e9
    assert pod.ipu == preset.ipu and pod.machine == preset.machine


MALFORMED = [
    # id, file name, content, needles the message must hold (besides the file's path)
    ("not YAML", "bad.yaml", "name: site\nilds: [3\n", ["not valid YAML/JSON", "fix the syntax"]),
    ("not JSON", "bad.json", '{"name": "site", "ilds": 3,', ["not valid YAML/JSON", "fix the syntax"]),
    ("a list", "list.yaml", "- bow-pod64\n- bow-pod16\n", ["expected a mapping of fields, got list"]),
    ("a bare word", "word.yaml", "bow-pod64\n", ["expected a mapping of fields, got str"]),
    ("an unknown field", "extra.yaml", site_pod(colour="blue"), ["colour: unknown field", "remove it"]),
    ("an unknown nested field", "nested.yaml", site_pod(links={"ipu_link": {"bytes_per_s": 1, "latency_s": 1,
                                                                             "jitter_s": 1}}),
     ["links.ipu_link.jitter_s: unknown field"]),
    ("negative machines", "neg.yaml", site_pod(machines_per_ild=-4), ["machines_per_ild: -4 is too small"]),
    ("zero ILDs", "zero.yaml", site_pod(ilds=0), ["ilds: 0 is too small"]),
    ("a missing field", "missing.yaml", site_pod(ild_topology=None),
     ["ild_topology: required; add it, e.g. `ild_topology: torus`"]),
    ("no machine figures", "bare.yaml", site_pod(machine_preset=None),
     ["ipu: required; add it, e.g. `machine_preset: bow-2000`"]),
    ("a missing nested field", "nested-missing.yaml", site_pod(links={"ipu_link": {"bytes_per_s": 1}}),
     ["links.ipu_link.latency_s: required; add it"]),
    ("a wrong topology", "topo.yaml", site_pod(ild_topology="ring"),
     ["ild_topology: 'ring' is not one of torus or mesh; use one of them"]),
    ("total_ipus contradicting the rest", "total.yaml", site_pod(total_ipus=192),
     ["total_ipus is 192 but ilds x machines_per_ild x machine.ipus is 256", "make them agree"]),
    # Graphcore: "The number of IPUs in an IPU-POD must be a power of 2" (ipu-pod-getting-started, overview)
    ("3 racks", "ilds3.yaml", site_pod(ilds=3),
     ["ilds is 3 (192 IPUs): a Pod holds a power of two IPUs", "set ilds to 2 or 4"]),
    ("1,000 racks", "ilds1000.yaml", site_pod(ilds=1000), ["ilds is 1,000 (64,000 IPUs)", "set ilds to 512 or 1,024"]),
    ("3 small domains", "small3.yaml", site_pod(ilds=3, machines_per_ild=2, ild_topology="mesh"),
     ["ilds is 3 (24 IPUs)", "set ilds to 2 or 4"]),
    # a wrong type: what was given, what is expected, the fix (not pydantic's wording)
    ("a word for a count", "many.yaml", "name: site\nmachine_preset: bow-2000\nilds: many\nmachines_per_ild: 16\n"
     "ild_topology: torus\n", ["ilds: 'many' is not a whole number; write it as digits, e.g. 4"]),
    ("a fraction", "half.yaml", site_pod(ilds=2.5), ["ilds: 2.5 is not a whole number"]),
    ("a word for a figure", "figure.yaml", site_pod(links={"ipu_link": {"bytes_per_s": "fast", "latency_s": 1}}),
     ["links.ipu_link.bytes_per_s: 'fast' is not a number; write it as digits"]),
    ("a list for a section", "section.yaml", site_pod(machine=[4]),
     ["machine: list is not a mapping of fields; give its fields indented under it"]),
    ("a name that is a number", "named.yaml", site_pod(name=7), ["name: 7 is not text"]),
    ("an ILD of 128 IPUs", "big-ild.yaml", site_pod(machines_per_ild=32),
     ["machines_per_ild x machine.ipus is 128", "at most 64 IPUs", "use more ilds"]),
    ("an ILD of 48 IPUs", "odd-ild.yaml", site_pod(machines_per_ild=12),
     ["machines_per_ild x machine.ipus is 48", "power of two", "set machines_per_ild to 8 or 16 (32 or 64 IPUs"]),
    ("a torus ILD of 12 IPUs", "ild12.yaml", site_pod(machines_per_ild=3),  # a torus of 2 machines is no fix
     ["machines_per_ild x machine.ipus is 12", "power of two IPUs; set machines_per_ild to 4 (16 IPUs a domain)"]),
    ("a mesh ILD of 12 IPUs", "mesh12.yaml", site_pod(machines_per_ild=3, ild_topology="mesh"),
     ["machines_per_ild x machine.ipus is 12", "set machines_per_ild to 2 or 4 (8 or 16 IPUs a domain)"]),
    ("an ILD of 80 IPUs", "ild80.yaml", site_pod(machines_per_ild=20),  # 32 machines would be 128 IPUs
     ["machines_per_ild x machine.ipus is 80", "set machines_per_ild to 16 (64 IPUs a domain)"]),
    ("a Pod past 1,024 Pod64 racks", "huge.yaml", site_pod(ilds=1025),
     ["is 65,600: a Pod holds at most 65,536 IPUs", "use at most 1,024 ilds"]),
    ("a torus of 2 machines", "torus2.yaml", site_pod(machines_per_ild=2),
     ["ild_topology is torus but machines_per_ild is 2", "at least 3", "use mesh"]),
    ("an unknown machine preset", "preset.yaml", site_pod(machine_preset="bow-3000"),
     ["machine_preset 'bow-3000' is not a machine preset", "use bow-2000"]),
    ("a pod preset as the machine preset", "podpreset.yaml", site_pod(machine_preset="bow-pod64"),
     ["machine_preset 'bow-pod64'", "use bow-2000"]),
    ("a 3-IPU machine", "ipus3.yaml", {**site_pod(), "machine": {
        "ipus": 3, "streaming_memory_bytes": 1e11, "streaming_memory_bytes_per_s": 1e10,
        "streaming_memory_latency_s": 1e-6}}, ["machine.ipus is 3", "needs 2 or 4 IPUs per machine"]),
    ("an 8-IPU machine (4 of its IPUs hold no ring)", "ipus8.yaml", {**site_pod(machines_per_ild=8), "machine": {
        "ipus": 8, "streaming_memory_bytes": 1e11, "streaming_memory_bytes_per_s": 1e10,
        "streaming_memory_latency_s": 1e-6}}, ["machine.ipus is 8", "needs 2 or 4 IPUs per machine"]),
]


@pytest.mark.parametrize("case,filename,content,needles", MALFORMED, ids=[row[0] for row in MALFORMED])
def test_a_malformed_pod_file_is_refused_naming_the_file_and_the_field(tmp_path, case, filename, content, needles):
    path = write(tmp_path, filename, content)
    with pytest.raises(InvalidArgument) as caught:
        load_pod(path)
    message = caught.value.message
    assert f"invalid pod config {path}" in message
    assert "\n" not in message and "Input should" not in message  # one line, in our words
    for needle in needles:
        assert needle in message, f"{needle!r} not in {message!r}"


@pytest.mark.parametrize("what", ["bow-pod32", "bow-2000", "pod64", "{missing}/nope.yaml", "{dir}"])
def test_an_unknown_preset_or_missing_file_lists_the_presets(tmp_path, what):
    what = what.format(missing=tmp_path / "missing", dir=tmp_path)
    with pytest.raises(InvalidArgument) as caught:
        load_pod(what)
    message = caught.value.message
    assert f"--pod {what!r} is neither a preset" in message
    assert "(bow-pod16, bow-pod64, bow-pod128, bow-pod256, bow-pod1024)" in message
    assert "pick a preset or give the path of a pod config" in message
