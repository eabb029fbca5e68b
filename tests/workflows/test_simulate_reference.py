"""The reference comparison as a library: statuses, one platform per machine, failed rows on Dask workers too."""

from __future__ import annotations

import pytest

from nodecast.errors import InputError
from nodecast.models.history import KernelModels
from nodecast.engine.platform import Platform
from nodecast.workflows.simulate_reference import compare, failed_summary, load_reference, load_setups

pytestmark = pytest.mark.shared  # needs ../shared/data/starpu


def _write(tmp_path, starpu_data, lines, machines, statuses=None):
    """A reference CSV of real rows of reference/attila.csv (1-based file lines), machine and status columns edited."""
    text = (starpu_data / "reference" / "attila.csv").read_text().splitlines()
    out = [text[0]]
    for i, (line, machine) in enumerate(zip(lines, machines, strict=True)):
        fields = text[line - 1].split(",")
        fields[0] = machine
        if statuses is not None:
            fields[13] = statuses[i]
            if statuses[i] != "ok":
                fields[10:13] = ["", "", ""]
        out.append(",".join(fields))
    path = tmp_path / "ref.csv"
    path.write_text("\n".join(out) + "\n")
    return path


def _setup(starpu_data):
    sampling = starpu_data / "sampling"
    return lambda m: (Platform.from_starpu(sampling / "bus" / f"{m}.platform.v4.xml"), KernelModels(sampling / "codelets" / "45", m))


def test_rows_not_ok_are_counted_by_status(tmp_path, starpu_data):
    """Rows with a status other than ok (an empty one included) are left out and counted per status; ok rows keep their line."""
    path = _write(tmp_path, starpu_data, [2, 10, 18, 26], ["attila"] * 4, ["ok", "crashed", "", "crashed"])
    table = load_reference(path)
    assert [(r.line, r.scheduler) for r in table.rows] == [(2, "dmda")]
    assert table.skipped == {"crashed": 2, "(empty)": 1}
    assert table.skipped_line() == "skipped 3 rows whose status is not ok ((empty): 1, crashed: 2)"


def test_file_without_status_column_keeps_every_row(tmp_path):
    """A reference file without a status column (built here in the reference format's columns) has every row compared."""
    path = tmp_path / "ref.csv"
    path.write_text("app,precision,matrix_size,block_size,scheduler,worker_config,sim_gflops\n"
                    "cholesky_implicit,single,9600,960,dmda,gpuonly,412.7\nlu_implicit_example_float,single,9600,960,dmda,gpuonly,627.6\n")
    table = load_reference(path)
    assert [r.app for r in table.rows] == ["cholesky_implicit", "lu_implicit_example_float"] and table.skipped == {}
    assert table.rows[0].nblocks == 10 and table.rows[0].machine == ""


@pytest.mark.parametrize("jobs", [1, 2])
def test_each_row_runs_on_its_machine_and_a_failed_row_does_not_stop_the_others(tmp_path, starpu_data, jobs):
    """Real rows (Cholesky 9600 dmda, LU double 9600 dmda) on attila and, machine column edited, on hannibal, whose
    models hold no double-precision LU kernel: the LU row fails with the reason, the others run on their own
    machine, one after the other (jobs=1) or on a local Dask cluster (jobs=2)."""
    path = _write(tmp_path, starpu_data, [2, 2, 50, 50], ["attila", "hannibal", "hannibal", "attila"])
    rows = load_reference(path).rows
    setups = load_setups(rows, _setup(starpu_data), path)
    assert list(setups) == ["attila", "hannibal"]
    out = compare(rows, setups, jobs=jobs)
    assert [r["machine"] for r in out] == ["attila", "hannibal", "hannibal", "attila"]
    assert out[0]["nodecast_gflops"] > 2 * out[1]["nodecast_gflops"] > 0  # C2050s against FX5800s
    assert out[2]["nodecast_gflops"] is None and "'starpu_dlu_lu_model_getrf' has no performance model for machine 'hannibal'" in out[2]["error"]
    assert out[3]["error"] == "" and out[3]["nodecast_gflops"] > 0
    assert failed_summary(out).startswith("1 row failed (line 4): kernel 'starpu_dlu_lu_model_getrf'")


def test_a_machine_that_cannot_be_loaded_names_file_and_line(tmp_path, starpu_data):
    """load_setups re-raises a loader's error with the reference file, the machine's first line and the machine."""
    path = _write(tmp_path, starpu_data, [2, 10], ["attila", "nosuch"])
    rows = load_reference(path).rows
    with pytest.raises(InputError, match=r"ref\.csv: line 3: machine 'nosuch': .*nosuch\.platform\.v4\.xml"):
        load_setups(rows, _setup(starpu_data), path, hint="Give another folder")
    with pytest.raises(InputError, match=r"line 3: no platform and models for machine 'nosuch'"):
        compare(rows, {"attila": _setup(starpu_data)("attila")})


def test_select_rows_filters_by_machine_size_application_and_scheduler(tmp_path, starpu_data):
    """Real rows of attila.csv relabelled per machine: each filter keeps what it names; an unknown machine or an empty
    selection is an InputError naming the file."""
    from nodecast.workflows.simulate_reference import select_rows

    # line 2: cholesky 9600 dmda; 3: cholesky 19200 dmda; 50: lu double 9600 dmda; 10: cholesky 9600 dmdar
    path = _write(tmp_path, starpu_data, [2, 3, 50, 10], ["attila", "attila", "hannibal", "attila"])
    table = load_reference(path)
    assert [r.line for r in select_rows(table)] == [2, 3, 4, 5]
    assert [r.line for r in select_rows(table, machine="hannibal")] == [4]
    assert [r.line for r in select_rows(table, max_blocks=10, app="cholesky")] == [2, 5]
    assert [r.line for r in select_rows(table, schedulers=["dmdar", " eager"])] == [5]
    with pytest.raises(InputError, match="no reference row of machine 'sirocco'") as err:
        select_rows(table, machine="sirocco")
    assert str(path) in err.value.message
    with pytest.raises(InputError, match="no reference row left"):
        select_rows(table, schedulers=["heft"])


def test_comparison_counts_agreement_and_leads_with_it(tmp_path, starpu_data):
    """compare_reference on two real rows: within-3 % count, memory flags and the headline come from the records;
    a failed row counts as failed, not as compared."""
    from nodecast.workflows.simulate_reference import compare_reference

    path = _write(tmp_path, starpu_data, [2, 50], ["attila", "hannibal"])
    table = load_reference(path)
    setups = load_setups(table.rows, _setup(starpu_data))
    res = compare_reference(table, table.rows, setups)
    ok = [r for r in res.records if not r["error"]]
    assert len(ok) == 1 and res.ran == ok and res.machines == ["attila", "hannibal"]
    assert res.within() == int(abs(ok[0]["diff_pct"]) <= 3.0)
    share, median, rows = res.headline()
    assert share.value == res.within() / 1 and share.unit == "share"
    assert median.value == abs(ok[0]["diff_pct"]) and rows.value == 1
    assert "1 failed" in rows.note and res.failed_line().startswith("1 row failed (line 3)")
    title, group = res.first_group()
    assert group == ok and title == "cholesky_implicit (single), gpuonly on attila"
