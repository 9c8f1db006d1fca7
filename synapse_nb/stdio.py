"""The standard streams of ``synapse-nb`` (the CLI, the agent hook, ``synapse-nb mcp``): UTF-8, whatever the locale.

The same vault and query give the same answer byte for byte, and so do they in a terminal or a harness whose locale
is not UTF-8 (review 84: under ``LC_ALL=de_DE.ISO-8859-1`` the recall text, ``--json`` and the agent hook, whose
approved-lesson banner holds an em dash, printed nothing: a ``UnicodeEncodeError``, and the hook's lessons never
reached the agent). Every entry point calls :func:`use_utf8` first, so the process reads and writes its standard
streams as Python's UTF-8 mode does (:pep:`540`): stdin and stdout UTF-8 with ``surrogateescape`` (bytes that are not
UTF-8 pass through unchanged), stderr UTF-8 with ``backslashreplace``. JSON is UTF-8 by its RFC (8259), an agent
harness reads UTF-8, and a terminal set to another encoding shows non-ASCII characters garbled but every byte is
there. Command-line arguments and file names are still decoded as the locale says (they name the person's files).

The MCP server's protocol is written as UTF-8 bytes on a copy of the output descriptor (:mod:`synapse_nb.mcp._stdio`)
already; its stderr lines follow this rule through the CLI.

>>> use_utf8()  # doctest: +SKIP
"""

from __future__ import annotations

import codecs
import sys

__all__ = ["ERRORS", "use_utf8"]

#: Each standard stream's error handler, as in Python's UTF-8 mode.
ERRORS = {"stdin": "surrogateescape", "stdout": "surrogateescape", "stderr": "backslashreplace"}


def use_utf8() -> None:
    """Make this process's stdin, stdout and stderr UTF-8 (:data:`ERRORS` for undecodable or unencodable text) when
    the locale or ``PYTHONIOENCODING`` chose another encoding. A stream already UTF-8, one that cannot be reconfigured
    (a test's capture, a closed stream) or stdin once read from is left as it is."""
    for name, errors in ERRORS.items():
        stream = getattr(sys, name, None)
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None:
            continue
        try:
            if codecs.lookup(getattr(stream, "encoding", None) or "ascii").name == "utf-8":
                continue
            reconfigure(encoding="utf-8", errors=errors)
        except (LookupError, ValueError, OSError):  # an unknown codec name, a closed or already read stream
            continue
