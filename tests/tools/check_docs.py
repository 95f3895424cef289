#!/usr/bin/env python3
"""Checks that the user documentation covers what the code has, and that its links resolve.

Usage: check_docs.py [ROOT]   (ROOT: the repository, default: two levels above this file)

Fails (exit 1, one line per problem) when
  - a rule the analyzer registers (RegisterRule in analyzer/analysis/rules/*.cpp) or ships
    (rules/*.json) has no page docs/rules/<id>.md, no row in README.md's rules table or in
    docs/rules/README.md's, or is not named in `cuprobe analyze --help` (cli/cmds/analyze.cpp);
  - a rule page does not list one of the rule's thresholds (rules/<id>.json "params") with its
    default value, or a page or table row names a rule that does not exist;
  - a subcommand of the CLI (cli/main.cpp: `if (cmd == "X") return cmd_...`) has no page
    docs/commands/<X>.md, or docs/commands/README.md does not link it;
  - a relative Markdown link in README.md or docs/**/*.md points to a missing file, or such a file
    names a repository path `docs/....md` that does not exist (the docs name each other in plain
    text as often as by links).
"""
import json
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
problems = []


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def rules_in_code():
    ids = set()
    rules_dir = os.path.join(ROOT, "analyzer", "analysis", "rules")
    for name in os.listdir(rules_dir):
        if name.endswith(".cpp"):
            ids.update(re.findall(r'RegisterRule\s+\w+\s*\(\s*"([a-z0-9-]+)"', read(os.path.join("analyzer/analysis/rules", name))))
    for name in os.listdir(os.path.join(ROOT, "rules")):
        if name.endswith(".json"):
            ids.add(json.loads(read(os.path.join("rules", name)))["id"])
    return ids


def table_rule_ids(text):
    """Rule ids in the first column of Markdown table rows: `| research-storm |` or `| [id](id.md) |`."""
    out = set()
    for line in text.splitlines():
        m = re.match(r"\|\s*\[?`?([a-z0-9]+(?:-[a-z0-9]+)+)`?\]?(?:\([^)]*\))?\s*\|", line)
        if m:
            out.add(m.group(1))
    return out


def check_rules():
    ids = rules_in_code()
    if not ids:
        problems.append("no rule found in analyzer/analysis/rules/*.cpp or rules/*.json: the checker is broken")
    readme_rows = table_rule_ids(read("README.md"))
    index_rows = table_rule_ids(read("docs/rules/README.md"))
    analyze_cpp = read("cli/cmds/analyze.cpp")
    m = re.search(r'kHelp = R"\((.*?)\)";', analyze_cpp, re.S)
    analyze_help = m.group(1) if m else ""
    if not analyze_help:
        problems.append("cli/cmds/analyze.cpp: no kHelp text found")
    for rid in sorted(ids):
        page = f"docs/rules/{rid}.md"
        if not os.path.exists(os.path.join(ROOT, page)):
            problems.append(f"rule {rid}: no page {page}")
        else:
            text = read(page)
            spec_path = os.path.join(ROOT, "rules", f"{rid}.json")
            params = json.load(open(spec_path, encoding="utf-8")).get("params", {}) if os.path.exists(spec_path) else {}
            for name, p in params.items():
                v = p["value"]
                shown = str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
                if not re.search(r"\|\s*`%s`\s*\|\s*`%s`\s*\|" % (re.escape(name), re.escape(shown)), text):
                    problems.append(f"rule {rid}: {page} has no threshold row | `{name}` | `{shown}` | (rules/{rid}.json)")
        if rid not in readme_rows:
            problems.append(f"rule {rid}: no row in README.md's rules table")
        if rid not in index_rows:
            problems.append(f"rule {rid}: no row in docs/rules/README.md's table")
        if analyze_help and rid not in analyze_help:
            problems.append(f"rule {rid}: not named in `cuprobe analyze --help` (cli/cmds/analyze.cpp)")
    for name in os.listdir(os.path.join(ROOT, "docs", "rules")):
        if name.endswith(".md") and name != "README.md" and name[:-3] not in ids:
            problems.append(f"docs/rules/{name}: no rule {name[:-3]} in the code")
    for where, rows in (("README.md", readme_rows), ("docs/rules/README.md", index_rows)):
        # Only rows that look like rule ids of this project: other tables hold other hyphenated words.
        for rid in sorted(rows - ids):
            if os.path.exists(os.path.join(ROOT, "rules", "fixtures", rid)) or rid.endswith(
                    ("-storm", "-repeat", "-blowup", "-divergence", "-postmortem", "-config", "-churn", "-stall",
                     "-coverage", "-pinning", "-drift", "-integrity")):
                problems.append(f"{where}: a rules-table row names {rid}, which is no rule")


def check_commands():
    main = read("cli/main.cpp")
    commands = re.findall(r'if \(cmd == "([a-z]+)"\) return cmd_', main)
    if not commands:
        problems.append("cli/main.cpp: no subcommand found: the checker is broken")
    index = read("docs/commands/README.md") if os.path.exists(os.path.join(ROOT, "docs/commands/README.md")) else ""
    if not index:
        problems.append("docs/commands/README.md is missing")
    for c in commands:
        page = f"docs/commands/{c}.md"
        if not os.path.exists(os.path.join(ROOT, page)):
            problems.append(f"command {c}: no page {page}")
        if index and f"]({c}.md)" not in index:
            problems.append(f"command {c}: docs/commands/README.md does not link {c}.md")


def markdown_files():
    yield "README.md"
    for dirpath, _, names in os.walk(os.path.join(ROOT, "docs")):
        for n in sorted(names):
            if n.endswith(".md"):
                yield os.path.relpath(os.path.join(dirpath, n), ROOT)


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
MENTION = re.compile(r"(?<![\w/.-])(docs/[\w./-]+?\.md)\b")


def check_links():
    for rel in markdown_files():
        text = read(rel)
        base = os.path.dirname(os.path.join(ROOT, rel))
        for n, line in enumerate(text.splitlines(), 1):
            missing = []
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue  # a URL, mailto: or an anchor in the same page
                path = target.split("#", 1)[0]
                if path and not os.path.exists(os.path.normpath(os.path.join(base, path))):
                    missing.append(f"link to {target}")
            for path in MENTION.findall(line):
                if not os.path.exists(os.path.join(ROOT, path)) and not any(path in m for m in missing):
                    missing.append(f"names {path}")
            for m in dict.fromkeys(missing):
                problems.append(f"{rel}:{n}: {m}: no such file")


check_rules()
check_commands()
check_links()
for p in problems:
    print(f"check_docs: {p}")
print(f"check_docs: {'FAILED, ' + str(len(problems)) + ' problems' if problems else 'ok'}")
sys.exit(1 if problems else 0)
