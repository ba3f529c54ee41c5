"""Pygments lexers for the stages Pygments does not know: NVIDIA SASS and MLIR (Triton's TTIR and
TTGIR, CuTe DSL's MLIR). PTX, LLVM IR and CUDA C++ use Pygments' own lexers.

Both are registered as ``pygments.lexers`` entry points (pyproject.toml), so ``pygmentize -l nvsass``
and ``get_lexer_by_name("mlir")`` find them once kerneltui is installed; :func:`lexer_for_stage`
gives the right lexer for a dump stage without relying on the installation.
"""

from __future__ import annotations

from pygments.lexer import Lexer, RegexLexer, bygroups, include, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

# SASS mnemonics that deserve their own colour (the rest are plain Name.Function).
_TENSOR_OPS = ("HMMA", "HGMMA", "IMMA", "IGMMA", "QGMMA", "BGMMA", "DMMA", "OMMA", "QMMA",
               "UTCHMMA", "UTCQMMA", "UTCIMMA", "UTCOMMA", "UTCMMA")
_MEMORY_OPS = ("LDG", "STG", "LDS", "STS", "LDL", "STL", "LDSM", "STSM", "LDGSTS", "LDC", "ULDC", "LD", "ST",
               "ATOM", "ATOMG", "ATOMS", "RED", "REDG", "UTMALDG", "UTMASTG", "UTMAPF", "UBLKCP", "LDGDEPBAR",
               "LDTM", "STTM", "CCTL", "CCTLL")
_CONTROL_OPS = ("BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BSSY", "BSYNC", "BREAK", "BPT", "KILL",
                "BAR", "SYNCS", "MEMBAR", "DEPBAR", "WARPSYNC", "WARPGROUP", "ERRBAR", "NANOSLEEP", "YIELD",
                "ELECT", "VOTE", "VOTEU")


class NvidiaSassLexer(RegexLexer):
    """NVIDIA SASS as printed by nvdisasm and cuobjdump."""

    name = "NVIDIA SASS"
    # "sass" and *.sass belong to Pygments' lexer for the CSS language of that name.
    aliases = ["nvsass", "nvidia-sass", "cuda-sass", "nvdisasm"]
    filenames = ["*.nvsass"]
    mimetypes = ["text/x-nvidia-sass"]
    url = "https://docs.nvidia.com/cuda/cuda-binary-utilities/"

    tokens = {
        "root": [
            (r"\n", Whitespace),
            (r"[ \t]+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"(/\*)([0-9a-fA-F]+)(\*/)", bygroups(Comment.Special, Number.Hex, Comment.Special)),
            (r"/\*.*?\*/", Comment.Multiline),
            (r"(Function)(\s*:\s*)(\S+)", bygroups(Keyword, Punctuation, Name.Function)),  # cuobjdump -sass
            (r"[\w.$]+:", Name.Label),
            (r"\.(?:section|sectionflags|sectioninfo|align|global|type|size|other|headerflags|elftype|"
             r"byte|short|word|dword|zero|weak)\b", Keyword.Pseudo),
            (r"@!?U?P[T0-9]+", Keyword.Pseudo),
            (words(_TENSOR_OPS, suffix=r"(?=[.\s;])"), Name.Builtin, "operands"),
            (words(_MEMORY_OPS, suffix=r"(?=[.\s;])"), Keyword.Reserved, "operands"),
            (words(_CONTROL_OPS, suffix=r"(?=[.\s;])"), Keyword, "operands"),
            (r"[A-Z][A-Z0-9_]*(?=[.\s;])", Name.Function, "operands"),
            (r'"[^"]*"', String),
            (r"@\"[^\"]*\"", String),
            (r"@\w+", Name.Attribute),  # ELF symbol and section types: @function, @progbits
            (r"[\w.$]+", Text),
            (r"[(),;:\[\]{}`|+-]", Punctuation),
        ],
        "operands": [
            (r"\n", Whitespace, "#pop"),
            (r";", Punctuation, "#pop"),
            (r"(?<=[A-Z0-9])\.[A-Z0-9_]+", Name.Attribute),  # modifiers: .E.128, .reuse, .F32.BF16
            (r"[ \t]+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"/\*.*?\*/", Comment.Multiline),
            (r"\b(?:R|UR)(?:Z|\d+)\b", Name.Variable),
            (r"\b(?:U?P)(?:T|\d+)\b", Name.Variable.Magic),
            (r"\bSR_[A-Z0-9_.]+\b", Name.Builtin.Pseudo),
            (r"\b(?:c|desc|gdesc|tmem)(?=\[)", Name.Constant),
            (r"-?0x[0-9a-fA-F]+", Number.Hex),
            (r"-?\d+\.\d*(?:e[+-]?\d+)?", Number.Float),
            (r"-?(?:INF|QNAN|NAN)\b", Number.Float),
            (r"-?\d+", Number.Integer),
            (r"`\([^)]*\)", Name.Label),
            (r"[!~|-]", Operator),
            (r"[(),\[\]{}`+]", Punctuation),
            (r"[\w.$]+", Text),
        ],
    }


class MlirLexer(RegexLexer):
    """MLIR's generic and custom textual forms, enough for Triton's TTIR/TTGIR and CuTe DSL output."""

    name = "MLIR"
    aliases = ["mlir", "ttir", "ttgir"]
    filenames = ["*.mlir", "*.ttir", "*.ttgir"]
    mimetypes = ["text/x-mlir"]
    url = "https://mlir.llvm.org/docs/LangRef/"

    tokens = {
        "root": [
            (r"\n", Whitespace),
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            include("locations"),
            (r'"(?:[^"\\]|\\.)*"', String),
            (r"%[\w$.#-]+(?::\d+)?", Name.Variable),
            (r"\^[\w$.-]+", Name.Label),
            (r"@[\w$.-]+", Name.Function),
            (r"#[\w$.]+", Name.Constant),
            (r"![\w$.]+", Keyword.Type),
            (r"\b(?:[su]?i\d+|f\d+|bf16|tf32|f8E\w+|index|none)\b", Keyword.Type),
            (r"\b(?:tensor|memref|vector|tuple|complex)(?=<)", Keyword.Type),
            (words(("module", "func", "attributes", "public", "private", "nested", "to", "step", "iter_args",
                    "dense", "true", "false", "ins", "outs", "do", "yield", "return", "unit"), suffix=r"\b"),
             Keyword),
            (r"\b[a-z_][\w$]*(?:\.[a-z_][\w$]*)+\b", Name.Builtin),  # dialect ops: tt.load, arith.addi
            (r"0x[0-9a-fA-F]+", Number.Hex),
            (r"-?\d+\.\d*(?:[eE][+-]?\d+)?", Number.Float),
            (r"-?\d+", Number.Integer),
            (r"->|=|:|\*", Operator),
            (r"[(){}\[\]<>,]", Punctuation),
            (r"[\w$.]+", Text),
        ],
        "locations": [
            (r"\bloc\(", Comment.Preproc, "loc"),
        ],
        "loc": [
            (r"\(", Comment.Preproc, "#push"),
            (r"\)", Comment.Preproc, "#pop"),
            (r"[^()]+", Comment.Preproc),
        ],
    }


STAGE_LEXER_ALIASES = {
    "sass": "sass",
    "ttir": "mlir",
    "ttgir": "mlir",
    "mlir": "mlir",
    "ptx": "ptx",
    "llir": "llvm",
    "cuda": "cuda",
    "source": "python",
}


def lexer_for_stage(stage: str) -> Lexer:
    """A Pygments lexer instance for a dump stage (``sass``, ``ptx``, ``ttgir``, ``llir``, …)."""
    alias = STAGE_LEXER_ALIASES.get(stage, stage)
    if alias == "sass":
        return NvidiaSassLexer()
    if alias == "mlir":
        return MlirLexer()
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(alias)
    except ClassNotFound:
        from pygments.lexers.special import TextLexer

        return TextLexer()
