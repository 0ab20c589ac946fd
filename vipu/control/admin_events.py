"""The admin's lines of the log: one for each change of an agent (created, drained, resumed, removed), of IPUs
(failed, repaired), of a cluster, an allocation or a user, worked out as the lifecycle events are (lifecycle.py):
from the records each commit puts and deletes, so that no path can forget its line (a command, a machine's actor
lost, the first start's agents). docs/logging.md lists them; a killed machine actor, which commits nothing, is
logged by its command (`machine_killed`).

Why an agent's line says DRAINING or DRAINED and not the record's DRAINED: every view shows the state
agent_states.py works out, and the log is read beside them."""

from __future__ import annotations

from typing import Iterable

from pydantic import BaseModel

from vipu.partition.admin_records import Agent
from vipu.partition.agent_states import agent_state, holders, jobs_of
from vipu.partition.node_names import hostlist, ranges


ADMIN_KINDS = frozenset({"agent", "ipu_failure", "cluster", "allocation", "user"})


class AdminEvents:
    """The admin records last seen, to tell a change from a creation; `per_machine`: IPUs per machine."""

    def __init__(self, records: Iterable[tuple[str, BaseModel]], per_machine: int):
        self.per_machine = per_machine
        self._agents: dict[str, Agent] = {}
        self._drained: dict[int, Agent] = {}  # by machine: a job's end looks here, not at each of 16,384 agents
        self._others: dict[tuple[str, str], BaseModel] = {}  # clusters, allocations, users
        for kind, record in records:
            self._seen(kind, record)

    def _seen(self, kind: str, record) -> None:
        if kind == "agent":
            self._agents[record.name] = record
            self._drained.pop(record.machine, None)
            if record.state != "ONLINE":
                self._drained[record.machine] = record
        elif kind in ("cluster", "allocation", "user"):
            self._others[kind, record.name] = record

    def events(self, puts: list, deletes: list, partitions: Iterable, removed: list) -> list[tuple]:
        """(event, subject, what, fields) for each change of these; `partitions`: every one after the commit (read
        only for a drained agent's), `removed`: those it removed. Most commits are a job's: they cost one look."""
        if not any(kind in ADMIN_KINDS for kind, *_ in (*puts, *deletes)):
            return self._drains_done(partitions, removed)
        out = self._drains_done(partitions, removed)
        created = [r for kind, name, r in puts if kind == "agent" and name not in self._agents]
        if created:
            out.append(_created_agents(created))
        changed = [r for kind, name, r in puts if kind == "agent" and name in self._agents]
        if changed:
            held = holders(partitions, self.per_machine)
            out += [_agent_change(self._agents[a.name], a, held.get(a.machine, [])) for a in changed]
        failed = sorted(r.ipu for kind, _, r in puts if kind == "ipu_failure")
        if failed:
            why = next(r.reason for kind, _, r in puts if kind == "ipu_failure")
            text = why.text if why is not None else None
            out.append(("ipus_failed", _ipus(failed), "failed", {"ipus": failed, "reason": text}))
        repaired = sorted(int(name) for kind, name in deletes if kind == "ipu_failure")
        if repaired:
            out.append(("ipus_repaired", _ipus(repaired), "repaired", {"ipus": repaired, "reason": None}))
        for kind, name, record in puts:
            if kind in ("cluster", "allocation", "user"):
                out += _other_put(kind, self._others.get((kind, name)), record)
        for kind, name in deletes:
            if kind == "agent" and name in self._agents:
                gone = self._agents.pop(name)
                self._drained.pop(gone.machine, None)
                out.append(("agent_removed", f"agent {name}", f"removed (machine {gone.machine} has no agent now)",
                            {"agent": name, "machine": gone.machine, "reason": None}))
            elif kind in ("cluster", "allocation", "user") and self._others.pop((kind, name), None) is not None:
                out.append((f"{kind}_removed", f"{kind} {name}", "removed", {kind: name, "reason": None}))
        for kind, _, record in puts:
            self._seen(kind, record)
        return out

    def _drains_done(self, partitions: list, removed: list) -> list[tuple]:
        """DRAINING to DRAINED: the drained agents the removed partitions were the last on (their jobs ended)."""
        if not removed or not self._drained:
            return []
        gone = holders(removed, self.per_machine)
        if not any(m in self._drained for m in gone):
            return []
        left = holders(partitions, self.per_machine)  # a drained agent's job ended: rare, so every partition read
        return [("agent_drain_done", f"agent {a.name}", f"DRAINED, {', '.join(gone[m])} removed: nothing runs on it",
                 {"agent": a.name, "machine": m, "state": "DRAINED",
                  "reason": a.reason.text if a.reason is not None else None})
                for m, a in sorted(self._drained.items()) if m in gone and m not in left]


def _ipus(ipus: list[int]) -> str:
    return f"IPU {ipus[0]}" if len(ipus) == 1 else f"IPUs {' '.join(map(str, ipus))}"


def _created_agents(agents: list[Agent]) -> tuple:
    """One line for the agents one commit made (the first start makes every one of the Pod's)."""
    names = hostlist(a.name for a in agents)
    machines = ranges(a.machine for a in agents)  # "0-15" or "3"
    subject = f"agent {names}" if len(agents) == 1 else f"agents {names}"
    return ("agent_created", subject, f"created (machine{'s' if len(agents) > 1 else ''} {machines})",
            {"agent": names, "agents": len(agents), "reason": None})


def _agent_change(before: Agent, after: Agent, held: list[str]) -> tuple:
    """A drain (again: a new reason) or a resume, with the state every view shows and what it waits for."""
    state = agent_state(after.state != "ONLINE", bool(held))
    fields = {"agent": after.name, "machine": after.machine, "state": state}
    if after.state == "ONLINE":
        was = "" if before.state == "ONLINE" else " (was drained)"
        return "agent_resumed", f"agent {after.name}", f"resumed{was}", {**fields, "reason": None}
    jobs = jobs_of(held)
    waits = f": {', '.join(sorted(held))} still on its IPUs" if held else ""
    reason = after.reason.text if after.reason is not None else None
    return ("agent_drained", f"agent {after.name}", f"drained, {state}{waits}",
            {**fields, "reason": reason, "partitions": sorted(held), "jobs": list(jobs)})


def _other_put(kind: str, before, after) -> list[tuple]:
    """A cluster, allocation or user made or changed. An agent joining or leaving a cluster or an allocation is
    the agent's own line; a user's new key or account is a line of its own (never the key)."""
    subject = f"{kind} {after.name}"
    if before is None:
        fields: dict = {kind: after.name, "reason": None}
        if kind == "user":
            fields.update(admin=after.admin, unix_user=after.unix_user)
            return [("user_created", subject, "created" + (" (admin)" if after.admin else ""), fields)]
        fields["agents"] = hostlist(after.agents)
        return [(f"{kind}_created", subject, f"created ({fields['agents']})", fields)]
    if kind != "user":
        return []
    if before.unix_user != after.unix_user:
        return [("user_updated", subject, f"runs programs as {after.unix_user or 'no account'}",
                 {"user": after.name, "unix_user": after.unix_user, "reason": None})]
    if before.key_sha256 != after.key_sha256:
        return [("user_updated", subject, "has a new access key", {"user": after.name, "reason": None})]
    return []
