"""MyST markup as plain Markdown, for notebooks read outside the book.

The chapters are written in MyST (roles such as ``{cite:p}`key``` and directives such as
``:::{exercise}``), which only the book's build understands: Jupyter, JupyterLite and the
student's notebook show it as raw text. :func:`plain_markdown` renders it as plain Markdown:

* citations in the book's author-year style from ``references.bib`` ("(Kaplan et al., 2020)",
  "Kaplan et al. (2020)");
* cross-references as plain text: a section's title, a chapter's title, an equation's number,
  "Figure <label>"; labels ``(name)=`` go;
* glued values (``{glue:text}`key:fmt```) as their value when the notebook's outputs carry it;
* exercises as headings ("#### Exercise 3 (`slug-ex-name`)"), followed for a checkable one by the
  line that says how to check it (:func:`llmmath.check.how_to_check`, as in the book), solutions
  as ``<details>`` blocks, admonitions as block quotes, ``{glue:figure}`` as its caption.

Used by the student edition, the assignments and the browser (JupyterLite) edition.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_ROLE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<body>[^`]*)`")
_DIRECTIVE = re.compile(
    r"^(?P<fence>:{3,}|`{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$\n?",
    re.M | re.S)
_OPTION = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>.*)$")
_LABEL_LINE = re.compile(r"^\([\w.:-]+\)=[ \t]*\n", re.M)
_EQ_LABEL = re.compile(r"(\$\$)(?P<math>.*?)\$\$[ \t]*\((?P<label>[\w.:-]+)\)", re.S)


@functools.lru_cache(maxsize=4)
def bibliography(path: Path = ROOT / "references.bib") -> dict[str, tuple[str, str]]:
    """``key -> (authors, year)`` in the book's author-year style ("Kaplan et al.", "2020")."""
    entries: dict[str, tuple[str, str]] = {}
    if not path.is_file():
        return entries
    text = path.read_text(encoding="utf-8")
    for m in re.finditer(r"@\w+\s*\{\s*([^,\s]+)\s*,(.*?)(?=^@|\Z)", text, re.S | re.M):
        key, body = m.group(1), m.group(2)
        year = _field(body, "year")
        authors = _field(body, "author") or _field(body, "editor") or _field(body, "title") or key
        names = [a.strip() for a in re.split(r"\s+and\s+", authors) if a.strip()]
        lasts = [_last_name(n) for n in names if n.lower() != "others"]
        if len(lasts) >= 3 or (len(lasts) >= 1 and "others" in (n.lower() for n in names)):
            who = f"{lasts[0]} et al."
        elif len(lasts) == 2:
            who = f"{lasts[0]} and {lasts[1]}"
        else:
            who = lasts[0] if lasts else key
        entries[key] = (who, year or "n.d.")
    return entries


def _field(body: str, name: str) -> str:
    m = re.search(rf"\b{name}\s*=\s*", body, re.I)
    if not m:
        return ""
    rest = body[m.end():]
    if rest.startswith("{"):
        depth, end = 0, len(rest)
        for pos, ch in enumerate(rest):
            depth += (ch == "{") - (ch == "}")
            if depth == 0:
                end = pos
                break
        value = rest[1:end]
    elif rest.startswith('"'):
        value = rest[1:rest.index('"', 1)]
    else:
        value = re.match(r"[^,\n}]*", rest).group(0)
    return " ".join(value.replace("{", "").replace("}", "").split())


def _last_name(name: str) -> str:
    if "," in name:
        return name.split(",")[0].strip()
    return name.split()[-1] if name.split() else name


def cite(keys: str, textual: bool = False) -> str:
    bib = bibliography()
    parts = []
    for key in (k.strip() for k in keys.split(",") if k.strip()):
        who, year = bib.get(key, (key, "n.d."))
        parts.append(f"{who} ({year})" if textual else f"{who}, {year}")
    return "; ".join(parts) if textual else f"({'; '.join(parts)})"


def _title_and_target(body: str) -> tuple[str | None, str]:
    m = re.fullmatch(r"(.*?)\s*<([^<>]+)>", body.strip(), re.S)
    return (m.group(1).strip(), m.group(2).strip()) if m else (None, body.strip())


@functools.lru_cache(maxsize=64)
def _doc_title(target: str) -> str:
    """The title (first ``# `` heading) of the chapter ``target`` names, else its slug in words."""
    import json

    slug = target.strip("/").split("/")[-1].removesuffix(".ipynb").removesuffix(".md")
    texts = []
    if (path := ROOT / "chapters" / f"{slug}.ipynb").is_file():
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        texts = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    elif (path := ROOT / "chapters" / f"{slug}.md").is_file():
        texts = [path.read_text(encoding="utf-8")]
    for text in texts:
        if m := re.search(r"^# +(.+?)\s*$", text, re.M):
            return m.group(1).strip()
    return slug.replace("-", " ")


def _format_glued(text: str, spec: str) -> str:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text.strip("'\"")
    if not spec:
        return str(value)
    try:
        return format(value, spec)
    except (TypeError, ValueError):
        return str(value)


class _Context:
    """What the renderer knows about the whole notebook: section titles, equation numbers, and
    (``chapter`` given) the book's numbering of every chapter, section, equation and figure."""

    def __init__(self, sections: dict[str, str], equations: dict[str, int], glued: dict[str, str],
                 chapter: str | None = None):
        self.sections, self.equations, self.glued = sections, equations, glued
        self.chapter = chapter
        self.book = book_index() if chapter is not None else {}
        self.exercise = 0


def notebook_context(sources: list[str], glued: dict[str, str] | None = None, chapter: str | None = None) -> _Context:
    """Collect the labels of ``sources`` (the markdown of one notebook, in order). With ``chapter``
    (its slug), cross-references use the book's numbers: "section 9.3 (*title*)", "(9.5)",
    "Figure 6.2", and name the chapter when the target is in another one."""
    text = "\n".join(sources)
    sections = {m.group(1): m.group(2).strip()
                for m in re.finditer(r"^\(([\w.:-]+)\)=[ \t]*\n#+ +(.+)$", text, re.M)}
    equations = {m.group("label"): i for i, m in enumerate(_EQ_LABEL.finditer(text), start=1)}
    return _Context(sections, equations, glued or {}, chapter)


@functools.lru_cache(maxsize=1)
def book_index(root: Path = ROOT) -> dict[str, tuple[str, str, str, str]]:
    """``label -> (kind, number, title, chapter slug)`` for the numbered chapters of ``_toc.yml``:
    kind ``"chapter"`` (label: the slug), ``"section"``, ``"equation"``, ``"figure"``, numbered as
    the book numbers them (chapter ``k``: sections ``k.i.j``, equations ``(k.n)``, figures ``k.n``).
    Pages listed under a chapter (``sections:``) continue its section numbers."""
    import json

    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    index: dict[str, tuple[str, str, str, str]] = {}
    number = 0
    for part in toc.get("parts", []):
        if not part.get("numbered"):
            continue
        for entry in part.get("chapters", []):
            number += 1
            files = [entry["file"], *(s["file"] for s in entry.get("sections", []) if "file" in s)]
            counters = {"section": [0], "equation": 0, "figure": 0}
            slug = files[0].split("/")[-1]
            for k, file in enumerate(files):
                path = root / (file + ".ipynb")
                if not path.is_file():
                    continue
                cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
                text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
                _index_page(text, number, slug, index, counters, sub_page=k > 0)
    return index


def _index_page(text: str, number: int, slug: str, index: dict, counters: dict, sub_page: bool) -> None:
    text = _without_code(text)
    sections = counters["section"]
    if sub_page:  # a page under the chapter: its title is the next section, its ## the level below
        sections[0] += 1
        del sections[1:]
    label = None
    for line in text.splitlines():
        if m := re.match(r"^\(([\w.:-]+)\)=[ \t]*$", line):
            label = m.group(1)
            continue
        if m := re.match(r"^(#+) +(.+?)\s*$", line):
            depth = len(m.group(1)) - 1 + sub_page  # "#": the chapter (or the sub-page's section)
            title = m.group(2)
            if depth == 0:
                index.setdefault(slug, ("chapter", str(number), title, slug))
                if label:
                    index[label] = ("chapter", str(number), title, slug)
            else:
                while len(sections) < depth:
                    sections.append(0)
                del sections[depth:]
                sections[depth - 1] += 1
                if label:
                    index[label] = ("section", ".".join(map(str, [number, *sections])), title, slug)
        if line.strip():
            label = None
    for m in _EQ_LABEL.finditer(text):
        counters["equation"] += 1
        index[m.group("label")] = ("equation", f"{number}.{counters['equation']}", "", slug)
    for m in re.finditer(r"^(?::{3,}|`{3,})\{(?:glue:figure|figure)\}[^\n]*\n(?P<body>(?::[\w-]+:.*\n)*)", text, re.M):
        if name := re.search(r"^:name:[ \t]*(\S+)", m.group("body"), re.M):
            counters["figure"] += 1
            index[name.group(1)] = ("figure", f"{number}.{counters['figure']}", "", slug)


def _without_code(text: str) -> str:
    """``text`` without its fenced code blocks (a ``#`` line in code is no heading); directive
    fences (```` ```{name} ````) and their content stay."""
    kept, stack = [], []  # open fences: (marker, is_code)
    for line in text.splitlines():
        m = re.match(r"^(`{3,}|~{3,}|:{3,})(.*)$", line)
        in_code = bool(stack) and stack[-1][1]
        if m and stack and not m.group(2).strip() and m.group(1) == stack[-1][0]:
            stack.pop()
            if not in_code:
                kept.append(line)
            continue
        if in_code:
            continue
        if m and m.group(2).strip():
            code = not m.group(2).lstrip().startswith("{") and not m.group(1).startswith(":")
            stack.append((m.group(1), code))
            if code:
                continue
        kept.append(line)
    return "\n".join(kept)


_SEED = re.compile(r"\b([Ss])eeds? (\d{3})((?:(?:, | and | or )\d{3})*)('s)?")


@functools.lru_cache(maxsize=1)
def seed_topics(root: Path = ROOT) -> dict[str, str]:
    """``"000" -> "parameters, FLOPs and activations of a GPT layer"``: what each source post
    covers, from the section titles of the errata appendix (which names and audits them)."""
    import json

    path = root / "chapters" / "errata.ipynb"
    if not path.is_file():
        return {}
    text = "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                     if c["cell_type"] == "markdown")
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^#+ +Seed (\d{3}): *(.+)$", text, re.M)}


def _seeds(m: re.Match) -> str:
    """"seed 001" as the post's topic: a student cannot look up the book's file names."""
    numbers = [m.group(2), *re.findall(r"\d{3}", m.group(3))]
    topics = seed_topics()
    names = [f'"{topics[n][0].upper() + topics[n][1:]}"' if n in topics else f"number {n}" for n in numbers]
    head = "T" if m.group(1) == "S" else "t"
    if len(names) == 1:
        text = f"{head}he source post {names[0]}"
    else:
        text = f"{head}he source posts {', '.join(names[:-1])} and {names[-1]}"
    return text + ("'s" if m.group(4) else " (audited in the errata appendix)")


def _role(m: re.Match, ctx: _Context) -> str:
    role, body = m.group("role"), m.group("body")
    if role in ("cite:p", "cite", "cite:ps"):
        return cite(body)
    if role in ("cite:t", "cite:ts"):
        return cite(body, textual=True)
    title, target = _title_and_target(body)
    known = ctx.book.get(target) or ctx.book.get(target.strip("/").split("/")[-1])
    if known and role in ("ref", "doc", "eq", "numref"):
        return _numbered(role, title, known, ctx)
    if role == "ref":
        if ctx.chapter and re.search(r"-ex-", target):
            return title or f"exercise `{target}`"
        if target.startswith("errata"):  # the appendix names the seeds by file: students get its name
            return title or "the errata appendix"
        return title or ctx.sections.get(target) or target.replace("-", " ")
    if role == "doc":
        return title or f"*{_doc_title(target)}*"
    if role == "eq":
        n = ctx.equations.get(target)
        return f"({n})" if n else f"({target})"
    if role == "numref":
        return title.replace("%s", target) if title else f"Figure ({target})"
    if role.startswith("glue"):
        key, _, spec = body.partition(":")
        if key in ctx.glued:
            return _format_glued(ctx.glued[key], "" if spec == "myst" else spec)
        return f"`{key}`"
    if role == "math":
        return f"${body}$"
    return title or body


def _numbered(role: str, title: str | None, known: tuple[str, str, str, str], ctx: _Context) -> str:
    """A cross-reference as the book numbers it: "section 9.3 (*Tensor parallelism*)", "(9.5)"."""
    kind, number, heading, slug = known
    chapter = ctx.book.get(slug)
    elsewhere = slug != ctx.chapter and chapter is not None
    of_chapter = f" of chapter {chapter[1]} (*{chapter[2]}*)" if elsewhere else ""
    if kind == "equation":
        return f"({number})" + (f" of chapter {chapter[1]}" if elsewhere and role != "eq" else "")
    if kind == "figure":
        text = title.replace("%s", number) if title and "%s" in title else f"Figure {number}"
        return text + of_chapter
    if kind == "chapter":
        return f"{title} (chapter {number})" if title else f"chapter {number} (*{heading}*)"
    if title:
        return f"{title} (section {number}{of_chapter})"
    return f"section {number} (*{heading}*){of_chapter}"


def _options(body: str) -> tuple[dict[str, str], str]:
    options, lines = {}, body.split("\n")
    while lines and (m := _OPTION.match(lines[0])):
        options[m.group("key")] = m.group("value").strip()
        lines.pop(0)
    return options, "\n".join(lines).strip("\n")


def _how_to_check(label: str) -> str:
    """The book's line under a checkable exercise (empty for any other), as a paragraph."""
    from llmmath.check import EXERCISES, how_to_check

    return f"\n{how_to_check(label)}\n" if label in EXERCISES else ""


def _directive(m: re.Match, ctx: _Context) -> str:
    name, arg = m.group("name"), m.group("arg").strip()
    options, body = _options(m.group("body"))
    body = render(body, ctx)
    if name in ("exercise", "exercise-start"):
        ctx.exercise += 1
        label = options.get("label", "")
        head = f"#### Exercise {ctx.exercise}" + (f" (`{label}`)" if label else "") + (f": {arg}" if arg else "")
        return f"{head}\n\n{body}\n" + _how_to_check(label)
    if name == "solution":
        return f"<details>\n<summary>Solution</summary>\n\n{body}\n\n</details>\n"
    if name == "solution-start":
        return "**Solution** (the cells below, up to *End of solution*).\n"
    if name == "solution-end":
        return "*End of solution.*\n"
    if name in ("glue:figure", "figure"):
        return f"*Figure: {body}*\n" if body else ""
    if name == "glue:md" or name == "glue":
        return f"{ctx.glued[arg]}\n" if arg in ctx.glued else ""
    if name in ("bibliography", "tableofcontents", "eval-rst"):
        return ""
    if name in ("math",):
        return f"$$\n{body}\n$$\n"
    if name in ("code-cell", "code"):
        return f"```{arg or 'python'}\n{m.group('body').strip(chr(10))}\n```\n"
    # note, warning, tip, admonition, dropdown, ...: a block quote with a bold title
    title = arg if name == "admonition" else (arg or name.capitalize())
    if name == "dropdown":
        return f"<details>\n<summary>{title}</summary>\n\n{body}\n\n</details>\n"
    quoted = "\n".join(f"> {line}" if line else ">" for line in body.split("\n"))
    return f"> **{title}.**\n>\n{quoted}\n"


def render(text: str, ctx: _Context) -> str:
    if ctx.chapter is not None:
        text = _SEED.sub(_seeds, text)
    text = _DIRECTIVE.sub(lambda m: _directive(m, ctx), text)
    text = _LABEL_LINE.sub("", text)

    def eq(m: re.Match) -> str:
        n = ctx.equations.get(m.group("label"))
        return f"$${m.group('math').rstrip()}\n\\tag{{{n}}}\n$$" if n else f"$${m.group('math')}$$"

    text = _EQ_LABEL.sub(eq, text)
    return _ROLE.sub(lambda m: _role(m, ctx), text)


def plain_markdown(text: str, ctx: _Context | None = None, glued: dict[str, str] | None = None) -> str:
    """``text`` (MyST) as plain Markdown; ``ctx`` from :func:`notebook_context` for cross-references."""
    return render(text, ctx or notebook_context([text], glued))


def glue_values(nb) -> dict[str, str]:
    """The glued values of ``nb``'s committed outputs, as their plain-text repr (key -> text)."""
    values = {}
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            scrapbook = output.get("metadata", {}).get("scrapbook", {})
            key, prefix = scrapbook.get("name"), scrapbook.get("mime_prefix", "")
            data = output.get("data", {})
            text = data.get(f"{prefix}text/plain", data.get("text/plain"))
            if key and text is not None:
                values[key] = text if isinstance(text, str) else "".join(text)
    return values


def plain_notebook(nb, glued: dict[str, str] | None = None, chapter: str | None = None):
    """Render every markdown cell of ``nb`` (in place) with one context for the whole notebook
    (``chapter``, its slug: the book's numbers for cross-references, see :func:`notebook_context`)."""
    cells = [c for c in nb["cells"] if c["cell_type"] == "markdown"]
    sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells]
    ctx = notebook_context(sources, glued, chapter)
    for cell, source in zip(cells, sources, strict=True):
        cell["source"] = render(source, ctx)
    return nb
