"""SASS parsing (cuobjdump and nvdisasm text), special-function blocks, and the target FLOP adjustment."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nodecast.errors import InputError
from nodecast.models.roofline import RooflineModel
from nodecast.models.roofline_equations import KernelInputs
from nodecast.models.sass import (
    BasicBlock,
    Instruction,
    SassComparison,
    SassFunction,
    compare_function,
    mangled_simple_name,
    match_functions,
    parse_sass,
    read_sass_counts,
)
from nodecast.traces.ncu import FLOP_OPS, PRECISION_LETTER, KernelMetrics

# Excerpt of real `cuobjdump -sass` output (sm_70, CUDA 10.x era), the kernel part of
# celeritas-project/cuda-test-snippets, logs/log-float.s at commit 5443fc71390e1110f7737285f9e93f788a834ca4
# (a float logf kernel: MUFU.LG2 then one FMUL by ln 2), from its "code for sm_70" line to the "....." line that
# ends the function. Blank lines as in the file.
LOG_FLOAT_CUOBJDUMP = """\
\tcode for sm_70
\t\tFunction : _Z5mylogPf
\t.headerflags    @"EF_CUDA_SM70 EF_CUDA_PTX_SM(EF_CUDA_SM70)"
        /*0000*/                   MOV R1, c[0x0][0x28] ;

        /*0010*/              @!PT SHFL.IDX PT, RZ, RZ, RZ, RZ ;

        /*0020*/                   S2R R2, SR_TID.X ;

        /*0030*/                   MOV R3, 0x4 ;

        /*0040*/                   IMAD.WIDE.U32 R2, R2, R3, c[0x0][0x160] ;

        /*0050*/                   LDG.E.SYS R0, [R2] ;

        /*0060*/                   MUFU.LG2 R0, R0 ;

        /*0070*/                   FMUL.FTZ R5, R0, 0.69314718246459960938 ;

        /*0080*/                   STG.E.SYS [R2], R5 ;

        /*0090*/                   EXIT ;

        /*00a0*/                   BRA 0xa0;

        /*00b0*/                   NOP;

        /*00c0*/                   NOP;

        /*00d0*/                   NOP;

        /*00e0*/                   NOP;

        /*00f0*/                   NOP;

\t\t.....................
"""

# Excerpt of real `cuobjdump -sass` output (sm_70): logs/exp-float.s of the same repository and commit as above,
# from its "code for sm_70" line to the BRA at 0x00a0 (expf: FMUL by log2(e) then MUFU.EX2).
EXP_FLOAT_CUOBJDUMP = """\
\tcode for sm_70
\t\tFunction : _Z5myexpPf
\t.headerflags    @"EF_CUDA_SM70 EF_CUDA_PTX_SM(EF_CUDA_SM70)"
        /*0000*/                   MOV R1, c[0x0][0x28] ;

        /*0010*/              @!PT SHFL.IDX PT, RZ, RZ, RZ, RZ ;

        /*0020*/                   S2R R2, SR_TID.X ;

        /*0030*/                   MOV R3, 0x4 ;

        /*0040*/                   IMAD.WIDE.U32 R2, R2, R3, c[0x0][0x160] ;

        /*0050*/                   LDG.E.SYS R0, [R2] ;

        /*0060*/                   FMUL.FTZ R0, R0, 1.4426950216293334961 ;

        /*0070*/                   MUFU.EX2 R5, R0 ;

        /*0080*/                   STG.E.SYS [R2], R5 ;

        /*0090*/                   EXIT ;

        /*00a0*/                   BRA 0xa0;
"""

# Two excerpts of real `nvdisasm` output (sm_70) of celeritas-project/cuda-test-snippets,
# celer-rotate/rotate-simplest.s at commit f593e67fd5ef17a2779e281f73ffdc67f9ddbdb8: the section label line of
# __cuda_sm20_dblrcp_rn_slowpath_v3 (double-precision reciprocal), then its lines 0x02f0-0x0760 verbatim
# (MUFU.RCP64H seeds followed by DFMA Newton iterations, symbolic .L_x_ labels and branch targets).
DBLRCP_NVDISASM = """\
.text.__cuda_sm20_dblrcp_rn_slowpath_v3:
.L_x_11:
        /*02f0*/                   ISETP.LT.U32.AND P0, PT, R8, 0x1000001, PT ;
        /*0300*/               @P0 BRA `(.L_x_13) ;
        /*0310*/                   IADD3 R6, R3, -0x3fe00000, RZ ;
        /*0320*/                   MOV R7, R6 ;
        /*0330*/                   MOV R6, R9 ;
        /*0340*/                   MOV R3, R6 ;
        /*0350*/                   MOV R8, R7 ;
        /*0360*/                   MOV R3, RZ ;
        /*0370*/                   MUFU.RCP64H R8, R8 ;
        /*0380*/                   MOV R3, R3 ;
        /*0390*/                   MOV R3, R3 ;
        /*03a0*/                   MOV R8, R8 ;
        /*03b0*/                   MOV R8, R8 ;
        /*03c0*/                   LOP3.LUT R3, R3, R0, RZ, 0xfc, !PT ;
        /*03d0*/                   MOV R9, R8 ;
        /*03e0*/                   MOV R8, R3 ;
        /*03f0*/                   DADD R10, -RZ, -R6 ;
        /*0400*/                   MOV R10, R10 ;
        /*0410*/                   MOV R11, R11 ;
        /*0420*/                   MOV R6, 0x0 ;
        /*0430*/                   MOV R7, 0x3ff00000 ;
        /*0440*/                   DFMA R12, R10, R8, R6 ;
        /*0450*/                   DFMA R12, R12, R12, R12 ;
        /*0460*/                   DFMA R12, R12, R8, R8 ;
        /*0470*/                   DFMA R10, R10, R12, R6 ;
        /*0480*/                   DFMA R10, R10, R12, R12 ;
        /*0490*/                   MOV R8, 0x100000 ;
        /*04a0*/                   MOV R9, RZ ;
        /*04b0*/                   LOP3.LUT R9, R9, R8, RZ, 0x3c, !PT ;
        /*04c0*/                   LOP3.LUT R8, R9, R8, RZ, 0x3c, !PT ;
        /*04d0*/                   LOP3.LUT R9, R9, R8, RZ, 0x3c, !PT ;
        /*04e0*/                   DMUL R8, R10, R8 ;
        /*04f0*/                   DADD R4, -RZ, -R4 ;
        /*0500*/                   MOV R4, R4 ;
        /*0510*/                   MOV R5, R5 ;
        /*0520*/                   DFMA R4, R4, R8, R6 ;
        /*0530*/                   DFMA R4, R4, R4, R4 ;
        /*0540*/                   DFMA R4, R4, R8, R8 ;
        /*0550*/                   MOV R4, R4 ;
        /*0560*/                   MOV R5, R5 ;
        /*0570*/                   BRA `(.L_x_12) ;
.L_x_13:
        /*0580*/                   MOV R6, 0x46900000 ;
        /*0590*/                   MOV R7, RZ ;
        /*05a0*/                   LOP3.LUT R7, R7, R6, RZ, 0x3c, !PT ;
        /*05b0*/                   LOP3.LUT R6, R7, R6, RZ, 0x3c, !PT ;
        /*05c0*/                   LOP3.LUT R7, R7, R6, RZ, 0x3c, !PT ;
        /*05d0*/                   DMUL R4, R6, R4 ;
        /*05e0*/                   MOV R3, R4 ;
        /*05f0*/                   MOV R8, R5 ;
        /*0600*/                   MOV R3, RZ ;
        /*0610*/                   MUFU.RCP64H R8, R8 ;
        /*0620*/                   MOV R3, R3 ;
        /*0630*/                   MOV R3, R3 ;
        /*0640*/                   MOV R8, R8 ;
        /*0650*/                   MOV R8, R8 ;
        /*0660*/                   LOP3.LUT R3, R3, R0, RZ, 0xfc, !PT ;
        /*0670*/                   MOV R9, R8 ;
        /*0680*/                   MOV R8, R3 ;
        /*0690*/                   DADD R4, -RZ, -R4 ;
        /*06a0*/                   MOV R4, R4 ;
        /*06b0*/                   MOV R5, R5 ;
        /*06c0*/                   MOV R10, 0x0 ;
        /*06d0*/                   MOV R11, 0x3ff00000 ;
        /*06e0*/                   DFMA R12, R4, R8, R10 ;
        /*06f0*/                   DFMA R12, R12, R12, R12 ;
        /*0700*/                   DFMA R12, R12, R8, R8 ;
        /*0710*/                   DFMA R4, R4, R12, R10 ;
        /*0720*/                   DFMA R4, R4, R12, R12 ;
        /*0730*/                   DMUL R4, R4, R6 ;
        /*0740*/                   MOV R4, R4 ;
        /*0750*/                   MOV R5, R5 ;
        /*0760*/                   BRA `(.L_x_12) ;
"""


def test_cuobjdump_function_arch_and_blocks():
    """The cuobjdump listing gives one sm_70 function; EXIT and BRA end blocks; one special block (LG2 + 1 FMUL)."""
    funcs = parse_sass(LOG_FLOAT_CUOBJDUMP)
    assert list(funcs) == ["_Z5mylogPf"]
    fn = funcs["_Z5mylogPf"]
    assert fn.arch == "sm_70"
    assert len(fn.instructions) == 16
    assert [b.start for b in fn.blocks] == [0x00, 0xA0, 0xB0]  # EXIT at 0x90 ends block 0; BRA 0xa0 loops
    (special,) = fn.special_blocks()
    assert special.special == ("LG2",)
    counts = {k: v for k, v in special.flop_inst().items() if v}
    assert counts == {("fp32", "mul"): 1}


def test_cuobjdump_predicate_and_modifiers_are_parsed():
    """Guard predicates and opcode modifiers are kept apart from the opcode's base."""
    fn = parse_sass(LOG_FLOAT_CUOBJDUMP)["_Z5mylogPf"]
    shfl = fn.instructions[1]
    assert (shfl.offset, shfl.predicate, shfl.opcode, shfl.base) == (0x10, "@!PT", "SHFL.IDX", "SHFL")
    assert fn.instructions[6].mufu == "LG2"


def test_exp_float_special_block():
    """expf's block holds the FMUL by log2(e) before MUFU.EX2 (same basic block)."""
    (special,) = parse_sass(EXP_FLOAT_CUOBJDUMP)["_Z5myexpPf"].special_blocks()
    assert special.special == ("EX2",)
    assert special.flop_inst()[("fp32", "mul")] == 1


def test_nvdisasm_labels_split_newton_blocks():
    """nvdisasm labels and symbolic branches split the double reciprocal into its two MUFU.RCP64H Newton blocks."""
    fn = parse_sass(DBLRCP_NVDISASM)["__cuda_sm20_dblrcp_rn_slowpath_v3"]
    assert [b.start for b in fn.blocks] == [0x2F0, 0x310, 0x580]
    first, second = fn.special_blocks()
    assert first.special == second.special == ("RCP64H",)
    # Counted by hand in the excerpt: block 0x310: DFMA at 0x440-0x480 and 0x520-0x540 (8), DADD at 0x3f0 and
    # 0x4f0 (2), DMUL at 0x4e0 (1); block 0x580: DFMA 0x6e0-0x720 (5), DADD 0x690 (1), DMUL 0x5d0 and 0x730 (2).
    f1, f2 = first.flop_inst(), second.flop_inst()
    assert (f1[("fp64", "fma")], f1[("fp64", "add")], f1[("fp64", "mul")]) == (8, 2, 1)
    assert (f2[("fp64", "fma")], f2[("fp64", "add")], f2[("fp64", "mul")]) == (5, 1, 2)


def test_same_listing_on_both_sides_changes_nothing():
    """Comparing a real listing with itself pairs every special block with a zero FLOP difference."""
    fn = parse_sass(DBLRCP_NVDISASM)["__cuda_sm20_dblrcp_rn_slowpath_v3"]
    comp = compare_function(fn.name, fn, fn)
    assert len(comp.pairs) == 2 and not comp.source_only and not comp.target_only
    assert not any(comp.static_delta().values())


def test_text_without_sass_is_rejected():
    """A file with no SASS instruction line is one InputError saying what was expected."""
    with pytest.raises(InputError, match="no SASS instruction"):
        parse_sass("Fatbin ptx code:\n.version 6.5\n", "x.sass")


@pytest.mark.parametrize("cut", ["        /*0030*/    ", "        /*0030*/                   MOV R3, 0x"])
def test_listing_cut_mid_instruction_is_rejected(cut):
    """A listing that ends inside an instruction is refused naming the line (it loaded, losing the rest)."""
    head = LOG_FLOAT_CUOBJDUMP.split("        /*0030*/")[0]
    line = head.count("\n") + 1
    with pytest.raises(InputError, match=rf"x\.sass: line {line}: the last instruction is cut off"):
        parse_sass(head + cut, "x.sass")


def test_cuobjdump_function_without_its_end_line_is_rejected():
    """cuobjdump output whose last function lacks the dotted end line (cut after a whole instruction) is refused;
    excerpts without any dotted line, and complete listings, still load."""
    second = LOG_FLOAT_CUOBJDUMP.replace("_Z5mylogPf", "_Z5otherPf").split("        /*0040*/")[0]
    with pytest.raises(InputError, match=r"x\.sass: line \d+: function _Z5otherPf \(line \d+\) has no closing"):
        parse_sass(LOG_FLOAT_CUOBJDUMP + second, "x.sass")
    assert list(parse_sass(LOG_FLOAT_CUOBJDUMP + LOG_FLOAT_CUOBJDUMP.replace("_Z5mylogPf", "_Z5otherPf"))) == [
        "_Z5mylogPf", "_Z5otherPf"]
    assert list(parse_sass(EXP_FLOAT_CUOBJDUMP)) == ["_Z5myexpPf"]


def test_mangled_names_and_matching():
    """Itanium names reduce to their function name and match ncu's demangled kernel names."""
    assert mangled_simple_name("_Z5mylogPf") == "mylog"
    assert mangled_simple_name("_ZN9celeritas21KernelParamCalculator9thread_idEv") == "thread_id"
    assert mangled_simple_name("plain") is None
    got = match_functions(["mylog(float*)", "void myexp(float*)", "other(int)"], ["_Z5mylogPf", "_Z5myexpPf"])
    assert got == {"mylog(float*)": "_Z5mylogPf", "void myexp(float*)": "_Z5myexpPf"}


# -- the adjustment, on block structures built here (not listings) -----------------------------------
def _fn(name: str, extra_ffma: int) -> SassFunction:
    """A function object with one ordinary block and one MUFU.RCP block with 1 + extra_ffma FFMA."""
    ins = [Instruction(0x00, "", "LDG.E", "R0, [R2]"), Instruction(0x10, "", "EXIT", "")]
    special = [Instruction(0x20, "", "MUFU.RCP", "R1, R0"), Instruction(0x30, "", "FFMA", "R2, R1, R0, R3")]
    special += [Instruction(0x40 + 0x10 * i, "", "FFMA", "R2, R2, R1, R2") for i in range(extra_ffma)]
    return SassFunction(name, "sm_x", ins + special, [BasicBlock(0, ins), BasicBlock(1, special)])


def _metrics() -> KernelMetrics:
    rows = []
    for occ, ffma in enumerate((3000.0, 1000.0)):
        row = {"kernel": "div(float*)", "occurrence": occ, "id": occ, "duration_s": 1e-5}
        for p in PRECISION_LETTER:
            for o in FLOP_OPS:
                row[f"{p}_{o}_inst"] = 0.0
        row.update(fp32_fma_inst=ffma, l1_bytes=1e6, l2_bytes=1e6, dram_bytes=1e6)
        rows.append(row)
    return KernelMetrics(pd.DataFrame(rows), ["test"], frozenset())


def test_adjustment_weights_block_delta_by_threads(tmp_path):
    """Target FFMA = source + (target - source FFMA per block) x threads entering it, split by source FP counts."""
    counts = tmp_path / "counts.csv"
    counts.write_text("function,pc_offset,threads_executed\n_Z3divPf,0x20,2000\n_Z3divPf,0x30,2000\n")
    comp = SassComparison({"_Z3divPf": _fn("_Z3divPf", 0)}, {"_Z3divPf": _fn("_Z3divPf", 2)},
                          read_sass_counts(counts))
    km = _metrics()
    inp = KernelInputs.from_metrics(km)
    out, notes = comp.target_inst(km, inp.inst)
    # +2 FFMA per execution x 2000 threads = +4000 thread instructions, split 3:1 like the launches' FP counts.
    assert out[("fp32", "fma")] == pytest.approx([3000 + 3000, 1000 + 1000])
    assert any("+4000 FP32 FMA" in n for n in notes)
    assert np.array_equal(inp.inst[("fp32", "fma")], [3000.0, 1000.0])  # the source counts are untouched


def test_per_launch_counts(tmp_path):
    """With a launch column each launch gets its own threads."""
    counts = tmp_path / "counts.csv"
    counts.write_text("function,pc_offset,threads_executed,launch\n_Z3divPf,0x20,100,0\n_Z3divPf,0x20,50,1\n")
    comp = SassComparison({"_Z3divPf": _fn("_Z3divPf", 1)}, {"_Z3divPf": _fn("_Z3divPf", 0)},
                          read_sass_counts(counts))
    km = _metrics()
    out, _ = comp.target_inst(km, KernelInputs.from_metrics(km).inst)
    assert out[("fp32", "fma")] == pytest.approx([3000 - 100, 1000 - 50])


def test_without_counts_nothing_changes_and_notes_say_so():
    """Without execution counts the target keeps the source counts and the note lists the static difference."""
    comp = SassComparison({"_Z3divPf": _fn("_Z3divPf", 0)}, {"_Z3divPf": _fn("_Z3divPf", 3)})
    km = _metrics()
    inp = KernelInputs.from_metrics(km)
    out, notes = comp.target_inst(km, inp.inst)
    assert np.array_equal(out[("fp32", "fma")], inp.inst[("fp32", "fma")])
    assert any("+3 FP32 FMA" in n and "equal FLOP counts assumed" in n for n in notes)


def test_roofline_uses_the_adjusted_counts(tmp_path):
    """The roofline model's target FLOP include the SASS adjustment; without SASS it says equal counts were assumed."""
    import tomllib

    from nodecast.machines.loader import machine_from_dict
    from nodecast.models.roofline_figures import measured_gpu_toml
    from nodecast.traces.ncu import trace_from_metrics

    def machine(name: str, gpu: str) -> object:
        return machine_from_dict({
            "schema_version": 1, "name": name, "description": name,
            "cpu": {"model": "c", "sockets": 1, "cores_per_socket": 4, "clock_hz": 2e9, "memory_bytes": 1e10,
                    "memory_bandwidth_bps": 1e11},
            "gpu": {"model": gpu, "count": 1, "sms": 80, "clock_hz": 1.5e9, "memory_bytes": 1.6e10,
                    "peak_flops": {"fp32": {"fma": 15.7e12, "addmul": 7.85e12}},
                    "levels": {"dram": {"bandwidth_bps": 9e11}}},
            "links": [{"id": "p", "kind": "pcie", "endpoints": ["cpu0", "gpu0"], "gen": 3, "lanes": 16}],
            "measured": tomllib.loads(measured_gpu_toml(gpu))["measured"]}, f"{name}.toml")

    counts = tmp_path / "counts.csv"
    counts.write_text("function,pc_offset,threads_executed\n_Z3divPf,0x20,2000\n")
    comp = SassComparison({"_Z3divPf": _fn("_Z3divPf", 0)}, {"_Z3divPf": _fn("_Z3divPf", 2)},
                          read_sass_counts(counts))
    km = _metrics()
    trace = trace_from_metrics(km)
    src, tgt = machine("a", "V100"), machine("b", "H100")
    proj, _ = RooflineModel(km, comp).analyze(trace, src, tgt)
    assert proj.flop_t.sum() == pytest.approx(proj.flop_s.sum() + 2 * 4000)
    plain = RooflineModel(km).project(trace, src, tgt)
    assert any("equal instruction counts assumed" in n for n in plain.notes)


# -- bad counts files: one InputError naming the file (and the line) -------------------------------
_HEADER = "function,pc_offset,threads_executed\n"


@pytest.mark.parametrize(("content", "fragments"), [
    (_HEADER + "_Z5mylogPf,0x60\n", ("line 2", "row has 2 fields, the header has 3")),
    (_HEADER + "_Z5mylogPf,0x60,32,7\n", ("line 2", "row has 4 fields, the header has 3")),
    (_HEADER + "_Z5mylogPf,zz,32\n", ("line 2", "pc_offset", "'zz'")),
    (_HEADER + "_Z5mylogPf,0x60,32\n_Z5mylogPf,0x70,nan\n", ("line 3", "threads_executed", "'nan'")),
    (_HEADER + "_Z5mylogPf,0x60,-32\n", ("line 2", "threads_executed", ">= 0")),
    (_HEADER + "_Z5mylogPf,0x60,1e400\n", ("line 2", "threads_executed", "finite")),
    (_HEADER.replace("\n", ",launch\n") + "_Z5mylogPf,0x60,32,-1\n", ("line 2", "launch", "integer >= 0")),
    (_HEADER + ",0x60,32\n", ("line 2", "empty function name")),
    (_HEADER, ("no count rows",)),
    ("", ("needs columns",)),
    (b"\x89PNG\r\n\x1a\n\x00\x82\xff", ("not a UTF-8 text file",)),
    ("function,pc_offset,threads_executed\n".encode("utf-16"), ("not a UTF-8 text file",)),
])
def test_bad_counts_file_is_one_input_error(tmp_path, content, fragments):
    """Short rows, bad numbers, binary and UTF-16 files: an InputError naming the file, no other exception."""
    path = tmp_path / "counts.csv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(InputError) as info:
        read_sass_counts(path)
    msg = info.value.message
    assert msg.startswith(str(path)) and "\n" not in msg
    for f in fragments:
        assert f in msg


def test_counts_file_that_is_a_folder(tmp_path):
    """A folder given as --sass-counts is refused as one line, not IsADirectoryError."""
    folder = tmp_path / "adir.csv"
    folder.mkdir()
    with pytest.raises(InputError, match="is a folder"):
        read_sass_counts(folder)


def test_counts_file_with_bom_and_padded_header(tmp_path):
    """A UTF-8 byte-order mark and spaces around the column names are accepted; decimal offsets too."""
    path = tmp_path / "counts.csv"
    path.write_bytes("\ufefffunction, pc_offset ,threads_executed\n_Z5mylogPf,96,32\n".encode())
    assert read_sass_counts(path) == {"_Z5mylogPf": {None: {96: 32.0}}}
