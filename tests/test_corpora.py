"""The public corpora in tests/corpora: each folder says where its files come from (the
repository, the commit, the licence), and a missing one fails the tests that read it."""

from __future__ import annotations

import re

import pytest

from corpus import ROOT, corpus

FOLDERS = sorted(p for p in ROOT.iterdir() if p.is_dir())


def test_the_index_lists_each_corpus_here():
    listed = re.findall(r"^\| `([\w.-]+)/` \|", (ROOT / "README.md").read_text(), re.M)
    assert sorted(listed) == [p.name for p in FOLDERS]
    assert {"dcp-gomemcached", "rdb-librdb", "redis-assets"} <= set(listed)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_each_corpus_names_its_source_commit_and_licence(folder):
    readme = (folder / "README.md").read_text()
    assert re.search(r"^- Source: https://github\.com/[\w.-]+/[\w.-]+, ", readme, re.M), readme
    assert re.search(r"^- Commit: .*\b[0-9a-f]{40}\b", readme, re.M), readme
    assert re.search(r"^- Licence: [A-Z][\w.-]+ ", readme, re.M), readme
    assert any(p.name != "README.md" for p in folder.iterdir())


def test_a_missing_corpus_is_an_error_not_a_skip():
    with pytest.raises(FileNotFoundError, match="tests/corpora/no-such"):
        corpus("no-such")
