"""The compiler's output of each version: IR, PTX and SASS, linked to the source.

* ``artifact`` — what a backend hands over per kernel specialisation (the worker → parent contract);
* ``tools`` — finding nvdisasm / cuobjdump / ptxas (PATH, CUDA_HOME, Triton's wheel, NVIDIA's wheels);
* ``ptx``, ``sass``, ``mlir``, ``llvm`` — parsers, each giving a source-line map (``srcmap``);
* ``elf`` — registers, stack frame, shared memory straight from the cubin;
* ``resources``, ``occupancy``, ``mix`` — the resource report and the instruction mix;
* ``writer`` — the dump of a version on disk; ``store`` — reading it back (viewer, CLI);
* ``diff`` — two versions' stages compared; ``lexers`` — Pygments lexers for SASS and MLIR.

Nothing here imports torch, triton or Textual: it runs in the parent process.
"""
