"""Ranked search over the context folders: the task's context/, the configured one, kerneltui's notes.

``folders`` says what is searched and what is skipped; ``chunker`` (with ``chunk_code``,
``chunk_docs`` and ``chunks``) cuts files along their structure; ``tokens`` makes words code-aware;
``index`` keeps the SQLite FTS5 index and answers queries; ``ranking`` orders the hits; ``hits``
reads snippets and writes what the model reads.
"""

from __future__ import annotations

from kerneltui.core.agent.search.folders import ContextFolder, context_folders, notes_dir
from kerneltui.core.agent.search.hits import Hit, format_hits
from kerneltui.core.agent.search.index import ContextIndex, FolderReport, IndexStats
from kerneltui.core.agent.search.tokens import query_terms

__all__ = ["ContextFolder", "ContextIndex", "FolderReport", "Hit", "IndexStats", "context_folders", "format_hits",
           "notes_dir", "query_terms"]
