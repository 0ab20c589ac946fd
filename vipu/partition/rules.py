"""V-IPU's rules for names and partition requests, each failure naming the field and the fix."""

from __future__ import annotations

import re

from vipu.errors import InvalidArgument
from vipu.hardware.pod import PodConfig

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
MAX_NAME = 64


def check_name(kind: str, name: str, field: str | None = None) -> str:
    """Names go into environment variables, file names and tables: ASCII letters, digits, '_', '-', '.'. `field`:
    the request's field the name came from, when its message does not start with it (a job's name: `job name`)."""
    if not name:
        raise InvalidArgument(f"{kind} name is empty; give a name such as {kind}1", field=field)
    if len(name) > MAX_NAME:
        raise InvalidArgument(f"{kind} name is {len(name)} characters long; use at most {MAX_NAME}", field=field)
    if not NAME_RE.fullmatch(name):
        bad = next((c for c in name if not re.fullmatch(r"[A-Za-z0-9_.-]", c)), None)
        what = f"contains {bad!r}" if bad else f"starts with {name[0]!r}"
        raise InvalidArgument(
            f"{kind} name {name!r} {what}; use ASCII letters, digits, '_', '-' and '.', starting with a letter or"
            " digit", field=field
        )
    return name


MAX_REASON = 512  # Slurm sets no bound; this one keeps a listing's line a line


def check_reason(text: str, example: str) -> str:
    """An admin's reason (request field `reason`, flag --reason: a drain's, a failure's): one line of printable
    text, at most MAX_REASON characters, stripped. Empty is returned as it is, for the caller to require or not."""
    text = text.strip()
    if len(text) > MAX_REASON:
        raise InvalidArgument(f"reason (--reason) is {len(text)} characters long; say why in at most {MAX_REASON}",
                              field="reason")
    bad = next((c for c in text if not c.isprintable()), None)
    if bad is not None:
        raise InvalidArgument(f"reason (--reason) holds {bad!r}; give one line of printable text, such as"
                              f" --reason {example}", field="reason")
    return text


MAX_JOB_NAME = 1024  # sbatch's (SchedMD/slurm src/slurmctld/job_mgr.c: _test_strlen(job_desc->name, "name", 1024))
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_job_title(name: str, label: str = "job name") -> str:
    """A job's name, as sbatch -J takes it: any printable characters (spaces too), at most MAX_JOB_NAME. Unlike the
    names above it is never part of a partition's or a file's name unless a user's pattern (%x) puts it there;
    control characters and newlines are refused, as they would break every listing's line. `label` names it in a
    refusal (scontrol update's Name)."""
    if not name:
        raise InvalidArgument(f"{label} is empty; give a name such as job1", field="name")
    if len(name) > MAX_JOB_NAME:
        raise InvalidArgument(f"{label} is {len(name)} characters long; use at most {MAX_JOB_NAME}", field="name")
    bad = CONTROL.search(name)
    if bad:
        raise InvalidArgument(f"{label} {name!r} contains the control character {bad.group()!r}; give printable"
                              " characters only (spaces are fine)", field="name")
    return name


HOST_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def check_host(host: str) -> str:
    """An agent's host is what jobs dial (IPUOF addresses, `vipu get partition`): a DNS name (RFC 1123 labels of
    letters, digits and '-', at most 253 characters) or an IP address."""
    import ipaddress

    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    bad = next((c for c in host if not (c.isascii() and (c.isalnum() or c in ".-"))), None)
    why = ("is empty" if not host else f"contains {bad!r}" if bad is not None
           else f"is {len(host)} characters long (a DNS name has at most 253)" if len(host) > 253
           else "has an empty label ('..', or a '.' at the start)" if "" in labels
           else "has a label that starts or ends with '-', or is over 63 characters" if not all(
               HOST_LABEL.fullmatch(label) for label in labels)
           else "is not an IP address (and a DNS name does not end in a number)" if labels[-1].isdigit()
           else None)
    if why:
        raise InvalidArgument(f"host (--host) {host!r} {why}; give the agent's DNS name or IP address, e.g."
                              " ipum0.example.com or 10.1.0.7")
    return host


def job_partition_name(job_id: int) -> str:
    """The partition a running job holds, named as V-IPU's Slurm plugin names it."""
    return f"slurm_{job_id}"


def job_of_partition(name: str) -> int | None:
    """The job whose job_partition_name() this is, or None for any other partition."""
    number = name.removeprefix("slurm_")
    if number == name or not number.isdigit() or job_partition_name(int(number)) != name:  # "slurm_042" is nobody's
        return None
    return int(number)


def job_holder(job_id: int) -> str:
    """The holder of a job's partition."""
    return f"job {job_id}"


def check_user_holder(holder: str) -> None:
    """"job <n>" holds job n's partition for the scheduler, which frees it when the job ends: a caller releasing it
    would leave the job running on IPUs another partition could then take."""
    number = holder.removeprefix("job ")
    if number != holder and number.isdigit():
        raise InvalidArgument(f"holder {holder!r} is the scheduler's own (job {int(number)}'s partition is released when"
                              f" the job ends); cancel the job (vipu cancel {int(number)}), or name another holder")


def check_job_name(name: str, holder: str | None) -> None:
    """slurm_<n> is job n's: anyone else taking it would stop job n from starting (its partition could not be made)."""
    job = job_of_partition(name)
    if job is not None and holder != job_holder(job):
        raise InvalidArgument(f"partition name {name!r} is reserved for the partition of job {job} (slurm_<job id>);"
                              " choose another name")


def n_ipus(n: int) -> str:
    """'1 IPU', '4 IPUs': a count for a message."""
    return f"{n} IPU" if n == 1 else f"{n} IPUs"


def named(noun: str, names: list[str], limit: int = 5) -> str:
    """'partition p1', 'partitions p1, p2' (at most `limit` names, then '...'): names for a message."""
    shown = ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")
    return f"{noun}{'' if len(names) == 1 else 's'} {shown}"


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _power_of_two_near(n: int, limit: int) -> str:
    below = 1
    while below * 2 <= min(n, limit):
        below *= 2
    above = below * 2
    options = [below] + ([above] if above <= limit and n > below else [])
    return " or ".join(str(s) for s in options)


def check_size(size: int, pod: PodConfig, field: str = "size", fix: str | None = None) -> int:
    """`size` IPUs is a partition the Pod can give; `fix`, what to do about too many (default: fewer, or a Pod
    preset that has them)."""
    # limit is the largest power of two that fits the Pod, so a power of two no bigger than the Pod fits too:
    # beyond one ILD such a size is a power of two of whole ILDs, as V-IPU requires
    limit = pod.max_partition_ipus
    if size < 1:
        raise InvalidArgument(f"{field} is {size}; a partition needs a power of two of IPUs from 1 to {limit}")
    if size > pod.ipus:
        raise InvalidArgument(f"{field} is {size} but {pod.name} has {pod.ipus} IPUs; the largest partition is"
                              f" {limit}: {fix or too_many_fix(size, f'give {field} {limit} or less')}")
    if not is_power_of_two(size):
        raise InvalidArgument(
            f"{field} is {size}, not a power of two (partitions form rings); use {_power_of_two_near(size, limit)}"
        )
    return size


def too_many_fix(size: int, fewer: str, where: str = "") -> str:
    """What to do about asking a Pod for more IPUs than it has: `fewer` (how to ask for fewer), or a preset Pod
    that has `size` (`where`: how to name it)."""
    from vipu.hardware.pod_files import preset_with

    preset = preset_with(size)
    return fewer + (f", or a Pod that has {size} IPUs ({preset}{where})" if preset else "")


def check_gcds(size: int, num_gcds: int, gcd_sync_replicas: int | None) -> None:
    if num_gcds < 1 or size % num_gcds:
        divisors = [d for d in range(1, size + 1) if size % d == 0]
        raise InvalidArgument(
            f"num_gcds is {num_gcds}, which does not divide the partition size {size}; use one of"
            f" {', '.join(map(str, divisors))}"
        )
    # poprun's rules: each GCD (instance) runs the same number of replicas, and replicas x IPUs per replica fills
    # the partition; so the count divides the size and is a multiple of the GCDs
    allowed = [r for r in range(num_gcds, size + 1, num_gcds) if size % r == 0]
    if gcd_sync_replicas is not None and gcd_sync_replicas not in allowed:
        raise InvalidArgument(
            f"gcd_sync_replicas is {gcd_sync_replicas}, but a partition of {n_ipus(size)} in {num_gcds} GCD"
            f"{'s' if num_gcds > 1 else ''} syncs a number of replicas that divides its size and is a multiple of"
            f" its GCDs; use one of {', '.join(map(str, allowed))}, or leave it out")
