"""The user guide (docs/guide/*.md): every ```python block runs, page by page in order, in a
fresh namespace and an empty working directory; the README links the guide; the dataset
README's snippet runs twice in one directory."""

from __future__ import annotations

import linecache
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
GUIDE = ROOT / "docs" / "guide"
PAGES = sorted(p for p in GUIDE.glob("*.md") if p.name != "README.md")
#: an opening fence and its info string, then the body, then the closing fence
BLOCK = re.compile(r"^```([^\n]*)\n(.*?)^```\s*$", re.M | re.S)


def python_blocks(page: Path) -> list[str]:
    """The runnable ```python blocks of `page` (```python no-run ones left out)."""
    blocks = []
    for info, body in BLOCK.findall(page.read_text()):
        words = info.split()
        if words[:1] == ["python"] and "no-run" not in words:
            blocks.append(body)
    return blocks


def run_blocks(page: Path, blocks: list[str], namespace: dict[str, object]) -> None:
    """Execute `blocks` in order in `namespace`; their source is registered with linecache, so
    tracebacks show it and `inspect.getsource` works (burn-cube parses kernel sources)."""
    for index, body in enumerate(blocks):
        name = f"<{page.name} block {index + 1}>"
        linecache.cache[name] = (len(body), None, body.splitlines(keepends=True), name)
        exec(compile(body, name, "exec"), namespace)  # noqa: S102 - the guide's own examples


def test_guide_pages_listed_and_linked() -> None:
    index = (GUIDE / "README.md").read_text()
    linked = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    assert linked == {p.name for p in PAGES}
    assert len(PAGES) == 10
    assert "docs/guide" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_guide_page_runs(page: Path, tmp_path, monkeypatch) -> None:
    blocks = python_blocks(page)
    assert blocks, f"{page.name} has no python block"
    monkeypatch.chdir(tmp_path)
    run_blocks(page, blocks, {"__name__": f"guide_{page.stem.replace('-', '_')}"})


def test_no_run_blocks_are_only_for_gpus() -> None:
    for page in PAGES:
        for info, body in BLOCK.findall(page.read_text()):
            if "no-run" in info.split():
                assert "cuda" in body or "wgpu" in body, f"{page.name}: no-run block {body!r}"


def test_dataset_readme_snippet_runs_twice(tmp_path, monkeypatch) -> None:
    readme = ROOT / "packages" / "burn-dataset" / "README.md"
    blocks = python_blocks(readme)
    assert blocks
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # a second run finds data.db from the first
        run_blocks(readme, blocks, {"__name__": "dataset_readme"})


def test_readme_examples_run(tmp_path, monkeypatch) -> None:
    readme = ROOT / "README.md"
    blocks = python_blocks(readme)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    run_blocks(readme, blocks, {"__name__": "readme"})
