"""The Kubernetes manifests of a vLLM plan: NVIDIA Dynamo's DynamoGraphDeployment on NVIDIA
parts, a Deployment of vLLM's ROCm image on AMD ones, and, for copies larger than a node, a
LeaderWorkerSet whose pods of one copy form its Ray cluster (vLLM 0.11's docs,
deployment/frameworks/lws.md). Every name comes from ``launch_flags.yaml``."""

from __future__ import annotations

import shlex

from .engine_configs import (
    DEVICE_RESOURCE,
    DYNAMO_VERSION,
    FRONT_PORT,
    on_ray,
    placements,
    platform,
    vllm_args,
    vllm_serve,
)
from .launch import LaunchPlan, engine_names
from .overlap import over_deepep, overlapped


def _app_name(plan: LaunchPlan) -> str:
    """The Kubernetes name of the plan's deployment: ``ie-`` and the model's name, lower case."""
    return "ie-" + "".join(
        c if c.isalnum() else "-" for c in plan.setting.model.name.lower()
    ).strip("-")


def dynamo_manifest(plan: LaunchPlan) -> str:
    """A DynamoGraphDeployment (Kubernetes) of the plan's vLLM workers (NVIDIA parts: the
    Dynamo operator asks for NVIDIA's device resource, its image is a CUDA build)."""
    import yaml

    name = _app_name(plan)
    image = f"nvcr.io/nvidia/ai-dynamo/vllm-runtime:{DYNAMO_VERSION}"
    services = {
        "Frontend": {
            "dynamoNamespace": name,
            "componentType": "frontend",
            "replicas": 1,
            "extraPodSpec": {"mainContainer": {"image": image}},
        }
    }
    for w in plan.workers:
        key = {"prefill": "VllmPrefillWorker"}.get(w.role, "VllmDecodeWorker")
        args = ["--model", plan.checkpoint, *vllm_args(plan, w)]
        if w.role == "prefill":
            args.append("--is-prefill-worker")
        service = {
            "dynamoNamespace": name,
            "envFromSecret": "hf-token-secret",
            "componentType": "worker",
            "replicas": w.count,
            "resources": {"limits": {"gpu": str(w.gpus)}},
            "extraPodSpec": {
                "mainContainer": {
                    "image": image,
                    "workingDir": "/workspace/components/backends/vllm",
                    "command": ["python3", "-m", "dynamo.vllm"],
                    "args": args,
                }
            },
        }
        if w.role != "server":
            service["subComponentType"] = w.role
        services[key] = service
    doc = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": name[:63]},
        "spec": {"services": services},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def rocm_manifest(plan: LaunchPlan) -> str:
    """The plan's ``vllm serve`` copies on AMD parts as Kubernetes takes them: a Deployment of
    vLLM's ROCm image whose replicas ask for AMD's device resource, and the Service that
    balances requests over them (vLLM 0.11's docs, deployment/k8s.md, "AMD GPU")."""
    import yaml

    names = engine_names("vllm")
    name = _app_name(plan)[:63]
    (w,) = plan.workers  # pools are refused on AMD parts (``_vllm``)
    gpus = {DEVICE_RESOURCE["rocm"]: str(w.gpus)}
    container = {
        "name": "vllm",
        "image": names["images"]["rocm"],
        "command": [*names["launch"]],
        "args": [plan.checkpoint, *vllm_args(plan, w), names["flags"]["port"], str(FRONT_PORT)],
        "env": [
            {
                "name": "HF_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": "hf-token-secret", "key": "token"}},
            }
        ],
        "ports": [{"containerPort": FRONT_PORT}],
        "resources": {"limits": dict(gpus), "requests": dict(gpus)},
    }

    def labels() -> dict:  # a dict each: YAML would write one shared object as an anchor
        return {"app": name}

    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels()},
        "spec": {
            "replicas": w.count,
            "selector": {"matchLabels": labels()},
            "template": {
                "metadata": {"labels": labels()},
                "spec": {"hostIPC": True, "containers": [container]},
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {
            "selector": labels(),
            "ports": [{"port": FRONT_PORT, "targetPort": FRONT_PORT, "protocol": "TCP"}],
        },
    }
    return yaml.safe_dump_all([deployment, service], sort_keys=False)


def lws_manifest(plan: LaunchPlan) -> str:
    """A LeaderWorkerSet of the plan's ``vllm serve`` copies larger than a node, with the
    Service in front of their leaders: each copy a group of one pod a node, the leader
    starting Ray's head and waiting for the group (vLLM's multi-node-serving.sh, shipped in its
    image), then ``vllm serve``; the workers joining the leader's address, which LWS gives them
    (``LWS_LEADER_ADDRESS``, ``LWS_GROUP_SIZE``)."""
    import yaml

    names = engine_names("vllm")
    lws = names["lws"]
    name = _app_name(plan)[:63]
    (w,) = plan.workers  # pools take Dynamo's manifest, copies of one node the others
    (place, *_) = placements(plan)["server"]
    gpus = {DEVICE_RESOURCE["cuda"]: str(place.gpus_per_node)}
    serve = [*vllm_serve(plan, w), *on_ray(), names["flags"]["port"], str(FRONT_PORT)]
    leader = (
        f"bash {lws['script']} leader --ray_cluster_size=$(LWS_GROUP_SIZE); {shlex.join(serve)}"
    )
    worker = f"bash {lws['script']} worker --ray_address=$(LWS_LEADER_ADDRESS)"

    def container(role: str, command: str) -> dict:
        out = {
            "name": f"vllm-{role}",
            "image": names["images"]["cuda"],
            "command": ["sh", "-c", command],
            "env": [
                {
                    "name": "HF_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": "hf-token-secret", "key": "token"}},
                }
            ],
            "resources": {"limits": dict(gpus), "requests": dict(gpus)},
            "volumeMounts": [{"mountPath": "/dev/shm", "name": "dshm"}],
        }
        if role == "leader":
            out["ports"] = [{"containerPort": FRONT_PORT}]
            out["readinessProbe"] = {
                "tcpSocket": {"port": FRONT_PORT},
                "initialDelaySeconds": 15,
                "periodSeconds": 10,
            }
        return out

    def pod(role: str, command: str) -> dict:  # a dict each: no YAML anchors
        shm = {"name": "dshm", "emptyDir": {"medium": "Memory"}}
        return {"containers": [container(role, command)], "volumes": [shm]}

    group = {
        "apiVersion": lws["apiVersion"],
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": w.count,
            "leaderWorkerTemplate": {
                "size": place.nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {
                    "metadata": {"labels": {"role": "leader"}},
                    "spec": pod("leader", leader),
                },
                "workerTemplate": {"spec": pod("worker", worker)},
            },
        },
    }
    service = {  # not the group's own name: LWS makes a headless Service of that name, the
        # pods' subdomain (their addresses), and makes none if one of that name exists
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name[:56].rstrip('-')}-leader"},
        "spec": {
            "selector": {lws["name_label"]: name, "role": "leader"},
            "ports": [{"port": FRONT_PORT, "targetPort": FRONT_PORT, "protocol": "TCP"}],
        },
    }
    return yaml.safe_dump_all([group, service], sort_keys=False)


def kubernetes_manifest(plan: LaunchPlan) -> tuple[str, str] | str:
    """(file name, text) of the Kubernetes manifest of a vLLM plan, or the line saying why
    there is none: copies of one node as Dynamo's graph (NVIDIA) or a Deployment of the ROCm
    image (AMD); copies of several nodes as a LeaderWorkerSet on NVIDIA parts."""
    if over_deepep(plan):
        what = "two-batch overlap" if overlapped(plan) else "DeepEP's exchange"
        return (
            f"no Kubernetes manifest: {what} selects vLLM's DeepEP kernels in each "
            "worker's environment (VLLM_ALL2ALL_BACKEND), which launch.sh sets and the "
            "manifests this export writes do not carry"
        )
    places = [p for ps in placements(plan).values() for p in ps]
    if all(p.nodes == 1 for p in places):
        if platform(plan) == "rocm":
            return "k8s-vllm-rocm.yaml", rocm_manifest(plan)
        return "k8s-dynamo.yaml", dynamo_manifest(plan)
    (w, *_) = plan.workers  # pool workers larger than a node are refused (``_vllm``)
    why = (
        "data-parallel ranks"
        if w.attention_dp > 1
        else "AMD parts"
        if platform(plan) != "cuda"
        else ""
    )
    if why:
        return (
            f"no Kubernetes manifest: a copy spans nodes, and for {why} this export writes "
            "none over several (LeaderWorkerSet runs vLLM's tensor and pipeline stages on Ray "
            "in NVIDIA's images only)"
        )
    return "k8s-vllm-lws.yaml", lws_manifest(plan)
