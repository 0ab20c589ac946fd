"""deploy/kuberay/raycluster.yaml: valid for KubeRay's RayCluster CRD (its schema stored beside this file, closed to
unknown fields as `kubectl apply --validate=strict` would be), its controller a supervised container of its own
whose command line vipu-server accepts, probes on what the image serves, autoscaling wired, state on a claim."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from vipu.server.app import is_loopback, parse_bundle
from vipu.server.arguments import parse_args

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy/kuberay/raycluster.yaml"
SCHEMA = Path(__file__).with_name("raycluster.v1.schema.json")


def documents() -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all(MANIFEST.read_text())}


def closed(schema):
    """The schema with every object that lists its properties closed to others: the API server prunes unknown
    fields silently, so a misspelt field (enableInTreeAutoScaling) would otherwise pass and do nothing."""
    if isinstance(schema, dict):
        schema = {k: closed(v) for k, v in schema.items()}
        if ("properties" in schema and "additionalProperties" not in schema
                and not schema.get("x-kubernetes-preserve-unknown-fields")):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [closed(v) for v in schema]
    return schema


def head_pod() -> dict:
    return documents()["RayCluster"]["spec"]["headGroupSpec"]["template"]["spec"]


def controller() -> dict:
    [found] = [c for c in head_pod()["containers"] if c["name"] == "vipu-server"]
    return found


def test_the_raycluster_is_valid_for_kuberays_crd():
    schema = json.loads(SCHEMA.read_text())
    assert "ray.io/v1" in schema["$comment"]
    cluster = documents()["RayCluster"]
    assert (cluster["apiVersion"], cluster["kind"]) == ("ray.io/v1", "RayCluster")
    jsonschema.validate(cluster, closed(schema))
    # and the check has teeth: a misspelt field is refused
    wrong = json.loads(json.dumps(cluster))
    wrong["spec"]["enableInTreeAutoScaling"] = wrong["spec"].pop("enableInTreeAutoscaling")
    with pytest.raises(jsonschema.ValidationError, match="enableInTreeAutoScaling"):
        jsonschema.validate(wrong, closed(schema))


def test_the_controller_is_its_own_supervised_container_and_its_command_line_parses():
    pod = head_pod()
    assert pod["containers"][0]["name"] == "ray-head"  # KubeRay runs Ray in the first container
    assert pod["restartPolicy"] == "Always"  # a controller that exits is restarted
    container = controller()
    assert "lifecycle" not in container  # no postStart: nothing supervised what it started
    assert container["command"] == ["vipu-server"]
    args = parse_args(container["args"])
    assert args.ray == "127.0.0.1:6379" and args.ray_wait >= 60  # the pod's Ray head, waited for if it starts later
    assert parse_bundle(args.machine_bundle) == {"ipu_host": 1.0}
    assert args.log_format == "json"
    # reachable from outside the pod, so --secure and over TLS, from the secret mounted where it reads it
    assert args.host == args.metrics_host == "0.0.0.0" and not is_loopback(args.host)
    assert args.secure and args.tls_cert and args.tls_key
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert str(args.tls_cert).startswith(mounts["vipu-tls"] + "/") and str(args.tls_key).startswith(mounts["vipu-tls"])
    # its state on the claim
    assert str(args.state_dir).startswith(mounts["vipu-state"] + "/")
    [claim_volume] = [v for v in pod["volumes"] if v["name"] == "vipu-state"]
    assert claim_volume["persistentVolumeClaim"]["claimName"] == documents()["PersistentVolumeClaim"]["metadata"]["name"]
    # the ports it declares are the ones it listens on, and the Service reaches them under the advertised name
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"vipu-grpc": args.port, "vipu-device": args.device_port, "vipu-metrics": args.metrics_port}
    service = documents()["Service"]
    assert service["metadata"]["name"] == args.advertise_host
    assert {p["targetPort"] for p in service["spec"]["ports"]} == set(ports)
    assert service["spec"]["selector"] == {"ray.io/cluster": "vipu-sim", "ray.io/node-type": "head"}


def test_probes_ask_what_the_image_serves():
    container = controller()
    args = parse_args(container["args"])
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": args.metrics_port}
    assert container["livenessProbe"]["tcpSocket"] == container["startupProbe"]["tcpSocket"] == {"port": args.port}
    probe = container["startupProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] >= args.ray_wait  # it may wait that long for Ray
    cluster = documents()["RayCluster"]["spec"]
    ray_containers = [head_pod()["containers"][0]] + [g["template"]["spec"]["containers"][0]
                                                      for g in cluster["workerGroupSpecs"]]
    for c in ray_containers:  # the dashboard agent of ray[default] (deploy/container/Containerfile)
        assert c["readinessProbe"]["httpGet"] == c["livenessProbe"]["httpGet"] == {"path": "/api/healthz",
                                                                                  "port": 52365}


def test_autoscaling_is_wired_for_the_worker_groups_bounds():
    spec = documents()["RayCluster"]["spec"]
    assert spec["enableInTreeAutoscaling"] is True
    assert spec["autoscalerOptions"]["version"] == "v1"  # v2 sets the head pod's restartPolicy to Never
    [workers] = spec["workerGroupSpecs"]
    assert 1 <= workers["minReplicas"] <= workers["replicas"] <= workers["maxReplicas"]
    resources = json.loads(json.loads(workers["rayStartParams"]["resources"]))
    assert resources["ipu_host"] >= 1  # what the controller's machine actors ask for (--machine-bundle ipu_host=1)
