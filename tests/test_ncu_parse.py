"""Parsing real ncu output (../shared/fixtures) and combining launches."""

from __future__ import annotations

import json

import pytest

from profiling.metrics import DURATION, METRICS, metric_keys
from profiling.ncu_parse import combine, is_own_kernel, kernel_profiles, parse_raw_csv
from tests.conftest import SHARED

RAW = SHARED / "fixtures" / "ncu-raw" / "h100-torch-copy-kernels.csv"
TRACES = SHARED / "fixtures" / "kernelagent-traces"
needs_fixtures = pytest.mark.skipif(not RAW.is_file(), reason=f"fixtures not found at {SHARED / 'fixtures'}")


@needs_fixtures
def test_raw_csv_with_concatenated_runs_and_prof_lines() -> None:
    launches = parse_raw_csv(RAW.read_text())
    assert len(launches) == 10  # ten runs, one launch each, headers and units rows skipped
    first = launches[0]
    assert first.kernel_name.startswith("void vectorized_elementwise_kernel<8, bfloat16_copy_kernel_cuda")
    assert first.grid == "(524288, 1, 1)" and first.device_name.startswith("NVIDIA H100")
    assert first.metrics["dram__bytes_read.sum"] > 1e8 and first.metrics[DURATION] > 0
    assert all(0 <= launch.metrics["dram__throughput.avg.pct_of_peak_sustained_elapsed"] <= 100 for launch in launches)


@needs_fixtures
def test_a_name_filter_rejects_pytorch_kernels() -> None:
    launches = parse_raw_csv(RAW.read_text())
    assert not any(is_own_kernel(launch.kernel_name, ["_maxpool3d_kernel"]) for launch in launches)
    assert is_own_kernel("_maxpool3d_kernel", ["_maxpool3d_kernel"])
    assert not is_own_kernel("triton_poi_fused_copy_0", ["_matvec_kernel"])


def test_thousands_separators_na_and_units_rows() -> None:
    keys = metric_keys()
    header = ",".join(['"ID"', '"Kernel Name"', '"Grid Size"', '"Block Size"'] + [f'"{k}"' for k in keys])
    units = ",".join(['""'] * 4 + ['""'] * len(keys))
    values = ['"1,234.5"' if k == DURATION else ('"n/a"' if k == "lts__t_sector_hit_rate.pct" else '"7"') for k in keys]
    row = ",".join(['"0"', '"_k"', '"(2, 1, 1)"', '"(128, 1, 1)"'] + values)
    text = "\n".join(["==PROF== Connected to process 1", header, units, row, "==PROF== Disconnected"])
    (launch,) = parse_raw_csv(text)
    assert launch.metrics[DURATION] == 1234.5
    assert launch.missing == ["lts__t_sector_hit_rate.pct"]


def test_combine_sums_counts_and_time_weights_rates() -> None:
    a = {DURATION: 300.0, "dram__bytes_read.sum": 10.0, "sm__throughput.avg.pct_of_peak_sustained_elapsed": 90.0}
    b = {DURATION: 100.0, "dram__bytes_read.sum": 5.0, "sm__throughput.avg.pct_of_peak_sustained_elapsed": 10.0}
    whole = combine([a, b])
    assert whole[DURATION] == 400 and whole["dram__bytes_read.sum"] == 15
    assert whole["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(70.0)


def test_launches_of_one_kernel_are_grouped() -> None:
    from profiling.ncu_parse import Launch

    launches = [Launch("k1", "", "", "", {DURATION: 1.0}), Launch("k2", "", "", "", {DURATION: 2.0}),
                Launch("k1", "", "", "", {DURATION: 3.0})]  # fmt: skip
    profiles = kernel_profiles(launches)
    assert [(p.name, p.launches, p.metrics[DURATION]) for p in profiles] == [("k1", 2, 4.0), ("k2", 1, 2.0)]


@needs_fixtures
def test_schema_covers_kernelagents_27_metrics() -> None:
    recorded = json.loads((TRACES / "43_Max_Pooling_3D" / "round_1" / "input_ncu_metrics.json").read_text())
    names = set(next(iter(recorded["metrics"].values())))
    assert len(names) == 27 and names <= {m.key for m in METRICS}
