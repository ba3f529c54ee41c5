"""The panes with fixed data (no worker): asm view, chart, themes, keys, palette, CUDA highlighting."""

from __future__ import annotations

from pathlib import Path

from kerneltui.config import load_config
from kerneltui.ui import themes
from kerneltui.ui.adapters.asm import DumpFolderAsm, llir_line_map, mlir_line_map, ptx_line_map, sass_line_map
from kerneltui.ui.commands import palette_items
from kerneltui.ui.launch import create_app
from kerneltui.ui.options import AppOptions
from kerneltui.ui.ports import AsmListing, HistorySeries
from kerneltui.ui.screens.help import HelpScreen
from kerneltui.ui.widgets.asm_view import build_diff, build_view
from kerneltui.ui.widgets.history_chart import render_chart
from tests.ui import fixed_data
from tests.ui.conftest import wait_for

COLOURS = {"chart-point": "blue", "chart-current": "yellow", "chart-baseline": "white", "chart-floor": "red"}


def make_app(task: Path, settings=None, asm: AsmListing | None = None, **options):
    import kerneltui.settings.ui  # noqa: F401

    opts = AppOptions(watch=False, run_on_start=False, prestart_worker=False,
                      watch_themes=options.pop("watch_themes", False), clock=lambda: 100.0, **options)
    return create_app(task, settings=settings or load_config(env={}), options=opts,
                      parts=fixed_data.parts(history=fixed_data.history(), asm=asm or fixed_data.listing()))


async def _fed(pilot) -> None:
    await pilot.pause()
    for event in fixed_data.finished_run():
        pilot.app.bridge.emit(event)
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


# -- line maps and views ------------------------------------------------------------------------


def test_line_maps_follow_debug_info() -> None:
    ptx = fixed_data.PTX.splitlines()
    pmap = ptx_line_map(ptx, "kernel.py")
    add = next(i for i, line in enumerate(ptx) if "add.f32" in line)
    assert pmap[add] == 13
    assert pmap[next(i for i, line in enumerate(ptx) if ".version" in line)] is None
    sass = fixed_data.SASS.splitlines()
    smap = sass_line_map(sass, "kernel.py")
    assert smap[next(i for i, line in enumerate(sass) if "FADD" in line)] == 13
    assert smap[next(i for i, line in enumerate(sass) if "S2R R0" in line)] == 8
    ttgir = ['#loc = loc("/t/kernel.py":9:0)', '#loc1 = loc("/site/triton/standard.py":40:0)',
             "%0 = tt.get_program_id x : i32 loc(#loc)", "%1 = arith.addi %0, %0 : i32 loc(#loc1)",
             '%2 = tt.load %p loc("/t/kernel.py":11:8)']
    assert mlir_line_map(ttgir, "kernel.py") == (None, None, 9, None, 11)
    llir = ["  %5 = fadd float %3, %4, !dbg !12", "!12 = !DILocation(line: 13, column: 4, scope: !7)"]
    assert llir_line_map(llir, "kernel.py") == (13, None)


def test_filters_and_diff() -> None:
    sass = fixed_data.listing().stages[1]
    everything = build_view(sass, hide_directives=False, hide_comments=False, hide_hex=False)
    clean = build_view(sass, hide_directives=True, hide_comments=False, hide_hex=True)
    assert len(everything) == len(sass.lines())
    assert not any("0x000fe2" in v.text for v in clean)  # hex encodings stripped
    assert not any(v.text.strip().startswith("//##") for v in clean)  # location directives hidden
    assert any("FADD" in v.text and v.source == 13 for v in clean)
    changed = fixed_data.SASS.replace("FADD R9, R4, R7", "FMUL R9, R4, R7")
    new = build_view(fixed_data.listing(sass=changed).stages[1], True, False, True)
    diff = build_diff(clean, new)
    assert [v.text.split()[1] for v in diff if v.mark == "-"] == ["FADD"]
    assert [v.text.split()[1] for v in diff if v.mark == "+"] == ["FMUL"]
    assert all(v.source == 13 for v in diff if v.mark == "+")


def test_dump_folder_reader(tmp_path: Path) -> None:
    assert "no compiler output" in DumpFolderAsm("kernel.py").load(tmp_path / "missing").note
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "add_kernel.sass").write_text(fixed_data.SASS)
    (tmp_path / "dump" / "add_kernel.ptx").write_text(fixed_data.PTX)
    listing = DumpFolderAsm("kernel.py").load(tmp_path)
    assert [s.name for s in listing.stages] == ["PTX", "SASS"]
    assert 13 in listing.stages[1].source_lines


# -- the asm pane in the app ----------------------------------------------------------------------


async def test_asm_view_draws_only_visible_lines_of_100k_line_sass(example_task) -> None:
    big = fixed_data.listing(sass=fixed_data.big_sass(100_000))
    app = make_app(example_task("vector_add"), asm=big)
    async with app.run_test(size=(120, 40)) as pilot:
        await _fed(pilot)
        await pilot.press("f6", "ctrl+o")
        lines = app.asm_pane.lines_widget
        assert lines.has_focus and app.asm_pane.stage_name == "SASS"
        assert lines.virtual_size.height == 33_334  # location directives and hex-only lines hidden
        await pilot.press("d", "x")  # show everything: all 100,000 lines
        assert lines.virtual_size.height >= 99_998
        await pilot.press("end")
        await pilot.pause()
        assert lines.cursor == len(lines.view) - 1
        assert lines.scroll_offset.y > 99_000
        # Only the rows on screen were ever drawn (plus the first screen): a Line-API view.
        assert len(lines._cache) <= 2 * lines.size.height + 2


async def test_editor_cursor_links_asm_and_enter_jumps_back(example_task) -> None:
    app = make_app(example_task("vector_add"))
    async with app.run_test(size=(160, 45)) as pilot:
        await _fed(pilot)
        app.editor.goto_line(11)
        await pilot.pause()
        lines = app.asm_pane.lines_widget
        assert lines.linked and all(lines.view[i].source == 11 for i in lines.linked)
        await pilot.press("f6")
        target = next(i for i, v in enumerate(lines.view) if v.source == 13)
        for _ in range(target - lines.cursor):
            await pilot.press("down")
        await pilot.press("enter")
        assert app.editor.has_focus
        assert app.editor.cursor_location[0] == 12
        # Stage switching and filters from the keyboard.
        await pilot.press("f6", "right_square_bracket")
        assert app.asm_pane.stage_name == "PTX"
        before = len(lines.view)
        await pilot.press("d")
        assert len(lines.view) > before  # directives shown now


# -- chart ------------------------------------------------------------------------------------------


def test_chart_draws_points_lines_and_units() -> None:
    series = fixed_data.history()
    text = render_chart(series, "us", 80, 20, COLOURS).plain
    plot = "\n".join(text.splitlines()[1:-1])  # without the legend and the key
    assert plot.count("●") == len(series.points) - 1 and plot.count("◆") == 1
    assert "┄" in text and "─" in text and "floor 182µs" in text and "ref 505µs" in text
    assert "7 versions · current v000006: 205µs" in text
    percent = render_chart(series, "percent", 80, 20, COLOURS).plain
    assert "current v000006: 89%" in percent and "floor 100%" in percent
    empty = render_chart(HistorySeries(note="no benchmark numbers: timing needs a GPU"), "us", 80, 20, COLOURS)
    assert "timing needs a GPU" in empty.plain


# -- themes, keys, palette, help --------------------------------------------------------------------


def test_bundled_themes_parse_with_app_variables() -> None:
    found = themes.load_themes(themes.bundled_themes_dir())
    assert not found.problems
    assert {"kerneltui-dark", "kerneltui-light", "kerneltui-ansi"} <= set(found.themes)
    assert found.themes["kerneltui-ansi"].theme.ansi
    for tf in found.themes.values():
        assert {"pass", "warn", "fail", "asm-highlight"} <= set(tf.theme.variables)
        assert themes.text_area_theme(tf).syntax_styles["keyword"]


def test_broken_user_theme_is_reported(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('name = "bad"\nprimary = "not a colour"\n')
    (tmp_path / "nameless.toml").write_text('primary = "#ff0000"\n')
    found = themes.load_themes(tmp_path)
    assert not found.themes
    assert any("bad.toml" in p for p in found.problems) and any("needs `name" in p for p in found.problems)


async def test_user_theme_hot_reload(example_task, isolated_config: Path) -> None:
    folder = isolated_config / "config" / "themes"
    folder.mkdir(parents=True)
    theme = 'name = "mine"\ndark = true\nprimary = "#112233"\n[variables]\npass = "#00ff00"\n'
    (folder / "mine.toml").write_text(theme)
    app = make_app(example_task("vector_add"), watch_themes=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "mine" in app.available_themes
        app.theme = "mine"
        await pilot.pause()
        assert app.theme_variables["pass"] == "#00ff00"
        (folder / "mine.toml").write_text(theme.replace("#00ff00", "#abcdef"))
        await wait_for(pilot, lambda: app.theme_variables.get("pass") == "#abcdef", 20, "the edited theme to load")
        assert app.theme == "mine"


async def test_keys_remapped_from_config(example_task, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[keys]\nhelp = "f9"\nno_such_binding = "f10"\n')
    import kerneltui.settings.ui  # noqa: F401

    settings = load_config(file=config, env={})
    app = make_app(example_task("vector_add"), settings=settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert any("no_such_binding" in p for p in app.key_problems)
        await pilot.press("f9")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_palette_has_every_action_and_runs_them(example_task) -> None:
    app = make_app(example_task("vector_add"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        titles = [item.title for item in palette_items(app)]
        for wanted in ("Run: all default rungs", "Run: correctness", "Profile the current version", "Switch task…",
                       "Open session…", "Theme: kerneltui-light", "Theme: kerneltui-ansi", "Toggle pane: asm",
                       "Maximise pane: rungs", "Chart: µs / % of roofline"):
            assert wanted in titles, wanted
        await pilot.press("ctrl+p")
        await pilot.press(*"Theme: kerneltui-light")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.theme == "kerneltui-light", 10, "the light theme")
        await app.run_action("toggle_pane('asm')")
        await pilot.pause()
        assert not app.main.query_one("#pane-asm").display


async def test_panes_focus_maximise_and_resize(example_task) -> None:
    app = make_app(example_task("vector_add"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for key, pane in (("f2", "chat"), ("f4", "rungs"), ("f5", "chart"), ("f6", "asm"), ("f3", "editor")):
            await pilot.press(key)
            assert app.main.focused_pane() == pane, key
        width = app.main.query_one("#col-middle").size.width
        await pilot.press("alt+right", "alt+right")
        await pilot.pause()
        assert app.main.query_one("#col-middle").size.width > width
        await pilot.press("ctrl+o")
        assert app.main.maximized is not None and app.main.maximized.id == "pane-editor"
        await pilot.press("ctrl+o")
        assert app.main.maximized is None


async def test_cuda_source_is_highlighted(example_task) -> None:
    task = example_task("vector_add")
    (task / "kernel.cu").write_text("__global__ void add(const float* x, float* y, int n) {\n"
                                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                    "  if (i < n) { y[i] += x[i]; }  // sum\n}\n")
    app = make_app(task)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        from kerneltui.ui.widgets.editor import KernelEditor

        cu = KernelEditor(task / "kernel.cu", (task / "kernel.cu").read_text())
        await app.main.mount(cu)
        await pilot.pause()
        assert cu.language == "cuda" and not cu.highlighting_note
        names = {name for line in cu._highlights.values() for _, _, name in line}
        assert {"keyword", "type.builtin", "comment", "conditional"} <= names


async def test_help_lists_binding_ids(example_task) -> None:
    app = make_app(example_task("vector_add"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        from kerneltui.ui.screens.help import bindings_table

        table = bindings_table(app.keymap, "x")
        ids = {str(cell) for column in table.columns[2:] for cell in column._cells}
        assert {"run_loop", "save", "proposal_accept", "asm_diff", "focus_asm"} <= ids


async def test_open_session_replays_events_into_the_panes(example_task, tmp_path: Path) -> None:
    import json

    from kerneltui.core.events import event_to_dict

    log = tmp_path / "session.jsonl"
    log.write_text("\n".join(json.dumps(event_to_dict(e)) for e in fixed_data.finished_run() + fixed_data.agent_turn()))
    app = make_app(example_task("vector_add"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.press(*"Open session")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        from kerneltui.ui.screens.prompt import PromptScreen

        assert isinstance(app.screen, PromptScreen)
        app.screen.query_one("Input").value = str(log)
        await pilot.press("enter")
        await pilot.pause()
        assert all(app.rungs.rows[n].state == "ok" for n in ("prechecks", "compile", "run", "correctness"))
        assert app.chat.open_proposal() is not None
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"type": "NoSuchEvent"}\n')
        app.sessions.show(bad)
        await pilot.pause()
        assert any("bad.jsonl:1" in str(n.message) for n in app._notifications)


async def test_switch_task_opens_the_other_kernel(example_task, tmp_path: Path) -> None:
    import shutil

    first = example_task("vector_add")
    other = tmp_path / "other"
    shutil.copytree(first, other)
    (other / "kernel.py").write_text((other / "kernel.py").read_text().replace("BLOCK = 1024", "BLOCK = 64"))
    app = make_app(first)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.editor.move_cursor((0, 0))
        app.editor.focus()
        await pilot.press(*"# unsaved")
        await app.switch_task(str(other))
        await pilot.pause()
        assert app.kernel_task.root == other.resolve() or app.kernel_task.root == other
        assert "BLOCK = 64" in app.editor.text
        kept = list((first / ".kerneltui" / "unsaved").iterdir())
        assert kept and kept[0].read_text().startswith("# unsaved")
        await app.switch_task(str(tmp_path / "nothing-here"))
        await pilot.pause()
        assert any("cannot open" in str(n.message) for n in app._notifications)


async def test_profile_view_and_token_cost(example_task) -> None:
    from kerneltui.core import events as ev
    from kerneltui.core.rungs.result import RungResult
    from kerneltui.ui.adapters.profile import RungMetricsProfile
    from kerneltui.ui.screens.profile import ProfileScreen

    result = RungResult("profile", "ok", "ncu · 1 kernel", metrics={"table": {
        "title": "add_kernel · ncu", "columns": ["metric", "value", "unit"],
        "rows": [["dram throughput", 91.2, "% of peak"], ["achieved occupancy", 0.83, ""]],
        "notes": ["memory-bound: DRAM is the limiter"]}})
    table = RungMetricsProfile().table(result)
    assert table is not None and table.rows[0] == ["dram throughput", "91.2", "% of peak"]
    plain = RungMetricsProfile().table(RungResult("profile", "fail", "", metrics={"failure": "timeout"},
                                                  error="ncu not found: install Nsight Compute"))
    assert plain is not None and plain.rows == [["failure", "timeout"]] and plain.notes
    app = make_app(example_task("vector_add"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await app.push_screen(ProfileScreen(table))
        await pilot.pause()
        from textual.widgets import DataTable

        grid = app.screen.query_one(DataTable)
        assert grid.row_count == 2
        await pilot.press("escape")
        assert not isinstance(app.screen, ProfileScreen)
        # From the rung row: p on a finished profile opens the view.
        app.rungs.rung_finished(result)
        app.rungs.select("profile")
        await pilot.press("f4", "p")
        await pilot.pause()
        assert isinstance(app.screen, ProfileScreen)
        await pilot.press("escape")
        app.bridge.emit(ev.TokenUsage(turn_id="t", provider="openai", model="m", input_tokens=1200,
                                      output_tokens=300, cost_usd=0.004, session_input_tokens=1200,
                                      session_output_tokens=300, session_cost_usd=0.004))
        await pilot.pause()
        assert "1.2k in · 0.3k out · $0.004" in app.status.render_state().plain


def test_store_history_says_why_there_is_nothing_to_draw(example_task) -> None:
    from kerneltui.core.task_loaders.load import load_task
    from kerneltui.ui.adapters.history import StoreHistory

    history = StoreHistory(load_task(str(example_task("vector_add")), None))
    assert "no benchmark of this task yet" in history.load().note
    history.record("abc", [], {"gpu": False})
    assert "timing needs a GPU" in history.load().note


def test_dump_rung_index_is_read_with_its_line_maps(example_task) -> None:
    """The real dump rung (AOT compile for sm_90a, no GPU needed) feeds the asm pane."""
    from tests.conftest import run_cli

    task = example_task("vector_add")
    out = run_cli("check", str(task), "--rungs", "dump", "--no-history")
    assert out.returncode == 0, out.stdout + out.stderr
    version = next((task / ".kerneltui" / "versions").iterdir())
    listing = DumpFolderAsm("kernel.py").load(version)
    names = [s.name for s in listing.stages]
    assert "PTX" in names and "SASS" in names, (names, listing.note)
    sass = next(s for s in listing.stages if s.name == "SASS")
    assert 13 in sass.source_lines  # the tl.store line made SASS


async def test_without_a_key_the_demo_agent_is_scripted_and_says_so(example_task) -> None:
    import kerneltui.settings.ui  # noqa: F401
    from kerneltui.core import events as ev

    task = example_task("vector_add")
    opts = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False)
    app = create_app(task, settings=load_config(env={}), options=opts)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "scripted" in app.agent.label and "key" in app.agent.label.lower()
        await pilot.press("f2", "i", *"how do I make it faster?", "enter")
        await wait_for(pilot, lambda: any(isinstance(e, (ev.AgentTextDelta, ev.AgentMessage, ev.AgentError))
                                          for e in app.bridge.log), 60, "the scripted reply")
        assert not any(isinstance(e, ev.AgentError) for e in app.bridge.log), [
            e for e in app.bridge.log if isinstance(e, ev.AgentError)]


async def test_without_a_key_another_task_gets_the_offline_script(example_task) -> None:
    """Not the demo task: the same engine (an AgentChat on the scripted provider) with a short script
    that reads the kernel, says its one move does not apply here, and says why it is scripted."""
    import kerneltui.settings.ui  # noqa: F401
    from kerneltui.core import events as ev

    task = example_task("softmax")
    opts = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False)
    app = create_app(task, settings=load_config(env={}), options=opts)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.agent.label.startswith("scripted agent · no API key")
        assert any(isinstance(e, ev.Notice) and "The agent is scripted: no API key" in e.message
                   for e in app.bridge.log)
        await pilot.press("f2", "i", *"make it faster", "enter")
        await wait_for(pilot, lambda: any(isinstance(e, ev.AgentMessage) and "does not apply" in e.text
                                          for e in app.bridge.log), 60, "the scripted reply")
        read = [e for e in app.bridge.log if isinstance(e, ev.ToolCallFinished) and e.name == "read_file"]
        assert read and read[0].ok and "def " in read[0].output
        assert not any(isinstance(e, ev.AgentError) for e in app.bridge.log)
        await pilot.press(*"and now?", "enter")
        await wait_for(pilot, lambda: any(isinstance(e, ev.AgentMessage) and "API key configured" in e.text
                                          for e in app.bridge.log), 60, "the scripted agent's last words")
