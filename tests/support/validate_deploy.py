#!/usr/bin/env python3
"""Validates what operators take from rules/deploy and rules/prometheus: the Kubernetes manifest
(kinds, the flags its containers pass exist in infdoctor's --help, its targets.conf is read by
`infdoctor serve --check-config`), the region's Prometheus config (`promtool check config`), and
the Grafana dashboard (its queries name only series infdoctor exports). Exits 1 naming each
problem."""
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml


def main():
    infdoctor, source = sys.argv[1], sys.argv[2]
    deploy = os.path.join(source, "rules", "deploy")
    problems = []

    def helptext(command):
        return subprocess.run([infdoctor, command, "--help"], capture_output=True, text=True, timeout=30).stdout

    docs = [d for d in yaml.safe_load_all(open(os.path.join(deploy, "kubernetes.yaml"))) if d]
    kinds = sorted(d.get("kind", "?") for d in docs)
    if kinds != ["ConfigMap", "CronJob", "Deployment", "Service"]:
        problems.append(f"kubernetes.yaml: kinds {kinds}, want ConfigMap, CronJob, Deployment, Service")
    for d in docs:
        for key in ("apiVersion", "kind", "metadata"):
            if key not in d:
                problems.append(f"kubernetes.yaml: a {d.get('kind', '?')} without {key}")
        kind = d.get("kind")
        if kind in ("Deployment", "CronJob"):
            spec = d["spec"]["template"]["spec"] if kind == "Deployment" else d["spec"]["jobTemplate"]["spec"]["template"]["spec"]
            for c in spec["containers"]:
                args = c["args"]
                known = helptext(args[0])
                for a in args:
                    if a.startswith("--") and not re.search(r"(^|[ ,])" + re.escape(a) + r"\b", known):
                        problems.append(f"kubernetes.yaml: {kind} passes {a}, which `infdoctor {args[0]} --help` does not know")
                if kind == "Deployment":
                    port = c["ports"][0]["containerPort"]
                    if f":{port}" not in args:
                        problems.append(f"kubernetes.yaml: the container port {port} is not what --listen gives")
                    for probe in ("readinessProbe", "livenessProbe"):
                        path = c[probe]["httpGet"]["path"]
                        if path not in ("/-/ready", "/-/healthy"):
                            problems.append(f"kubernetes.yaml: {probe} asks {path}")
        if kind == "ConfigMap":
            with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
                f.write(d["data"]["targets.conf"])
            r = subprocess.run([infdoctor, "serve", "--check-config", "--config", f.name],
                               capture_output=True, text=True, timeout=30)
            os.unlink(f.name)
            if r.returncode != 0:
                problems.append(f"kubernetes.yaml: targets.conf: {r.stderr.strip()}")
            elif len(r.stdout.splitlines()) != 2:
                problems.append(f"kubernetes.yaml: targets.conf read as {r.stdout!r}")

    r = subprocess.run(["promtool", "check", "config", os.path.join(deploy, "prometheus.yml")],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        problems.append(f"prometheus.yml: promtool check config: {r.stdout}{r.stderr}")

    # The families infdoctor declares, as its sources name them.
    families = set()
    for rel in ("src/report/prometheus.cpp", "src/serve/exporter.cpp"):
        families |= set(re.findall(r'"(infdoctor_[a-z_]+)"', open(os.path.join(source, rel)).read()))
    dashboard = json.load(open(os.path.join(deploy, "grafana-dashboard.json")))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    if len(exprs) < 4:
        problems.append("grafana-dashboard.json: fewer than four queries")
    titles = " ".join(p["title"] for p in dashboard["panels"])
    for want in ("Time to first token", "Top finding"):
        if want not in titles:
            problems.append(f"grafana-dashboard.json: no panel on {want}")
    alerts = open(os.path.join(source, "rules", "prometheus", "alerts.yml")).read()
    for where, text in [("grafana-dashboard.json", " ".join(exprs)), ("alerts.yml", alerts)]:
        for name in set(re.findall(r"\b(infdoctor_[a-z_]+)", text)):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            if base not in families:
                problems.append(f"{where}: {name} is not a series infdoctor exports")
    for v in ("vantage", "target"):
        if v not in [t["name"] for t in dashboard["templating"]["list"]]:
            problems.append(f"grafana-dashboard.json: no ${v} variable")

    for p in problems:
        print(p)
    print(f"{len(docs)} manifests, {len(exprs)} dashboard queries, {len(families)} families: "
          f"{'ok' if not problems else str(len(problems)) + ' problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
