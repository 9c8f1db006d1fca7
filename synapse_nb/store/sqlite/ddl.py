"""A DDL script split into its statements: the schema and every migration are scripts of many, and a trigger's body
holds semicolons of its own."""

from __future__ import annotations

import sqlite3

__all__ = ["split_sql"]


def split_sql(script: str) -> list[str]:
    """Split a DDL script into statements, keeping trigger bodies (BEGIN ... END;) whole."""
    out: list[str] = []
    buf = ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \n;"):
                out.append(buf.strip())
            buf = ""
    if buf.strip(" \n;"):
        out.append(buf.strip())
    return out

