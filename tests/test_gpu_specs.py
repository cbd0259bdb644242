"""Datasheet lookup, user specs, the measured-peaks cache and effective peaks (CPU), plus one GPU run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from profiling import peaks as peaks_mod
from profiling.gpu_specs import GPU_SPECS, MATCH_RULES, GpuSpecs, UnknownGpu, lookup_specs, specs_from_file
from profiling.peaks import (
    MeasuredPeaks,
    cache_path,
    device_slug,
    effective_peaks,
    load_cached_peaks,
    measure_peaks,
    save_peaks,
)

# Device names as torch.cuda.get_device_name / nvidia-smi print them.
DEVICE_NAMES = {
    "NVIDIA H100 80GB HBM3": "H100 SXM5 80GB",
    "NVIDIA H100 PCIe": "H100 PCIe 80GB",
    "NVIDIA H100 NVL": "H100 NVL 94GB",
    "NVIDIA H200": "H200 SXM 141GB",
    "NVIDIA H200 NVL": "H200 NVL 141GB",
    "NVIDIA A100-SXM4-80GB": "A100 SXM4 80GB",
    "NVIDIA A100-SXM4-40GB": "A100 SXM4 40GB",
    "NVIDIA A100-PCIE-40GB": "A100 PCIe 40GB",
    "NVIDIA A100 80GB PCIe": "A100 PCIe 80GB",
    "NVIDIA B200": "B200",
    "NVIDIA L40S": "L40S",
    "NVIDIA GeForce RTX 4090": "RTX 4090",
}


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BEAMSEARCH_CACHE_DIR", str(tmp_path))
    return tmp_path


def _measured(device_name: str = "NVIDIA H100 80GB HBM3", **overrides: object) -> MeasuredPeaks:
    fields: dict[str, object] = dict(
        device_name=device_name, copy_gbps=2900.0, bf16_tflops=750.0, fp32_tflops=50.0,
        torch_version="2.13.0", measured_at="2026-11-22T10:00:00+00:00", method="test",
    )  # fmt: skip
    fields.update(overrides)
    return MeasuredPeaks.model_validate(fields)


@pytest.mark.parametrize("device_name, canonical", sorted(DEVICE_NAMES.items()))
def test_lookup_known_device_names(device_name: str, canonical: str) -> None:
    assert lookup_specs(device_name).name == canonical
    assert lookup_specs(device_name.lower()).name == canonical  # case does not matter


@pytest.mark.parametrize(
    "device_name",
    [
        "NVIDIA GH200 480GB",  # contains "H200" as a substring, but is another product
        "NVIDIA GB200",  # contains "B200"
        "NVIDIA L40",  # not the L40S
        "NVIDIA GeForce RTX 4090 D",  # 114 SMs
        "NVIDIA GeForce RTX 4090 Laptop GPU",  # a different chip
        "NVIDIA H800",
        "Tesla V100-SXM2-16GB",
        "cpu",
    ],
)
def test_unknown_device_raises_with_a_way_forward(device_name: str) -> None:
    with pytest.raises(UnknownGpu) as info:
        lookup_specs(device_name)
    message = str(info.value)
    assert repr(device_name) in message
    assert "JSON file" in message and "specs_from_file" in message
    assert "python -m profiling.peaks" in message
    assert isinstance(info.value, LookupError)


def test_mig_slice_is_not_the_whole_gpu() -> None:
    with pytest.raises(UnknownGpu, match="MIG"):
        lookup_specs("NVIDIA A100-SXM4-40GB MIG 1g.5gb")


def test_dense_not_sparse() -> None:
    h100 = GPU_SPECS["H100 SXM5 80GB"]
    assert 900 < h100.bf16_tflops < 1000  # sparse would be 1979
    assert 1900 < h100.fp8_tflops < 2000  # type: ignore[operator]  # sparse would be 3958
    assert h100.tf32_tflops < 500 and h100.fp32_tflops == 67.0
    assert GPU_SPECS["A100 SXM4 80GB"].bf16_tflops == 312.0  # sparse would be 624
    assert GPU_SPECS["B200"].bf16_tflops < 2500  # sparse would be 4500
    for s in GPU_SPECS.values():
        # Dense TF32 is half of dense BF16 on every GPU here (B200's datasheet rounds TF32 to 2.2 PF
        # sparse: 1100 vs 1125); a sparse figure slipped in would be off by 2x.
        assert s.tf32_tflops == pytest.approx(s.bf16_tflops / 2, rel=0.03), s.name
        assert s.fp16_tflops == s.bf16_tflops, s.name
        assert s.fp8_tflops is None or s.fp8_tflops == pytest.approx(2 * s.bf16_tflops, rel=0.02), s.name


def test_known_numbers() -> None:
    h100_sxm, h100_pcie, h200 = (
        GPU_SPECS["H100 SXM5 80GB"],
        GPU_SPECS["H100 PCIe 80GB"],
        GPU_SPECS["H200 SXM 141GB"],
    )
    assert (h100_sxm.sm_count, h100_sxm.l2_bytes, h100_sxm.dram_gbps) == (132, 50 * 2**20, 3350.0)
    assert (h100_pcie.sm_count, h100_pcie.dram_gbps, h100_pcie.fp32_tflops) == (114, 2000.0, 51.0)
    assert round(h100_pcie.bf16_tflops) in (756, 757)
    assert h200.dram_gbps == 4800.0 and h200.bf16_tflops == h100_sxm.bf16_tflops
    a40, a80 = GPU_SPECS["A100 SXM4 40GB"], GPU_SPECS["A100 SXM4 80GB"]
    assert (a40.sm_count, a40.l2_bytes, a40.fp32_tflops, a40.tf32_tflops) == (108, 40 * 2**20, 19.5, 156.0)
    assert (a40.dram_gbps, a80.dram_gbps) == (1555.0, 2039.0)
    assert a40.fp8_tflops is None and a80.fp8_tflops is None  # Ampere has no FP8 tensor cores


def test_every_entry_is_sourced_and_sane() -> None:
    assert {"A100 SXM4 40GB", "A100 SXM4 80GB", "H100 SXM5 80GB", "H100 PCIe 80GB", "H100 NVL 94GB",
            "H200 SXM 141GB", "B200", "L40S", "RTX 4090"} <= set(GPU_SPECS)  # fmt: skip
    for key, s in GPU_SPECS.items():
        assert key == s.name
        assert s.source.strip(), s.name
        assert s.sm_count > 0 and s.l2_bytes > 0 and s.dram_gbps > 0 and s.fp32_tflops > 0, s.name
        assert s.fp32_tflops < s.tf32_tflops or s.name == "RTX 4090", s.name  # 4090: TF32 = FP32 rate
    for _, _, name in MATCH_RULES:
        assert name in GPU_SPECS  # every rule points at an entry


def test_specs_from_file_round_trip(tmp_path: Path) -> None:
    original = GPU_SPECS["L40S"]
    path = tmp_path / "l40s.json"
    path.write_text(original.model_dump_json())
    assert specs_from_file(path) == original

    mine = {k: v for k, v in original.model_dump().items() if k != "source"} | {"name": "My GPU"}
    (tmp_path / "mine.json").write_text(json.dumps(mine))
    loaded = specs_from_file(tmp_path / "mine.json")
    assert loaded.name == "My GPU" and "mine.json" in loaded.source  # source defaults to the file


def test_specs_from_file_rejects_missing_fields(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text(json.dumps({"name": "x", "sm_count": 1}))
    with pytest.raises(ValueError):
        specs_from_file(tmp_path / "bad.json")


def test_cache_write_and_read(cache_dir: Path) -> None:
    measured = _measured()
    assert load_cached_peaks(measured.device_name) is None
    path = save_peaks(measured)
    assert path == cache_dir / "peaks" / "nvidia-h100-80gb-hbm3.json" == cache_path(measured.device_name)
    assert load_cached_peaks(measured.device_name) == measured
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left behind

    save_peaks(_measured(copy_gbps=3000.0))  # overwrite in place
    assert load_cached_peaks(measured.device_name).copy_gbps == 3000.0  # type: ignore[union-attr]


def test_cache_ignores_garbage_and_other_devices(cache_dir: Path) -> None:
    path = cache_path("NVIDIA H200")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert load_cached_peaks("NVIDIA H200") is None
    path.write_text(_measured("NVIDIA-H200").model_dump_json())  # same slug, another name
    assert device_slug("NVIDIA-H200") == device_slug("NVIDIA H200")
    assert load_cached_peaks("NVIDIA H200") is None


def test_effective_peaks_datasheet_only(cache_dir: Path) -> None:
    p = effective_peaks("NVIDIA H100 80GB HBM3")
    sheet = GPU_SPECS["H100 SXM5 80GB"]
    assert (p.dram_gbps, p.bf16_tflops, p.fp32_tflops, p.fp8_tflops) == (
        3350.0,
        sheet.bf16_tflops,
        67.0,
        sheet.fp8_tflops,
    )
    assert set(p.source) == {"dram_gbps", "bf16_tflops", "fp16_tflops", "fp32_tflops", "tf32_tflops",
                             "fp8_tflops", "sm_count", "l2_bytes"}  # fmt: skip
    assert all(s == f"datasheet: {sheet.source}" for s in p.source.values())


def test_effective_peaks_prefers_measured(cache_dir: Path) -> None:
    save_peaks(_measured())
    p = effective_peaks("NVIDIA H100 80GB HBM3")
    sheet = GPU_SPECS["H100 SXM5 80GB"]
    assert (p.dram_gbps, p.bf16_tflops, p.fp32_tflops) == (2900.0, 750.0, 50.0)
    for field in ("dram_gbps", "bf16_tflops", "fp32_tflops"):
        assert p.source[field] == "measured 2026-11-22"
    # fp16 is not taken from the measured bf16: it stays the datasheet's, as do the rest.
    assert (p.fp16_tflops, p.tf32_tflops, p.fp8_tflops) == (
        sheet.fp16_tflops,
        sheet.tf32_tflops,
        sheet.fp8_tflops,
    )
    assert (p.sm_count, p.l2_bytes) == (132, 50 * 2**20)
    for field in ("fp16_tflops", "tf32_tflops", "fp8_tflops", "sm_count", "l2_bytes"):
        assert p.source[field].startswith("datasheet: NVIDIA H100")


def test_dram_ceiling_is_the_faster_of_copy_and_read(cache_dir: Path) -> None:
    # A read-only stream beats a copy (no read/write turnaround): the floor must not be beaten by it.
    save_peaks(_measured(copy_gbps=2900.0, read_gbps=3100.0))
    assert effective_peaks("NVIDIA H100 80GB HBM3").dram_gbps == 3100.0
    save_peaks(_measured(copy_gbps=2900.0))  # a cache from before reads were measured
    assert effective_peaks("NVIDIA H100 80GB HBM3").dram_gbps == 2900.0


def test_effective_peaks_with_given_specs(cache_dir: Path) -> None:
    specs = GPU_SPECS["L40S"].model_copy(update={"name": "Mystery", "source": "my notes"})
    p = effective_peaks("NVIDIA Mystery GPU", specs)  # unknown name, but specs given: no error
    assert p.dram_gbps == 864.0 and p.source["dram_gbps"] == "datasheet: my notes"


def test_effective_peaks_unknown_without_measurement_raises(cache_dir: Path) -> None:
    with pytest.raises(UnknownGpu, match="python -m profiling.peaks"):
        effective_peaks("NVIDIA Mystery GPU")


def test_effective_peaks_unknown_but_measured(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save_peaks(_measured("NVIDIA Mystery GPU"))
    monkeypatch.setattr(peaks_mod, "_device_properties", lambda name: None)  # as on a machine without it
    p = effective_peaks("NVIDIA Mystery GPU")
    assert (p.dram_gbps, p.bf16_tflops, p.fp32_tflops) == (2900.0, 750.0, 50.0)
    assert (p.sm_count, p.l2_bytes, p.fp8_tflops) == (0, 0, None)
    assert p.fp16_tflops == 750.0 and p.source["fp16_tflops"].startswith("derived: measured 2026-11-22")
    assert p.tf32_tflops == 375.0 and p.source["tf32_tflops"].startswith("derived:")
    assert p.source["sm_count"].startswith("unknown")

    monkeypatch.setattr(peaks_mod, "_device_properties", lambda name: (100, 64 * 2**20))
    p = effective_peaks("NVIDIA Mystery GPU")
    assert (p.sm_count, p.l2_bytes) == (100, 64 * 2**20)
    assert p.source["l2_bytes"] == "torch.cuda.get_device_properties"


def test_cli_without_gpu_fails_cleanly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(peaks_mod, "_has_gpu", lambda: False)
    with pytest.raises(SystemExit) as info:
        peaks_mod.main([])
    assert info.value.code == 2
    assert "no CUDA GPU" in capsys.readouterr().err


@pytest.mark.parametrize("as_json", [False, True])
def test_cli_report(as_json: bool, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setattr(peaks_mod, "_has_gpu", lambda: True)
    monkeypatch.setattr(peaks_mod, "measure_peaks", lambda device: _measured())
    peaks_mod.main(["--json"] if as_json else [])
    out = capsys.readouterr().out
    assert load_cached_peaks("NVIDIA H100 80GB HBM3") == _measured()
    if as_json:
        report = json.loads(out)
        assert report["measured"]["copy_gbps"] == 2900.0
        assert report["datasheet"]["name"] == "H100 SXM5 80GB"
        assert report["peaks"]["source"]["bf16_tflops"] == "measured 2026-11-22"
    else:
        assert "measured vs datasheet" in out and "87%" in out  # 2900 / 3350


def test_render_unknown_gpu() -> None:
    console = Console(record=True, width=200)
    peaks_mod.render_comparison(_measured("NVIDIA Mystery GPU"), None, console)
    assert "none for this GPU" in console.export_text()


@pytest.mark.gpu
def test_measure_peaks_on_gpu(cache_dir: Path) -> None:
    measured = measure_peaks()
    assert measured.copy_gbps > 0 and measured.bf16_tflops > 0 and measured.fp32_tflops > 0
    assert measured.measured_at and measured.torch_version and "copy_" in measured.method
    try:
        sheet: GpuSpecs | None = lookup_specs(measured.device_name)
    except UnknownGpu:
        sheet = None
    if sheet is not None:
        # Measured ceilings cannot beat the datasheet by much (10% for boost clocks and rounding).
        assert measured.copy_gbps < sheet.dram_gbps * 1.1, measured
        assert measured.bf16_tflops < sheet.bf16_tflops * 1.1, measured
        assert measured.fp32_tflops < sheet.fp32_tflops * 1.1, measured  # TF32 really was off
    save_peaks(measured)
    assert effective_peaks(measured.device_name).bf16_tflops == measured.bf16_tflops
