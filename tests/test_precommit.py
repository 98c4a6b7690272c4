"""The pre-commit hook: the manifest passes pre-commit's own validator, and in a temporary git
repository a commit of a bad template is refused, then the fixed template is accepted.

The hook under test is the manifest's own ``promptcache-lint`` entry (id, files, types, entry
and its arguments), run as a ``repo: local`` hook with ``language: system`` and the entry's
``promptcache`` replaced by this interpreter's ``-m promptcache``. ``language: python`` would make
pre-commit build a virtualenv and install this package and its dependencies from PyPI on every
test run (minutes, and a network dependency); everything else about the hook is exercised as
shipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, SAMPLES

pre_commit = pytest.importorskip("pre_commit")
MANIFEST = ROOT / ".pre-commit-hooks.yaml"


def test_manifest_is_valid():
    from pre_commit.clientlib import load_manifest

    (hook,) = load_manifest(MANIFEST)
    assert hook["id"] == "promptcache-lint"
    assert hook["entry"].split()[:2] == ["promptcache", "lint"]
    assert hook["language"] == "python" and hook["pass_filenames"] is True
    import re

    files = re.compile(hook["files"])
    for name in ("support.j2", "a/b.jinja2", "x.prompty", "w.mustache", "prompts/p.txt", "prompts/chat.yaml",
                 "src/prompts/agent.py", "templates/body.json"):
        assert files.search(name), name
    for name in ("README.md", "src/app.py", "pyproject.toml", "config.yaml"):
        assert not files.search(name), name


def git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_commit_refused_then_accepted(tmp_path):
    (hook,) = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    entry = hook["entry"].split()
    assert entry[0] == "promptcache"
    local = {**hook, "language": "system", "entry": " ".join([sys.executable, "-m", "promptcache", *entry[1:]])}
    local.pop("minimum_pre_commit_version", None)
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git(repo, "init", "-q").returncode == 0
    git(repo, "config", "commit.gpgsign", "false")
    (repo / ".pre-commit-config.yaml").write_text(
        yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}, sort_keys=False), encoding="utf-8")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    env.pop("GITHUB_ACTIONS", None)
    r = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    (repo / "prompts").mkdir()
    shutil.copy(SAMPLES / "templates" / "bad" / "support_system.j2", repo / "prompts" / "support_system.j2")
    shutil.copy(SAMPLES / "templates" / "good" / "faq_chat.yaml", repo / "prompts" / "faq_chat.yaml")
    git(repo, "add", "-A")

    def commit():
        return subprocess.run(["git", "commit", "-q", "-m", "prompts"], cwd=repo, capture_output=True, text=True,
                              env={**env, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                                   "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})
    r = commit()
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "promptcache lint" in out and "Failed" in out
    assert "prompts/support_system.j2:3:15: PC101" in out and "prompts/support_system.j2:4:23: PC108" in out
    assert git(repo, "rev-parse", "--verify", "HEAD").returncode != 0  # nothing was committed
    # fix the template (static policy first, per-request facts at the end) and commit again
    shutil.copy(SAMPLES / "templates" / "good" / "support_system.j2", repo / "prompts" / "support_system.j2")
    git(repo, "add", "-A")
    r = commit()
    assert r.returncode == 0, r.stdout + r.stderr
    assert git(repo, "rev-parse", "--verify", "HEAD").returncode == 0
    assert "support_system.j2" in git(repo, "show", "--stat", "HEAD").stdout


#: One file per source kind from the lint corpus, and where a repository keeps it.
CORPUS_FILES = {
    "typescript/deep_research_prompt.ts": "src/prompts/deep_research_prompt.ts",
    "go/sprintf_agent.go": "internal/planner_prompt.go",
    "go/base_prompt.tmpl": "bot/base_prompt.tmpl",
    "workflow/n8n_interview_scheduler.json": "workflows/n8n_interview_scheduler.json",
    "workflow/dify_classifier_knowledge.yml": "workflows/dify_classifier_knowledge.yml",
    "workflow/flowise_dated_agent.json": "flows/flowise_dated_agent.json",
    "langchain_python/codebase_chat_prompts.py": "app/agents/prompts.py",
    "semantic_kernel/ContextQuery/skprompt.txt": "plugins/QA/ContextQuery/skprompt.txt",
    "semantic_kernel/LiquidPrompt.yaml": "prompts/LiquidPrompt.yaml",
    ".claude/commands/commit.md": ".claude/commands/commit.md",
}


def test_manifest_files_cover_every_source_kind():
    (hook,) = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    import re

    files = re.compile(hook["files"])
    for name in CORPUS_FILES.values():
        assert files.search(name), name
    for name in ("x.tmpl", "x.gotmpl", "x.liquid", "rules/a.mdc", ".github/prompts/a.prompt.md",
                 ".claude/agents/reviewer.md", "src/system_prompt.go", "web/prompt.tsx"):
        assert files.search(name), name
    for name in ("src/app.ts", "main.go", "package.json", "docs/guide.md", "web/app.js"):
        assert not files.search(name), name


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_hook_refuses_each_new_source_kind(tmp_path):
    """The shipped hook, run by pre-commit on a commit holding one bad template of each new source
    kind: the commit is refused and every file is reported at the value's line."""
    (hook,) = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    entry = hook["entry"].split()
    local = {**hook, "language": "system", "entry": " ".join([sys.executable, "-m", "promptcache", *entry[1:]])}
    local.pop("minimum_pre_commit_version", None)
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git(repo, "init", "-q").returncode == 0
    git(repo, "config", "commit.gpgsign", "false")
    (repo / ".pre-commit-config.yaml").write_text(
        yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}, sort_keys=False), encoding="utf-8")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    env.pop("GITHUB_ACTIONS", None)
    r = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    corpus = ROOT / "tests" / "data" / "lint_corpus"
    flags = {e["file"]: e["flag"] for e in __import__("json").loads((corpus / "corpus.json").read_text(encoding="utf-8"))}
    for src, dst in CORPUS_FILES.items():
        (repo / dst).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(corpus / src, repo / dst)
    git(repo, "add", "-A")
    r = subprocess.run(["git", "commit", "-q", "-m", "prompts"], cwd=repo, capture_output=True, text=True,
                       env={**env, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    for src, dst in CORPUS_FILES.items():
        assert f"{dst}:{flags[src][0]}:" in out, (dst, out[-3000:])
