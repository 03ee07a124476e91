"""``layersched admin webhook add|list|remove|test``: where the challenge's notifications go. An evaluation's end
(succeeded, failed with its category) and the alerts (no worker alive, a queue wait over the bound, the service
failing too often) are posted as JSON, or as Slack text with ``--slack``; a receiver that fails is tried again with
backoff, and the evaluations never wait for it."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from layersched.sdk.commands import AddCommand, configured_client, missing_action, print_json
from layersched.sdk.tables import text_table
from layersched.sim.arguments import positive_int

EVENTS = ("evaluation", "alert")


def _events(value: str) -> list[str]:
    chosen = [e.strip() for e in value.split(",") if e.strip()]
    unknown = [e for e in chosen if e not in EVENTS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"{value!r}: give some of {', '.join(EVENTS)}, comma-separated")
    return chosen


def add_webhook_parser(actions: Any, add: AddCommand) -> None:
    webhook = add(
        actions,
        "webhook",
        missing_action,
        "send notifications to a webhook (JSON or Slack)",
        "Webhooks get an evaluation's end and the alerts (no worker alive, queue wait over the bound, the\n"
        "service failing too often: LAYERSCHED_ALERT_* settings). A receiver that fails is tried again with\n"
        "backoff; `list` shows what is pending, delivered or given up.",
        "  layersched admin webhook add https://hooks.slack.com/services/T/B/X --slack\n"
        "  layersched admin webhook add https://ci.example.org/layersched --events alert\n"
        "  layersched admin webhook list\n",
    )
    webhook_actions = webhook.add_subparsers(dest="webhook_command", metavar="ACTION")
    webhook_actions.required = True
    p = add(
        webhook_actions,
        "add",
        cmd_webhook_add,
        "add a webhook",
        "Post the events to URL (http or https): the payload as JSON, or with --slack a Slack message.",
        "  layersched admin webhook add https://hooks.slack.com/services/T/B/X --slack\n"
        "  layersched admin webhook add https://ci.example.org/hook --events evaluation\n",
    )
    p.add_argument("url", help="http(s) URL that takes a POST")
    p.add_argument("--slack", action="store_true", help="Slack's body ({'text': ...}) instead of the JSON payload")
    p.add_argument("--events", type=_events, default=list(EVENTS), help="evaluation, alert or both (default both)")
    p = add(webhook_actions, "list", cmd_webhook_list, "list the webhooks and their deliveries",
            "Each webhook with its notifications pending, delivered and given up, and the last error.",
            "  layersched admin webhook list\n  layersched admin webhook list --json\n")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")
    p = add(webhook_actions, "remove", cmd_webhook_remove, "remove a webhook",
            "Remove the webhook and its pending notifications.", "  layersched admin webhook remove 2\n")  # fmt: skip
    p.add_argument("id", type=positive_int, help="the webhook's id")
    p = add(webhook_actions, "test", cmd_webhook_test, "send a test notification",
            "Queue a test notification to the webhook (`list` then shows whether it arrived).",
            "  layersched admin webhook test 2\n")  # fmt: skip
    p.add_argument("id", type=positive_int, help="the webhook's id")


def cmd_webhook_add(args: argparse.Namespace) -> int:
    with configured_client() as client:
        hook = client.admin_add_webhook(args.url, format="slack" if args.slack else "json", events=args.events)
    print(f"webhook #{hook.id} ({hook.format}) for {', '.join(hook.events)} events: {hook.url}")
    return 0


def cmd_webhook_list(args: argparse.Namespace) -> int:
    with configured_client() as client:
        page = client.admin_webhooks()
    if args.json:
        print_json({"data": [asdict(w) for w in page.data], "count": page.count})
        return 0
    rows = [
        [f"#{w.id}", w.format, ",".join(w.events), str(w.pending), str(w.delivered), str(w.failed),
         w.url, (w.last_error or "")[:60]]
        for w in page.data
    ]  # fmt: skip
    headers = ["id", "format", "events", "pending", "delivered", "failed", "url", "last error"]
    print(text_table(headers, rows) if rows else "(no webhooks)")
    return 0


def cmd_webhook_remove(args: argparse.Namespace) -> int:
    with configured_client() as client:
        client.admin_remove_webhook(args.id)
    print(f"removed webhook #{args.id}")
    return 0


def cmd_webhook_test(args: argparse.Namespace) -> int:
    with configured_client() as client:
        hook = client.admin_test_webhook(args.id)
    print(
        f"queued a test notification to webhook #{hook.id} ({hook.pending} pending); see: layersched admin webhook list"
    )
    return 0
