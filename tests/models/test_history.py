"""Kernel durations from StarPU's history models, sampling, and the provider hook."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.models.history import IrregularHistogram, KernelModels, load_samples_csv

pytestmark = pytest.mark.shared  # needs ../shared/data/starpu


@pytest.fixture
def models(starpu_data):
    return KernelModels(starpu_data / "sampling" / "codelets" / "45", "attila")


def test_mean_duration_by_device_and_size(models):
    """GEMM on CUDA1 for a 960 block in single precision takes its recorded mean."""
    assert models.expected_s("chol_model_gemm", "cuda", 1, 11059200) == pytest.approx(2815.870e-6)
    assert models.expected_s("chol_model_gemm", "cpu", 0, 11059200) == pytest.approx(84075.59e-6)


def test_missing_kernel_names_it(models):
    """A kernel without a model file is an InputError naming the kernel and the machine."""
    with pytest.raises(InputError, match="kernel 'my_kernel' has no performance model for machine 'attila'"):
        models.expected_s("my_kernel", "cuda", 0, 1000)


def test_unmeasured_size_names_the_sizes(models):
    """A size the history does not hold lists the sizes it does hold."""
    with pytest.raises(InputError, match="no cuda0 measurement for 123 B"):
        models.expected_s("chol_model_gemm", "cuda", 0, 123)


def test_provider_answers_what_the_files_do_not(starpu_data):
    """The kernel-time hook (e.g. a roofline projection) is asked only for unknown kernels."""
    asked = []

    def provider(q):
        asked.append(q)
        return 1e-3

    m = KernelModels(starpu_data / "sampling" / "codelets" / "45", "attila", provider=provider)
    assert m.expected_s("my_kernel", "cuda", 0, 10, flops=5.0) == 1e-3
    assert m.expected_s("chol_model_gemm", "cuda", 0, 11059200) == pytest.approx(2795.670e-6)
    assert len(asked) == 1 and asked[0].kernel == "my_kernel" and asked[0].flops == 5.0


def test_device_without_model_borrows_another_and_says_so(models):
    """A fourth GPU (what-if) uses another device's model and records a note."""
    assert models.expected_s("chol_model_gemm", "cuda", 4, 11059200) > 0
    assert any("no model for cuda4" in n for n in models.notes)


def test_normal_sampling_is_seeded_and_positive(starpu_data):
    """Normal draws around the mean are reproducible for a seed and never negative."""
    folder = starpu_data / "sampling" / "codelets" / "45"
    draws = []
    for _ in range(2):
        m = KernelModels(folder, "attila", mode="normal", seed=3)
        mean = m.expected_s("chol_model_potrf", "cuda", 0, 3686400)
        s = m.sampler("chol_model_potrf", "cuda", 0, 3686400, mean)
        draws.append([s() for _ in range(500)])
    assert draws[0] == draws[1]
    assert min(draws[0]) > 0
    assert np.mean(draws[0]) == pytest.approx(44253.57e-6, rel=0.02)


def test_irregular_histogram_keeps_the_rare_slow_tail():
    """Equal-count bins keep a 2 % tail ten times slower than the bulk in the samples drawn."""
    rng = np.random.default_rng(0)
    samples = np.concatenate([rng.normal(1.0, 0.01, 980), rng.normal(10.0, 0.1, 20)])
    hist = IrregularHistogram(samples, nbins=50)
    drawn = hist.sample(np.random.default_rng(1), 20000)
    assert 0.01 < np.mean(drawn > 5) < 0.03


def test_histogram_mode_reads_samples_csv(tmp_path, starpu_data):
    """Per-execution samples in CSV drive histogram sampling for that kernel, device and size."""
    path = tmp_path / "s.csv"
    path.write_text("kernel,arch,size_bytes,duration_s\n" + "".join(f"chol_model_gemm,cuda0,11059200,{0.002 + i * 1e-5}\n" for i in range(100)))
    m = KernelModels(starpu_data / "sampling" / "codelets" / "45", "attila", mode="histogram", samples=load_samples_csv(path))
    s = m.sampler("chol_model_gemm", "cuda", 0, 11059200, 0.0028)
    values = [s() for _ in range(100)]
    assert 0.002 <= min(values) and max(values) <= 0.003


@pytest.mark.parametrize(("row", "message"), [
    ("k,cuda0,inf,0.002", r"size_bytes, line 2: 'inf' is infinite"),
    ("k,cuda0,1e400,0.002", r"size_bytes, line 2: '1e400' is infinite"),
    ("k,cuda0,-4,0.002", r"size_bytes, line 2: '-4' is out of range \(must be >= 0\)"),
    ("k,cuda0,4096,nan", r"duration_s, line 2: 'nan' is not a number \(NaN\)"),
    ("k,cuda0,4096,0", r"duration_s, line 2: '0' is out of range \(must be > 0 and <= 1e\+06\)"),
    ("k,cuda0,4096", r"line 2: the row has fewer fields than the header"),
])
def test_bad_samples_csv_is_one_line(tmp_path, row, message):
    """An infinite size (an OverflowError traceback before), a negative size, a NaN or zero duration, or a short
    row in a samples CSV (built here in its documented format) names the column and line."""
    path = tmp_path / "s.csv"
    path.write_text("kernel,arch,size_bytes,duration_s\n" + row + "\n")
    with pytest.raises(InputError, match=rf"^{path}: {message}"):
        load_samples_csv(path)


def test_model_file_that_is_a_symlink_loop_is_refused(starpu_data, tmp_path):
    """A codelet model that is a symlink loop is named by the reader; it read as 'no performance model'."""
    import shutil

    folder = tmp_path / "45"
    folder.mkdir()
    shutil.copy(starpu_data / "sampling" / "codelets" / "45" / "chol_model_gemm.attila", folder)
    (folder / "chol_model_potrf.attila").symlink_to(folder / "loop")
    (folder / "loop").symlink_to(folder / "chol_model_potrf.attila")
    models = KernelModels(folder, "attila")
    assert models.expected_s("chol_model_gemm", "cuda", 0, 11059200) > 0
    with pytest.raises(InputError, match=r"chol_model_potrf\.attila: cannot read performance model \(Too many levels"):
        models.expected_s("chol_model_potrf", "cuda", 0, 11059200)
