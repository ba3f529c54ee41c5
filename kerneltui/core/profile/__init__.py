"""Nsight Compute profiles: running ncu, reading its report, condensing it for a person and the agent.

    locate.py    find ncu (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute/*, KERNELTUI_NCU)
    command.py   the ncu command lines (profile, and --import per CSV page)
    spec.py      what the profiling target is told (task, files, case)
    target.py    the program ncu profiles: one call of the candidate inside the NVTX range `kerneltui`
    runner.py    run ncu (process group, timeout, cancel), read the pages back, save profile.json
    csvpages.py  the raw and details CSV pages
    summary.py   throughput, the bound and its thresholds, occupancy, stalls, DRAM bytes, rules
    hotspots.py  samples per SASS offset and per source line (the viewer's heat column)
    render.py    the TUI table and the agent's brief
    errors.py    why a profile did not happen, and the fix

Nothing here imports torch except target.py, which runs in its own process under ncu.
"""
