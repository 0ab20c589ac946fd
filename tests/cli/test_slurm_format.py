"""Slurm's output formats as squeue, sinfo, sprio and sacct lay them out, and the one line each bad format gets."""

from __future__ import annotations

import pytest

from vipu.partition.node_names import hostlist
from vipu.cli.slurm_format import (
    Column,
    named_layout,
    percent_layout,
    render,
    sacct_fields,
    sacct_render,
    sort_keys,
    sort_rows,
)

ROWS = [{"id": "7", "name": "train-bert", "n": 2}, {"id": "12", "name": "x", "n": 10}]
LETTERS = {
    "i": Column("JOBID", lambda r: r["id"], lambda r: int(r["id"])),
    "j": Column("NAME", lambda r: r["name"]),
    "N": Column("NODELIST", lambda r: r["name"], cut=False),
    "D": Column("NODES", lambda r: str(r["n"]), lambda r: r["n"]),
}
NAMES = {"JobID": LETTERS["i"], "Name": LETTERS["j"]}


@pytest.mark.parametrize(("fmt", "want"), [
    ("%.5i %.8j", ["JOBID     NAME", "    7 train-be", "   12        x"]),  # right-justified, cut to the size
    ("%5i|%j", ["JOBID|NAME", "7    |train-bert", "12   |x"]),  # left-justified, the text after a field kept
    ("%-5i %4N", ["JOBID NODELIST", "7     train-bert", "12    x   "]),  # printf's -; node lists are never cut
    ("id=%i", ["id=JOBID", "id=7", "id=12"]),  # the text before the first field
    ("%#j %D", ["NAME       NODES", "train-bert 2", "x          10"]),  # sinfo's # : as wide as the widest
])
def test_percent_formats_lay_out_as_squeue_does(fmt, want):
    assert render(percent_layout(fmt, LETTERS, "-o"), ROWS) == want


def test_no_header_and_no_rows_print_nothing():
    assert render(percent_layout("%i", LETTERS, "-o"), [], header=False) == []


def test_a_field_with_no_value_here_is_refused_by_its_whole_name_once_the_list_is_read(capsys):
    no_value = {"WCKey": "no workload characterization key"}
    with pytest.raises(SystemExit) as e:
        sacct_fields("JobID, wckey%20", SACCT, "-o", no_value)
    assert e.value.code == 2 and capsys.readouterr().err == (
        "vipu: error: -o: WCKey has no value here: no workload characterization key; leave it out (vipu history -e"
        " lists the fields)\n")
    assert [f.name for f in sacct_fields("JobID,JobN", SACCT, "-o", no_value)] == ["JobID", "JobName"]


@pytest.mark.parametrize(("names", "want"), [
    ("JobID:4,name:.6", ["JOBI  NAME", "7   train-", "12       x"]),
    ("JobID:3|,Name", ["JOB|NAME                ", "7  |train-bert          ", "12 |x                   "]),
])
def test_named_formats_take_a_size_and_a_suffix(names, want):
    assert render(named_layout(names, NAMES, "-O"), ROWS) == want


@pytest.mark.parametrize(("read", "text", "said"), [
    (percent_layout, "%.5i %z", "vipu: error: -o: %z is not a field here; use one of %D %i %j %N"),
    (percent_layout, "plain", "vipu: error: -o 'plain' names no field; give fields as %LETTER"),
    (percent_layout, "%1#i", "vipu: error: -o: %1#i has a size that is not a number; write e.g. %.10i"),
    (named_layout, "JobID,Nodes", "vipu: error: -O: 'Nodes' is not a field here; use any of JobID, Name"),
])
def test_a_bad_format_is_one_line_naming_the_flag_and_exit_2(read, text, said, capsys):
    with pytest.raises(SystemExit) as e:
        read(text, LETTERS if read is percent_layout else NAMES, "-o" if read is percent_layout else "-O")
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(said), err


@pytest.mark.parametrize(("spec", "want"), [
    ("i", ["7", "12"]), ("-i", ["12", "7"]), ("-D,i", ["12", "7"]), ("j", ["7", "12"]), ("+j", ["7", "12"]),
])
def test_sort_keys_as_squeue_reads_them(spec, want):
    assert [r["id"] for r in sort_rows(ROWS, sort_keys(spec, LETTERS, "-S"))] == want


def test_sorting_is_stable_on_equal_keys():
    rows = [{"id": str(i), "name": "same", "n": 1} for i in range(5)]
    assert sort_rows(rows, sort_keys("j", LETTERS, "-S")) == rows


@pytest.mark.parametrize("spec", ["q", "i,?", "", "i,-", "-,i", "i+"])  # a sign must precede a letter
def test_a_bad_sort_key_is_refused(spec, capsys):
    with pytest.raises(SystemExit) as e:
        sort_keys(spec, LETTERS, "-S/--sort")
    assert e.value.code == 2 and capsys.readouterr().err.startswith("vipu: error: -S/--sort")


SACCT = {"JobID": Column("", lambda r: r["id"], width=-6), "JobName": Column("", lambda r: r["name"], width=6),
         "NNodes": Column("", lambda r: str(r["n"]), width=4)}


def test_sacct_fixed_widths_cut_with_a_plus_and_a_line_of_dashes():
    fields = sacct_fields("jobid,jobn%8,NN", SACCT, "-o")  # names in any case, or their first letters
    assert [f.name for f in fields] == ["JobID", "JobName", "NNodes"]
    assert sacct_render(fields, ROWS) == ["JobID   JobName NNod ", "------ -------- ---- ",
                                          "7      train-b+    2 ", "12            x   10 "]
    assert sacct_render(sacct_fields("JobName%-4", SACCT, "-o"), ROWS[:1]) == ["JobN ", "---- ", "tra+ "]


def test_sacct_parsable_puts_the_delimiter_between_fields_and_with_p_after_the_last():
    fields = sacct_fields("JobID,NNodes", SACCT, "-o")
    assert sacct_render(fields, ROWS, parsable="-P") == ["JobID|NNodes", "7|2", "12|10"]
    assert sacct_render(fields, ROWS, header=False, parsable="-p") == ["7|2|", "12|10|"]
    assert sacct_render(fields, ROWS[:1], parsable="-P", delimiter=",") == ["JobID,NNodes", "7,2"]


@pytest.mark.parametrize(("text", "said"), [
    ("JobID,Bogus", "-o: 'Bogus' is not a field; use any of JobID,JobName,NNodes"),
    ("JobName%x", "-o: 'JobName%x' has a width that is not a number"),
    (",", "-o ',' names no field"),
])
def test_a_bad_sacct_field_is_refused(text, said, capsys):
    with pytest.raises(SystemExit) as e:
        sacct_fields(text, SACCT, "-o")
    assert e.value.code == 2 and said in capsys.readouterr().err


@pytest.mark.parametrize(("names", "want"), [
    (["ag00", "ag01", "ag02", "ag03"], "ag[00-03]"),
    (["ag00", "ag02", "ag03", "ag07"], "ag[00,02-03,07]"),
    (["ag05"], "ag05"),
    (["ag01", "machine3", "ag00"], "ag[00-01],machine3"),
    (["head"], "head"),
    ([], ""),
])
def test_node_lists_are_compressed_as_slurm_writes_them(names, want):
    assert hostlist(names) == want
