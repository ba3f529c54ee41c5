"""Every settings schema, and nothing above them.

    schema.py      a section as a frozen dataclass checked against its defaults (``build``)
    ui.py          ``[ui]`` and ``[keys]``
    sessions.py    ``[sessions]``
    remote.py      ``[remote]`` (and the flags that set it)
    bench.py       ``[benchmark]`` (``BenchSettings``, read in the parent and in the workers)
    engine.py      ``[engine]``'s keys, defaults and checks
    toml_lines.py  where a key sits in a TOML file, for messages that name the line

Modules here import only the standard library and each other: ``kerneltui.config`` loads and checks
every section through them without importing the UI, the workers or the loop
(``tests/unit/test_settings_leaf.py`` holds the rule).
"""
