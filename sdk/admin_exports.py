"""``layersched admin export board|submissions|episodes|bundles --phase P``: a phase's exports, streamed to a file
(or, for the tables, to stdout). The file is written beside its name and renamed when the export is whole, so an
export that fails leaves no half file (nor replaces an older one); it is created with mode 0600 (it holds e-mails
and private scores)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from layersched.sdk.arguments import phase_name
from layersched.sdk.commands import AddCommand, configured_client
from layersched.sdk.errors import ConfigError
from layersched.sdk.progress import format_bytes

WHAT = {
    "board": "a row per competitor: final rank, members and e-mails, private and public scores with intervals, "
    "public rank, selection, disqualifications, commitment, simulator version, image digest",
    "submissions": "every submission: state, category, times, both scores, provenance",
    "episodes": "every episode of every submission (hidden ones too) with the track's metrics",
    "bundles": "a zip of the bundles of the final selection, with a manifest (for plagiarism checks)",
}


def add_export_parser(actions: Any, add: AddCommand) -> None:
    p = add(
        actions,
        "export",
        cmd_export,
        "export a phase's board, submissions, episodes or selected bundles",
        "Stream one of a phase's exports from the server:\n"
        + "".join(f"  {name}: {text}\n" for name, text in WHAT.items())
        + "Tables are CSV (text cells that a spreadsheet would run as formulas start with ') or a JSON array;\n"
        "they go to --out (mode 0600) or stdout. The bundles' zip needs --out.",
        "  layersched admin export board --phase final --out grades.csv\n"
        "  layersched admin export episodes --phase final --format json --out episodes.json\n"
        "  layersched admin export bundles --phase final --out final-bundles.zip\n",
    )
    p.add_argument("what", choices=tuple(WHAT), help="which export")
    p.add_argument("--phase", type=phase_name, required=True, help="the phase to export")
    p.add_argument("--format", choices=("csv", "json"), default="csv", help="tables only (default csv)")
    p.add_argument("--out", type=Path, help="the file to write (default: stdout; required for bundles)")


def cmd_export(args: argparse.Namespace) -> int:
    if args.what == "bundles" and args.out is None:
        raise ConfigError("the bundles' export is a zip: name a file with --out")
    if args.out is None:
        with configured_client() as client:
            client.admin_export(args.what, phase=args.phase, format=args.format, sink=sys.stdout.buffer)
        return 0
    partial = args.out.with_name(f".{args.out.name}.part")
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as exc:
        raise ConfigError(f"{partial}: {exc.strerror} (nothing was exported)") from None
    try:
        with os.fdopen(fd, "wb") as sink, configured_client() as client:
            written = client.admin_export(args.what, phase=args.phase, format=args.format, sink=sink)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.rename(args.out)
    kind = "zip" if args.what == "bundles" else args.format
    print(f"wrote {args.out} ({format_bytes(written)}, {kind}): the {args.what} of phase {args.phase}", file=sys.stderr)
    return 0
