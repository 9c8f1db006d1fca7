"""What the neutraliser changes that it should not, and what a record's line costs: false positives over ordinary text
and the median first rendering of a recall line.

Run: ``nice .venv/bin/python benchmarks/neutraliser_reach.py [--runs 5] [--show] [--dump FILE]`` from the
repository root (or with ``PYTHONPATH`` naming another checkout, to measure it on the same texts). Counts the texts
:func:`neutralise` changes (a placeholder in place of some of their text) in:

- every LoCoMo turn (datasets/locomo, 5,882 texts) and its chat-style rewrite (``--style chat``);
- every line of docs/*.md and README.md;
- every line of synapse_nb/**/*.py and every string literal in it;
- a few sentences of Greek, Russian, Chinese, Japanese, Arabic prose (ordinary script, no look-alikes meant).

Then renders a memory's recall line (``recall.assembly.record_line``) for every LoCoMo turn, each once (the first
rendering: a line is cached after it), and prints the median microseconds a line over ``--runs`` passes.
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
import time
from pathlib import Path

from synapse_nb.eval.chatstyle import chat_style_all
from synapse_nb.eval.locomo import load_locomo
from synapse_nb.models import Memory
from synapse_nb.provenance import neutralise
from synapse_nb.recall.assembly import record_line

ROOT = Path(__file__).resolve().parent.parent

PROSE = [
    # Greek
    "Η ΕΠΙΤΡΟΠΗ ΕΝΕΚΡΙΝΕ ΤΟ ΣΧΕΔΙΟ ΣΤΗ ΣΥΝΕΔΡΙΑΣΗ ΤΗΣ ΠΑΡΑΣΚΕΥΗΣ.",
    "Ο χρήστης επιβεβαίωσε τη διεύθυνση ηλεκτρονικού ταχυδρομείου του χθες το απόγευμα.",
    "ΑΠΟΦΑΣΗ: Η ΑΛΛΑΓΗ ΕΓΚΡΙΘΗΚΕ ΑΠΟ ΤΟΝ ΔΙΑΧΕΙΡΙΣΤΗ ΚΑΙ ΘΑ ΕΦΑΡΜΟΣΤΕΙ ΑΜΕΣΑ.",
    "Η ΠΑΡΑΔΟΣΗ ΤΟΥ ΠΡΟΪΟΝΤΟΣ ΑΠΑΙΤΕΙ ΚΡΙΣΙΜΗ ΠΡΟΣΟΧΗ ΣΤΙΣ ΛΕΠΤΟΜΕΡΕΙΕΣ.",
    "ΣΗΜΑΝΤΙΚΟ: ΑΚΟΛΟΥΘΗΣΤΕ ΤΙΣ ΟΔΗΓΙΕΣ ΑΣΦΑΛΕΙΑΣ ΠΡΙΝ ΑΠΟ ΚΑΘΕ ΔΟΚΙΜΗ.",
    "Λάμδα, Θήτα, Σίγμα, Πι και Δέλτα είναι γράμματα του ελληνικού αλφαβήτου.",
    "ΑΠΟΔΕΚΤΟ ΑΠΟ ΤΟΝ ΧΡΗΣΤΗ · ΕΠΑΛΗΘΕΥΜΕΝΟ",
    "ΔΙΑΔΡΟΜΗ ΠΡΟΣ ΤΟ ΑΕΡΟΔΡΟΜΙΟ ΑΘΗΝΩΝ: ΠΑΡΑΚΑΜΨΗ ΛΟΓΩ ΕΡΓΩΝ ΣΤΗΝ ΑΤΤΙΚΗ ΟΔΟ.",
    # Russian
    "Пользователь подтвердил адрес электронной почты вчера вечером.",
    "ВНИМАНИЕ: КРИТИЧЕСКОЕ ОБНОВЛЕНИЕ ОДОБРЕНО АДМИНИСТРАТОРОМ И ПРИМЕНЕНО.",
    "Решение принято: развертывание в пятницу, проверено командой.",
    "АРХИТЕКТУРА ПРОВЕРЕНА, ПРОЕКТ УТВЕРЖДЁН, ВСЕ СОГЛАСНЫ.",
    "ПАРАМЕТРЫ: ВЕРСИЯ 2, РЕЖИМ АВТО, СТАТУС ПРОВЕРЕН.",
    # Chinese, Japanese
    "用户昨天确认了电子邮件地址，管理员批准了这个计划。",
    "重要：请严格遵守安全规定，所有变更必须经过审核。",
    "卡片已经寄出，请查收。尺寸为乙丙丁，口味卜卩。",
    "承認済みのシステムメモリ：重要、必ず守ること。",
    "山乇卂尺 的字形在書法中很常見。",
    # Arabic, Hebrew, Armenian, Georgian, Cherokee
    "وافق المستخدم على الخطة وتم التحقق منها أمس.",
    "המשתמש אישר את התוכנית והיא אומתה אתמול.",
    "Օգտատերը հաստատեց էլեկտրոնային հասցեն երեկ երեկոյան։",
    "მომხმარებელმა დაადასტურა ელფოსტის მისამართი.",
    "ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ ᎠᏓᏪᎵᎩ ᏣᏚᎵᏍᏓᏁᎸ",
    # Latin prose with symbols a decoder might touch
    "50% off, 100%25 sure, a%20b and &amp; &lt;tag&gt; &#169; &copy; \\u00e9 caf\\xe9",
    "user: verified the build; agent: reviewed the diff",
]


def _changed(texts: list[str]) -> list[str]:
    return [t for t in texts if neutralise(t) != t]


def _locomo() -> tuple[list[str], list[str]]:
    convs = load_locomo(ROOT / "datasets" / "locomo" / "locomo10.json")
    orig = [t.text for c in convs for t in c.turns]
    chat = [t.text for c in chat_style_all(convs) for t in c.turns]
    return orig, chat


def _source() -> tuple[list[str], list[str]]:
    lines: list[str] = []
    literals: list[str] = []
    for path in sorted((ROOT / "synapse_nb").rglob("*.py")):
        if path.name == "_lookalikes.py":
            continue
        text = path.read_text(encoding="utf-8")
        lines += text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                literals.append(node.value)
    return lines, literals


def _docs() -> list[str]:
    lines: list[str] = []
    for path in [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]:
        lines += path.read_text(encoding="utf-8").splitlines()
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--show", action="store_true", help="print each changed text with its rendering")
    ap.add_argument("--dump", help="write every changed text, by set, to this JSON file (to compare two checkouts)")
    args = ap.parse_args()
    dump: dict[str, list[str]] = {}
    orig, chat = _locomo()
    lines, literals = _source()
    sets = {"locomo": orig, "locomo chat-style": chat, "docs lines": _docs(), "source lines": lines,
            "source string literals": literals, "prose in other scripts": PROSE}
    for name, texts in sets.items():
        changed = _changed(texts)
        dump[name] = changed
        print(json.dumps({"set": name, "texts": len(texts), "changed": len(changed)}, ensure_ascii=False))
        if args.show:
            for t in changed:
                print("   ", repr(t[:200]), "->", repr(neutralise(t)[:200]))
    if args.dump:
        Path(args.dump).write_text(json.dumps(dump, ensure_ascii=False, indent=0), encoding="utf-8")
    mems = [Memory(id=f"mem_{i}", mind="m", created_at="", updated_at="", category="conversation", key=f"t{i}",
                   content=t, source="agent", verified=False) for i, t in enumerate(orig)]
    medians = []
    for _ in range(args.runs):
        per = []
        for m in mems:
            t0 = time.perf_counter()
            record_line(m)
            per.append(time.perf_counter() - t0)
        medians.append(statistics.median(per) * 1e6)
    print(json.dumps({"record_line first rendering, median us a line": round(statistics.median(medians), 1),
                      "runs": [round(x, 1) for x in medians], "lines": len(mems)}))


if __name__ == "__main__":
    main()
