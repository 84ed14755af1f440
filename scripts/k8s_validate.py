"""Validates docstream's Kubernetes manifests offline (no cluster, no network).

- Built-in kinds (Deployment, Service, ...): kubernetes-validate's bundled schemas, strict (unknown
  fields refused), for every Kubernetes version in --kubernetes-versions.
- KEDA's kinds (ScaledObject, TriggerAuthentication): the openAPIV3Schema of KEDA's CRDs kept in
  deploy/kubernetes/schemas/ (their sha256 checked first), made strict like kubectl's field
  validation, plus the CRDs' CEL rules that this script implements; their metadata is checked
  against Kubernetes' ObjectMeta. The CRD leaves a trigger's metadata a map of strings (KEDA's
  scalers parse it when they start): the scalers used here (kafka, prometheus) get their required
  keys and the types of their values checked, and a trigger of another type fails the run.
- Strimzi's kinds (KafkaTopic, KafkaUser), as `docstream topology --format strimzi` prints them
  (--strimzi) and the chart renders them (strimzi.enabled): the openAPIV3Schema of Strimzi's CRDs
  kept in deploy/kubernetes/schemas/ (sha256 checked), strict in the same way, for the version the
  object names (v1beta2 or v1); broken copies (an unknown operation, a misspelt field) must be refused.
- The kustomization lists every manifest of the directory and nothing else.
- A self-test: broken copies of the manifests must be refused, so a validator that checks nothing
  fails the run.
- The Helm chart (deploy/helm/docstream), rendered by scripts/helm-check.sh: every object of each
  render (--chart-render) validated as above, and the render given as --chart-default (KEDA on, as
  the manifests have it) the same objects as the manifests in substance: Helm's own labels
  (app.kubernetes.io/instance, managed-by, version, helm.sh/chart) and checksum/* annotations aside,
  JSON in a ConfigMap compared as data. A changed copy of the render must be told apart.

Run through scripts/k8s-validate.sh (npm run k8s:validate), which installs the pinned validator.
"""

from __future__ import annotations

import argparse
import copy
import glob
import hashlib
import json
import os
import sys
from typing import Any, Callable

import jsonschema
import yaml
from kubernetes_validate import utils as kv
from kubernetes_validate.version import __version__ as KV_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFESTS = os.path.join(ROOT, "deploy", "kubernetes")
SCHEMAS = os.path.join(MANIFESTS, "schemas")

# KEDA v2.20.2, config/crd/bases; Strimzi 0.51.0, packaging/install/cluster-operator
# (deploy/kubernetes/schemas/README.md).
CRDS = {
    "keda.sh_scaledobjects.yaml": "af35555862a83933b074af14ad439c4b4ceabaf4daa3e9338e9b23e36d308d80",
    "keda.sh_triggerauthentications.yaml": "275307b4cb19ca8f0f506a879282aa4c67587ac16ec757f494d6585c5c185d65",
    "strimzi-043-Crd-kafkatopic.yaml": "9c3a187244aa762db89117df14a7af0609aa3dd068ec6cd6c7195b56af580c74",
    "strimzi-044-Crd-kafkauser.yaml": "5c31f18f6c2beb37c2bb3dfd3e7773f61b05bb9b68126ba7671a50f4429ae404",
}

Doc = dict[str, Any]


def _min_le_max(spec: Doc) -> bool:
    return "minReplicaCount" not in spec or spec["minReplicaCount"] <= spec.get("maxReplicaCount", 100)


# The CEL rules (x-kubernetes-validations) of the vendored CRDs, by their exact text. A CRD with a
# rule missing here fails the run rather than going unchecked.
CEL_RULES: dict[str, Callable[[Doc], bool]] = {
    "!has(self.minReplicaCount) || self.minReplicaCount <= (has(self.maxReplicaCount) ? self.maxReplicaCount : 100)": _min_le_max,
}


class Invalid(Exception):
    pass


def _number(value: str) -> bool:
    try:
        float(value)
        return True
    except ValueError:
        return False


def _one_of(*values: str) -> Callable[[str], bool]:
    return lambda v: v in values


_BOOL = _one_of("true", "false")

# Per scaler (KEDA 2.20's documentation of the kafka and prometheus scalers): the metadata keys it
# needs, and the value checks of the keys whose values it parses.
TRIGGER_METADATA: dict[str, tuple[list[str], dict[str, Callable[[str], bool]]]] = {
    "kafka": (
        ["bootstrapServers", "consumerGroup"],
        {
            "lagThreshold": _number,
            "activationLagThreshold": _number,
            "offsetResetPolicy": _one_of("earliest", "latest"),
            "allowIdleConsumers": _BOOL,
            "limitToPartitionsWithLag": _BOOL,
            "excludePersistentLag": _BOOL,
            "scaleToZeroOnInvalidOffset": _BOOL,
            "tls": _one_of("enable", "disable"),
            "sasl": _one_of("none", "plaintext", "scram_sha256", "scram_sha512", "oauthbearer", "gssapi"),
        },
    ),
    "prometheus": (
        ["serverAddress", "query", "threshold"],
        {
            "serverAddress": lambda v: v.startswith(("http://", "https://")),
            "threshold": _number,
            "activationThreshold": _number,
            "ignoreNullValues": _BOOL,
            "unsafeSsl": _BOOL,
        },
    ),
}
# Utilization is for the cpu and memory scalers only.
TRIGGER_METRIC_TYPES = ("AverageValue", "Value")


def check_triggers(doc: Doc) -> None:
    """The metadata of each ScaledObject trigger, as its scaler would parse it at start."""
    for i, trigger in enumerate(doc.get("spec", {}).get("triggers", [])):
        where = f"spec.triggers.{i}"
        kind = trigger.get("type")
        if kind not in TRIGGER_METADATA:
            raise Invalid(f"{where}.type: {kind!r}: this script checks only {sorted(TRIGGER_METADATA)}")
        if trigger.get("metricType", "AverageValue") not in TRIGGER_METRIC_TYPES:
            raise Invalid(f"{where}.metricType: {trigger['metricType']!r} is not one of {TRIGGER_METRIC_TYPES}")
        required, checks = TRIGGER_METADATA[kind]
        metadata = trigger.get("metadata", {})
        for key in required:
            if not metadata.get(key):
                raise Invalid(f"{where}.metadata.{key}: required by the {kind} scaler")
        for key, ok in checks.items():
            if key in metadata and not ok(str(metadata[key])):
                raise Invalid(f"{where}.metadata.{key}: {metadata[key]!r} is not what the {kind} scaler reads")
        if metadata.get("allowIdleConsumers") == "true" and metadata.get("limitToPartitionsWithLag") == "true":
            raise Invalid(f"{where}.metadata: allowIdleConsumers and limitToPartitionsWithLag cannot both be true")


def load_yaml(path: str) -> list[Doc]:
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def strictify(schema: Any) -> Any:
    """Refuses unknown fields wherever the schema lists the known ones (kubectl's strict validation)."""
    if isinstance(schema, dict):
        out = {k: strictify(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strictify(v) for v in schema]
    return schema


def cel_rules(schema: Any, at: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """Every x-kubernetes-validations rule with the path of the object it applies to."""
    found: list[tuple[tuple[str, ...], str]] = []
    if isinstance(schema, dict):
        for rule in schema.get("x-kubernetes-validations", []):
            found.append((at, rule["rule"]))
        for name, sub in schema.get("properties", {}).items():
            found.extend(cel_rules(sub, at + (name,)))
        if isinstance(schema.get("items"), dict):
            # Rules inside arrays would need every element's path: none in these CRDs.
            if cel_rules(schema["items"]):
                raise Invalid(f"CEL rule inside an array at {'.'.join(at)}: not supported by this script")
    return found


class CrdSchemas:
    def __init__(self) -> None:
        self.by_kind: dict[tuple[str, str], tuple[Any, list[tuple[tuple[str, ...], str]]]] = {}
        for name, digest in CRDS.items():
            path = os.path.join(SCHEMAS, name)
            with open(path, "rb") as f:
                actual = hashlib.sha256(f.read()).hexdigest()
            if actual != digest:
                raise Invalid(f"{path}: sha256 {actual}, expected {digest} (see schemas/README.md)")
            for crd in load_yaml(path):
                group = crd["spec"]["group"]
                kind = crd["spec"]["names"]["kind"]
                for version in crd["spec"]["versions"]:
                    schema = version["schema"]["openAPIV3Schema"]
                    rules = cel_rules(schema)
                    unknown = [rule for _, rule in rules if rule not in CEL_RULES]
                    if unknown:
                        raise Invalid(f"{name}: CEL rule(s) this script does not implement: {unknown}")
                    self.by_kind[(f"{group}/{version['name']}", kind)] = (strictify(schema), rules)

    def knows(self, doc: Doc) -> bool:
        return (doc.get("apiVersion"), doc.get("kind")) in self.by_kind

    def validate(self, doc: Doc, k8s_version: str) -> None:
        schema, rules = self.by_kind[(doc["apiVersion"], doc["kind"])]
        errors = sorted(
            jsonschema.Draft7Validator(schema).iter_errors(doc), key=lambda e: list(e.absolute_path)
        )
        if errors:
            e = errors[0]
            where = ".".join(str(p) for p in e.absolute_path) or "(root)"
            raise Invalid(f"{where}: {e.message}")
        for at, rule in rules:
            target: Any = doc
            for step in at:
                target = target.get(step, {}) if isinstance(target, dict) else {}
            if not CEL_RULES[rule](target):
                raise Invalid(f"{'.'.join(at)}: rule failed: {rule}")
        if doc["kind"] == "ScaledObject":
            check_triggers(doc)
        # The CRD leaves metadata to the API server: check it as any object's ObjectMeta.
        validate_builtin({"apiVersion": "v1", "kind": "ConfigMap", "metadata": doc.get("metadata", {})}, k8s_version)


def validate_builtin(doc: Doc, k8s_version: str) -> None:
    try:
        kv.validate(doc, k8s_version, strict=True)
    except kv.ValidationError as e:
        where = ".".join(str(p) for p in e.path) or "(root)"
        raise Invalid(f"{where}: {e.message}") from None
    except kv.SchemaNotFoundError as e:
        raise Invalid(e.message) from None


def validate_doc(doc: Doc, crds: CrdSchemas, versions: list[str]) -> None:
    for version in versions:
        try:
            if crds.knows(doc):
                crds.validate(doc, version)
            else:
                validate_builtin(doc, version)
        except Invalid as e:
            raise Invalid(f"Kubernetes {version}: {e}") from None


def check_kustomization(doc: Doc, manifests: list[str]) -> None:
    listed = doc.get("resources", [])
    expected = sorted(os.path.basename(p) for p in manifests)
    if sorted(listed) != expected:
        raise Invalid(f"resources {sorted(listed)} differ from the manifests in the directory {expected}")


def broken_copies(docs: dict[str, Doc]) -> list[tuple[str, Doc]]:
    """Manifests with one known mistake each: every one must be refused."""
    cases: list[tuple[str, Doc]] = []

    def case(what: str, kind: str, change: Callable[[Doc], None]) -> None:
        doc = copy.deepcopy(docs[kind])
        change(doc)
        cases.append((what, doc))

    def typo_probe(d: Doc) -> None:
        c = d["spec"]["template"]["spec"]["containers"][0]
        c["livenessProb"] = c.pop("livenessProbe")

    case("a misspelt field of a Deployment's container", "Deployment", typo_probe)
    case(
        "a port number as a word",
        "Deployment",
        lambda d: d["spec"]["template"]["spec"]["containers"][0]["ports"][0].update(containerPort="x"),
    )
    case("a ScaledObject's maxReplicaCount as a string", "ScaledObject", lambda d: d["spec"].update(maxReplicaCount="12"))
    case("a ScaledObject without triggers", "ScaledObject", lambda d: d["spec"].pop("triggers"))
    case(
        "a ScaledObject with minReplicaCount above maxReplicaCount (CEL rule)",
        "ScaledObject",
        lambda d: d["spec"].update(minReplicaCount=20),
    )

    def prometheus(d: Doc) -> Doc:
        return next(t for t in d["spec"]["triggers"] if t["type"] == "prometheus")

    case(
        "a prometheus trigger without its query",
        "ScaledObject",
        lambda d: prometheus(d)["metadata"].pop("query"),
    )
    case(
        "a prometheus trigger whose threshold is not a number",
        "ScaledObject",
        lambda d: prometheus(d)["metadata"].update(threshold="400 documents"),
    )
    case(
        "a trigger with metricType Utilization (cpu and memory only)",
        "ScaledObject",
        lambda d: prometheus(d).update(metricType="Utilization"),
    )
    case(
        "an unknown field in a TriggerAuthentication's secretTargetRef",
        "TriggerAuthentication",
        lambda d: d["spec"]["secretTargetRef"][0].update(secret="docstream-kafka"),
    )
    case(
        "an invalid label value in a ScaledObject's metadata",
        "ScaledObject",
        lambda d: d["metadata"]["labels"].update(broken={"not": "a string"}),
    )
    return cases


# What Helm adds to the objects kustomize has, and what a comparison in substance leaves out.
HELM_LABELS = {"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart"}


def _strip_labels(labels: Any) -> None:
    if isinstance(labels, dict):
        for key in HELM_LABELS:
            labels.pop(key, None)


def substance(doc: Doc) -> Doc:
    """The object without what only tells who rendered it (Helm's labels, checksum annotations)."""
    doc = copy.deepcopy(doc)
    for meta in (doc.get("metadata", {}), doc.get("spec", {}).get("template", {}).get("metadata", {})):
        _strip_labels(meta.get("labels"))
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            for key in [k for k in annotations if k.startswith("checksum/")]:
                del annotations[key]
    spec = doc.get("spec", {})
    if isinstance(spec, dict):
        _strip_labels(spec.get("selector", {}).get("matchLabels") if isinstance(spec.get("selector"), dict) else None)
        if doc.get("kind") == "Service":
            _strip_labels(spec.get("selector"))
    if doc.get("kind") == "ConfigMap":
        for key, value in list(doc.get("data", {}).items()):
            if key.endswith(".json"):
                doc["data"][key] = json.loads(value)
    return doc


def differences(a: Any, b: Any, at: str = "") -> list[str]:
    """Where two parsed objects differ, as paths (a few are enough to say what to fix)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b), key=str):
            where = f"{at}.{key}" if at else str(key)
            if key not in a:
                out.append(f"{where}: only in the chart")
            elif key not in b:
                out.append(f"{where}: only in the manifests")
            else:
                out.extend(differences(a[key], b[key], where))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{at}[{i}]")]
    return [] if a == b else [f"{at}: manifests {a!r}, chart {b!r}"]


def compare_with_manifests(manifests: list[Doc], chart: list[Doc]) -> list[str]:
    def key(doc: Doc) -> tuple[str, str]:
        return (doc.get("kind", "?"), doc.get("metadata", {}).get("name", "?"))

    ours = {key(d): substance(d) for d in manifests}
    theirs = {key(d): substance(d) for d in chart}
    out = [f"{k[0]}/{k[1]}: only in the manifests" for k in sorted(ours.keys() - theirs.keys())]
    out += [f"{k[0]}/{k[1]}: only in the chart" for k in sorted(theirs.keys() - ours.keys())]
    for k in sorted(ours.keys() & theirs.keys()):
        out += [f"{k[0]}/{k[1]}: {d}" for d in differences(ours[k], theirs[k])]
    return out


def check_chart(args: argparse.Namespace, crds: "CrdSchemas", versions: list[str], manifests: list[Doc]) -> int:
    failures = 0
    for path in args.chart_render + ([args.chart_default] if args.chart_default else []):
        docs = load_yaml(path)
        if not docs:
            failures += 1
            print(f"FAIL chart {path}: no object rendered")
        for doc in docs:
            label = f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
            try:
                validate_doc(doc, crds, versions)
                print(f"ok   chart {os.path.basename(path)}  {label}")
            except Invalid as e:
                failures += 1
                print(f"FAIL chart {os.path.basename(path)}  {label}  {e}")
    if args.chart_default:
        chart = load_yaml(args.chart_default)
        diffs = compare_with_manifests(manifests, chart)
        for d in diffs:
            print(f"FAIL chart render {os.path.basename(args.chart_default)} differs from deploy/kubernetes: {d}")
        failures += len(diffs)
        if not diffs:
            print(f"ok   chart render {os.path.basename(args.chart_default)} = deploy/kubernetes in substance ({len(chart)} objects)")
        # Self-test of the comparison: a changed copy must differ.
        changed = copy.deepcopy(chart)
        deployment = next((d for d in changed if d.get("kind") == "Deployment"), None)
        if deployment is None:
            failures += 1
            print("FAIL self-test: no Deployment in the chart's render")
        else:
            deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 44
            if compare_with_manifests(manifests, changed):
                print("ok   self-test: a chart render with another grace period differs from the manifests")
            else:
                failures += 1
                print("FAIL self-test: a changed chart render compared equal to the manifests")
    return failures


def strimzi_broken_copies(docs: list[Doc]) -> list[tuple[str, Doc]]:
    """Copies of a printed KafkaTopic and KafkaUser with one mistake each, which must be refused."""
    out: list[tuple[str, Doc]] = []
    topic = next((d for d in docs if d.get("kind") == "KafkaTopic"), None)
    user = next((d for d in docs if d.get("kind") == "KafkaUser"), None)
    if topic is not None:
        d = copy.deepcopy(topic)
        d["spec"]["partitions"] = "three"
        out.append(("a KafkaTopic with partitions as a string", d))
        d = copy.deepcopy(topic)
        d["spec"]["replica"] = d["spec"].pop("replicas")
        out.append(("a KafkaTopic with spec.replica (misspelt)", d))
    if user is not None:
        d = copy.deepcopy(user)
        d["spec"]["authorization"]["acls"][0]["operations"] = ["Reed"]
        out.append(("a KafkaUser ACL with the operation Reed", d))
        d = copy.deepcopy(user)
        d["spec"]["authorization"]["acls"][0]["resource"]["patternType"] = "prefixed"
        out.append(("a KafkaUser ACL with patternType prefixed (Strimzi says prefix)", d))
    return out


def check_strimzi(paths: list[str], crds: "CrdSchemas", versions: list[str]) -> int:
    failures = 0
    for path in paths:
        docs = load_yaml(path)
        kinds = {d.get("kind") for d in docs}
        if not {"KafkaTopic", "KafkaUser"} <= kinds:
            failures += 1
            print(f"FAIL strimzi {path}: no KafkaTopic and KafkaUser in it (kinds: {sorted(str(k) for k in kinds)})")
        for doc in docs:
            label = f"{doc.get('apiVersion')} {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
            try:
                if not crds.knows(doc):
                    raise Invalid(f"no CRD schema for {doc.get('apiVersion')} {doc.get('kind')}")
                validate_doc(doc, crds, versions)
                print(f"ok   strimzi {os.path.basename(path)}  {label}")
            except Invalid as e:
                failures += 1
                print(f"FAIL strimzi {os.path.basename(path)}  {label}  {e}")
        for what, doc in strimzi_broken_copies(docs):
            try:
                validate_doc(doc, crds, versions)
                failures += 1
                print(f"FAIL self-test: {what} was accepted")
            except Invalid as e:
                print(f"ok   self-test: refused {what}: {e}")
    return failures


def compare_strimzi(pairs: list[str]) -> int:
    """Each RENDER=PRINTED pair: the chart's KafkaTopic/KafkaUser objects equal the command's."""
    failures = 0
    for pair in pairs:
        render, printed = pair.split("=", 1)
        pick = lambda docs: {  # noqa: E731
            (d["kind"], d["metadata"]["name"]): d for d in docs if d.get("kind") in ("KafkaTopic", "KafkaUser")
        }
        chart, cli = pick(load_yaml(render)), pick(load_yaml(printed))
        diffs = [f"{k[0]}/{k[1]} only in the chart" for k in chart.keys() - cli.keys()]
        diffs += [f"{k[0]}/{k[1]} only in docstream topology" for k in cli.keys() - chart.keys()]
        for k in sorted(chart.keys() & cli.keys()):
            diffs += [f"{k[0]}/{k[1]}: {d}" for d in differences(chart[k], cli[k])]
        for d in diffs:
            print(f"FAIL chart {os.path.basename(render)}: Strimzi objects differ from docstream topology: {d}")
        failures += len(diffs)
        if not chart:
            failures += 1
            print(f"FAIL chart {os.path.basename(render)}: no KafkaTopic or KafkaUser rendered")
        elif not diffs:
            print(f"ok   chart {os.path.basename(render)}: {len(chart)} Strimzi objects = docstream topology --format strimzi")
        # Self-test of the comparison: one ACL less must differ.
        user = next((k for k in chart if k[0] == "KafkaUser"), None)
        if user is not None:
            changed = copy.deepcopy(chart[user])
            changed["spec"]["authorization"]["acls"].pop()
            if differences(changed, cli.get(user, {})):
                print(f"ok   self-test: a KafkaUser with one ACL less differs from docstream topology's")
            else:
                failures += 1
                print("FAIL self-test: a KafkaUser with one ACL less compared equal")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chart-render", action="append", default=[], help="a rendered chart (helm template) to validate")
    parser.add_argument(
        "--chart-default",
        help="the chart rendered as the manifests are (KEDA on): validated, and compared with the manifests",
    )
    parser.add_argument(
        "--strimzi",
        action="append",
        default=[],
        help="Strimzi KafkaTopic/KafkaUser manifests (docstream topology --format strimzi) to validate",
    )
    parser.add_argument(
        "--strimzi-compare",
        action="append",
        default=[],
        metavar="RENDER=PRINTED",
        help="a chart render whose KafkaTopic/KafkaUser objects must equal docstream topology's printed ones",
    )
    parser.add_argument(
        "--kubernetes-versions",
        default="1.30.0,1.37.0",
        help="comma-separated Kubernetes versions to validate against (default: 1.30.0,1.37.0)",
    )
    args = parser.parse_args()
    versions = [v.strip() for v in args.kubernetes_versions.split(",") if v.strip()]
    print(f"k8s-validate: kubernetes-validate {KV_VERSION}, jsonschema {version_of('jsonschema')}, Kubernetes {', '.join(versions)}")

    failures = 0
    try:
        crds = CrdSchemas()
    except Invalid as e:
        print(f"FAIL schemas: {e}")
        return 1
    # The vendored CRDs are themselves valid CustomResourceDefinitions.
    for name in CRDS:
        for doc in load_yaml(os.path.join(SCHEMAS, name)):
            try:
                validate_doc(doc, crds, versions)
                print(f"ok   schemas/{name}  {doc['kind']}/{doc['metadata']['name']}")
            except Invalid as e:
                failures += 1
                print(f"FAIL schemas/{name}  {e}")

    files = sorted(glob.glob(os.path.join(MANIFESTS, "*.yaml")))
    manifests = [f for f in files if os.path.basename(f) != "kustomization.yaml"]
    by_kind: dict[str, Doc] = {}
    objects = 0
    for path in files:
        rel = os.path.relpath(path, ROOT)
        try:
            docs = load_yaml(path)
        except yaml.YAMLError as e:
            failures += 1
            print(f"FAIL {rel}: not YAML: {e}")
            continue
        if not docs:
            failures += 1
            print(f"FAIL {rel}: no object")
        for doc in docs:
            label = f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
            try:
                if doc.get("kind") == "Kustomization":
                    check_kustomization(doc, manifests)
                    print(f"ok   {rel}  Kustomization (lists every manifest)")
                    continue
                validate_doc(doc, crds, versions)
                objects += 1
                by_kind.setdefault(doc["kind"], doc)
                print(f"ok   {rel}  {label}")
            except Invalid as e:
                failures += 1
                print(f"FAIL {rel}  {label}  {e}")

    if args.chart_render or args.chart_default:
        all_manifests = [d for p in manifests for d in load_yaml(p)]
        failures += check_chart(args, crds, versions, all_manifests)
    if args.strimzi:
        failures += check_strimzi(args.strimzi, crds, versions)
    if args.strimzi_compare:
        failures += compare_strimzi(args.strimzi_compare)

    refused = 0
    needed = {"Deployment", "ScaledObject", "TriggerAuthentication"}
    if not needed <= by_kind.keys():
        failures += 1
        print(f"FAIL self-test: no {sorted(needed - by_kind.keys())} among the manifests")
    else:
        for what, doc in broken_copies(by_kind):
            try:
                validate_doc(doc, crds, versions)
                failures += 1
                print(f"FAIL self-test: {what} was accepted")
            except Invalid as e:
                refused += 1
                print(f"ok   self-test: refused {what}: {e}")

    print(
        f"k8s-validate: {objects} objects in {len(files)} files, {refused} broken copies refused, "
        f"{failures} failure(s)"
    )
    return 1 if failures else 0


def version_of(package: str) -> str:
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    sys.exit(main())
