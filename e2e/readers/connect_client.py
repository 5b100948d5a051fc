#!/usr/bin/env python3
"""Drive floe's REST API with kafka-connect-py, a Kafka Connect client from
PyPI that nobody here wrote, the way a Connect user's scripts do.

e2e/connect_py_test.go runs it against a real floe:

    connect_client.py --url http://127.0.0.1:PORT --name NAME --config FILE \\
        --plugin PLUGIN [--timeout SECONDS]

FILE holds the connector's config (a JSON object of strings). The script
makes every call of the client's connector API once or more: cluster
info, list (plain, expand=status, expand=info, by pattern and by state),
create, get, config, update, status, tasks, task status, pause, resume,
stop, restart (plain and with tasks), task restart, topics, plugins,
validate and delete, waiting between them for the state a call asked
for. It asserts nothing itself: it prints one JSON object on stdout,

    {"steps": [{"step": "create", "call": "create_connector",
                "ok": true, "result": {...}}, ...]}

one entry per call in order, with "ok": false, the HTTP status (when
there was one) and the error text for a call that raised, so the Go test
says which answer was wrong and what it was. A wait that times out is a
step with "ok": false and the last status it saw.
"""

import argparse
import json
import sys
import time

from kafka_connect import KafkaConnect
from requests.exceptions import HTTPError


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True, help="floe's REST listener")
    p.add_argument("--name", required=True, help="the connector to create")
    p.add_argument("--config", required=True, help="JSON file of the connector's config")
    p.add_argument("--plugin", required=True, help="plugin name for config/validate")
    p.add_argument("--timeout", type=float, default=120, help="seconds each wait may take")
    return p.parse_args(argv)


class Run:
    """Records each call's answer or error, in order."""

    def __init__(self, client, timeout):
        self.client = client
        self.timeout = timeout
        self.steps = []

    def call(self, step, method, *args, **kwargs):
        entry = {"step": step, "call": method}
        try:
            entry["result"] = getattr(self.client, method)(*args, **kwargs)
            entry["ok"] = True
        except HTTPError as e:
            entry["ok"] = False
            resp = e.response
            entry["status"] = resp.status_code if resp is not None else None
            entry["error"] = resp.text if resp is not None else str(e)
        except Exception as e:  # a client bug or a body it cannot parse
            entry["ok"] = False
            entry["error"] = f"{type(e).__name__}: {e}"
        self.steps.append(entry)
        return entry

    def wait(self, step, name, state, tasks):
        """Polls get_connector_status until the connector and at least
        tasks tasks are all in state (tasks=0: the connector alone)."""
        deadline = time.monotonic() + self.timeout
        start = time.monotonic()
        last = None
        while True:
            try:
                last = self.client.get_connector_status(name)
                ts = last.get("tasks", [])
                done = last["connector"]["state"] == state
                if tasks:
                    done = done and len(ts) >= tasks and all(t["state"] == state for t in ts)
                if done:
                    self.steps.append({"step": step, "call": "get_connector_status", "ok": True,
                                       "result": last, "seconds": round(time.monotonic() - start, 3)})
                    return
            except HTTPError as e:
                last = {"error": e.response.text if e.response is not None else str(e)}
            if time.monotonic() > deadline:
                self.steps.append({"step": step, "call": "get_connector_status", "ok": False,
                                   "error": f"not {state} within {self.timeout} s", "result": last})
                return
            time.sleep(0.2)


def main(argv):
    args = parse_args(argv)
    with open(args.config) as f:
        config = json.load(f)
    name = args.name
    run = Run(KafkaConnect(url=args.url), args.timeout)
    tasks = int(config.get("tasks.max", "1"))

    run.call("info", "get_cluster_info")
    run.call("list-before", "list_connectors")
    run.call("create", "create_connector", {"name": name, "config": config})
    run.wait("running", name, "RUNNING", tasks)
    run.call("list", "list_connectors")
    run.call("list-status", "list_connectors", expand="status")
    run.call("list-info", "list_connectors", expand="info")
    run.call("list-pattern", "list_connectors", pattern="^" + name[:3])
    run.call("list-pattern-none", "list_connectors", pattern="^no-such-prefix")
    run.call("list-running", "list_connectors", state="running")
    run.call("get", "get_connector", name)
    run.call("config", "get_connector_config", name)
    run.call("status", "get_connector_status", name)
    run.call("tasks", "list_connector_tasks", name)
    run.call("task-status", "get_connector_task_status", name, 0)

    updated = dict(config)
    updated["datagen.rate"] = str(int(config.get("datagen.rate", "100")) + 1)
    run.call("update", "update_connector", name, updated)
    run.wait("running-updated", name, "RUNNING", tasks)
    run.call("config-updated", "get_connector_config", name)

    run.call("pause", "pause_connector", name)
    run.wait("paused", name, "PAUSED", tasks)
    run.call("list-paused", "list_connectors", state="paused")
    run.call("resume", "resume_connector", name)
    run.wait("resumed", name, "RUNNING", tasks)

    run.call("restart", "restart_connector", name)
    run.wait("restarted", name, "RUNNING", tasks)
    run.call("restart-tasks", "restart_connector", name, include_tasks=True)
    run.wait("restarted-tasks", name, "RUNNING", tasks)
    run.call("restart-task", "restart_connector_task", name, 0)
    run.wait("restarted-task", name, "RUNNING", tasks)

    run.call("stop", "stop_connector", name)
    run.wait("stopped", name, "STOPPED", 0)
    run.call("resume-stopped", "resume_connector", name)
    run.wait("resumed-stopped", name, "RUNNING", tasks)

    run.call("topics", "list_connector_topics", name)
    run.call("plugins", "list_connector_plugins")
    # Connect's validate wants the name too (it is a required key).
    valid = dict(config, **{"name": name, "connector.class": args.plugin})
    run.call("validate", "validate_connector_config", args.plugin, valid)
    run.call("validate-bad", "validate_connector_config", args.plugin, dict(valid, **{"tasks.max": "many"}))

    run.call("delete", "delete_connector", name)
    run.call("list-after", "list_connectors")
    run.call("get-deleted", "get_connector", name)

    json.dump({"steps": run.steps}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
