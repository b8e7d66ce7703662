"""BM25 search over the catalogue, with bm25s, built once and cached on disk.

Documents are upstream's indexed text (title, description, first bullet, options; lower-cased), analysed
like Lucene's English analyzer that upstream's Pyserini index uses (English stop words, Porter-style
stemming) and scored with Lucene's BM25 at Pyserini's defaults ``k1=0.9, b=0.4``. A search returns the top
50 documents with a positive score, best first, ties broken by catalogue order as Lucene breaks them by
document id.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

__all__ = ["SEARCH_RETURN_N", "SearchIndex"]

logger = logging.getLogger(__name__)
# bm25s sets its own logger to DEBUG at import, which floods an application's DEBUG/INFO console with
# per-index messages; its warnings still get through.
logging.getLogger("bm25s").setLevel(logging.WARNING)

SEARCH_RETURN_N = 50
K1, B = 0.9, 0.4
MAX_QUERY_TERMS = 1024
"""Lucene's default ``maxClauseCount``."""
_STEMMER = Stemmer.Stemmer("english")
_META = "agentrl-webshop.json"


class SearchIndex:
    """A BM25 index over documents ``0..n-1``."""

    def __init__(self, retriever: bm25s.BM25, num_docs: int) -> None:
        """Wrap a built or loaded bm25s retriever (use :meth:`build` or :meth:`load_or_build`)."""
        self._retriever = retriever
        self.num_docs = num_docs

    @classmethod
    def build(cls, documents: Iterable[str]) -> SearchIndex:
        """Index ``documents`` (already lower-cased text) in memory."""
        texts = list(documents)
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=_STEMMER, show_progress=False)
        retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
        retriever.index(tokens, show_progress=False)
        return cls(retriever, len(texts))

    @classmethod
    def load_or_build(cls, folder: Path, key: str, documents: Iterable[str]) -> SearchIndex:
        """Load the index cached in ``folder`` if it was built for ``key``, else build and cache it.

        ``key`` identifies the document set (a catalogue fingerprint); documents are only read on a miss.
        """
        meta = folder / _META
        if meta.is_file():
            try:
                info = json.loads(meta.read_text())
                if info.get("key") == key:
                    retriever = bm25s.BM25.load(str(folder), mmap=False, show_progress=False, verbosity=0)
                    return cls(retriever, int(info["num_docs"]))
            except (OSError, ValueError, KeyError) as e:  # a damaged cache is rebuilt, never trusted
                logger.warning("WebShop search index at %s is unreadable (%s); rebuilding it", folder, e)
        index = cls.build(documents)
        index.save(folder, key)
        return index

    def save(self, folder: Path, key: str) -> None:
        """Write the index to ``folder`` atomically (a temp folder renamed into place)."""
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
        self._retriever.save(str(tmp), show_progress=False)
        (tmp / _META).write_text(json.dumps({"key": key, "num_docs": self.num_docs}))
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[int]:
        """Indices of the top ``k`` documents for ``query`` with a positive score, best first."""
        tokens = bm25s.tokenize(
            [query.lower()], stopwords="en", stemmer=_STEMMER, return_ids=False, show_progress=False
        )
        vocab = self._retriever.vocab_dict
        # Repeated terms count again, as in Lucene's boolean query; Lucene refuses queries past its clause
        # limit, here the extra terms are dropped instead so a runaway query still answers quickly.
        terms = [str(t) for t in tokens[0] if t in vocab][:MAX_QUERY_TERMS]  # tokens: return_ids=False
        if not terms:
            return []
        scores = self._retriever.get_scores(terms)
        k = min(k, self.num_docs)
        top = np.argpartition(-scores, k - 1)[:k] if k < self.num_docs else np.arange(self.num_docs)
        order = np.lexsort((top, -scores[top]))  # score descending, then document order
        return [int(top[i]) for i in order if scores[top[i]] > 0]
