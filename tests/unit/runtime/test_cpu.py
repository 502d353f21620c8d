"""The CPU facts the benches print and the fill-mask head's layout reads."""

from __future__ import annotations

from models.runtime import cpu

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9R14
stepping\t: 1
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni
bugs\t\t: sysret_ss_attrs

processor\t: 1
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9R14
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni
"""


def test_cpuinfo_gives_model_vendor_and_the_kernel_flags(tmp_path, monkeypatch):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    assert cpu._proc_cpuinfo(str(path)) == ("AMD EPYC 9R14", "AuthenticAMD",
                                            frozenset("fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni".split()),
                                            "family 25, model 17, stepping 1")
    real = cpu._proc_cpuinfo
    monkeypatch.setattr(cpu, "_proc_cpuinfo", lambda: real(str(path)))
    info = cpu.cpu_info()
    assert info["model"] == "AMD EPYC 9R14" and info["vendor"] == "AuthenticAMD" == cpu.cpu_vendor()
    assert info["flags"] == ["avx2", "avx512f", "avx512_vnni", "avx512_bf16"]  # in CPU_FLAGS' order, no AMX
    from bench.bench_common import cpu_line  # what every bench prints first

    assert cpu_line().startswith("CPU: AMD EPYC 9R14 (AuthenticAMD, family 25, model 17, stepping 1); "
                                 "flags: avx2, avx512f, avx512_vnni, avx512_bf16; ")


def test_no_cpuinfo_leaves_vendor_and_flags_empty(tmp_path):
    assert cpu._proc_cpuinfo(str(tmp_path / "missing")) == (None, "", frozenset(), "")
