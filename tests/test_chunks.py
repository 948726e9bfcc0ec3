"""Fitting from chunks: iterables of DataFrames and Dask DataFrames (on a local Dask cluster) give the same release."""

import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from skdpsynth import NPGCSynthesizer, SchemaError, TableSchema
from skdpsynth._chunks import chunks_of, is_chunked, is_dask_frame, leading_rows, map_reduce
from skdpsynth.privacy._copula_statistics import (
    CHUNK_CELLS,
    PairCounter,
    PairLayout,
    StatisticsBuilder,
    column_groups,
    frame_statistics,
)

SCHEMA = TableSchema.from_dict({
    "score": {"kind": "continuous", "lower": 0, "upper": 100},
    "age": {"kind": "integer", "lower": 17, "upper": 70, "nullable": False},
    "credits": {"kind": "integer", "lower": 0, "upper": 600, "nullable": False},
    "course": {"kind": "categorical", "categories": ["math", "bio", "art", "history"]},
    "online": {"kind": "boolean", "nullable": False},
})


def _table(n, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 3))
    z[:, 1] = 0.6 * z[:, 0] + 0.8 * z[:, 1]
    df = pd.DataFrame({
        "score": (60 + 12 * z[:, 0]).clip(0, 100),
        "age": (25 + 4 * np.abs(z[:, 1])).round().astype(int).clip(17, 70),
        "credits": (rng.integers(1, 9, n) * 60 + (z[:, 2] > 1) * 15).clip(0, 600),
        "course": np.array(["math", "bio", "art"], dtype=object)[np.digitize(z[:, 1], [-0.5, 0.7])],
        "online": z[:, 2] > 0.3,
    })
    df.loc[rng.random(n) < 0.05, "score"] = np.nan
    return df


def _released(est):
    return {"counts": [c.tolist() for c in est.cell_counts_], "corr": est.correlation_.round(12).tolist(),
            "log": est.budget_log_, "n": est.n_estimate_}


# ------------------------------------------------------------------------------------------ the helper
def test_what_counts_as_chunked_input():
    X = _table(50)
    assert is_chunked(iter([X])) and is_chunked([X, X]) and is_chunked(x for x in [X])
    assert not is_chunked(X) and not is_chunked(X.to_numpy()) and not is_chunked([[1, 2], [3, 4]])
    assert not is_chunked([]) and not is_dask_frame(X)
    head, rest = leading_rows(iter([X.iloc[:1], X.iloc[1:2], X.iloc[2:]]), 2)
    assert len(head) == 2 and sum(len(c) for c in rest) == 48
    assert sum(len(c) for c in chunks_of(X, 7)) == 50


def test_map_reduce_is_the_sum_over_chunks():
    X = _table(1000)
    total = map_reduce(iter(list(chunks_of(X, 99))), lambda c: c["score"].fillna(0).sum(), lambda a, b: a + b)
    assert total == pytest.approx(X["score"].fillna(0).sum())
    with pytest.raises(ValueError, match="no chunks"):
        map_reduce(iter([]), len, lambda a, b: a + b)


def test_statistics_merge_equals_one_pass():
    from skdpsynth.synthesizers._npgc import build_cells

    X = SCHEMA.validate(_table(3000))
    cells = build_cells(SCHEMA, 32, 200)
    whole = frame_statistics(X, cells, exact_values=True)
    parts = [frame_statistics(c, cells, exact_values=True) for c in chunks_of(X, 401)]
    merged = parts[0]
    for p in parts[1:]:
        merged = merged.merge(p)
    assert merged.n == whole.n == 3000
    np.testing.assert_array_equal(merged.counts, whole.counts)
    np.testing.assert_array_equal(merged.tables, whole.tables)
    for a, b in zip(merged.ecdf, whole.ecdf):
        if a is not None:
            np.testing.assert_array_equal(a[0], b[0])
            np.testing.assert_array_equal(a[1], b[1])
    # the pair tables are the exact 2-way counts on the dependence cells
    builder = StatisticsBuilder(cells)
    assert whole.tables.shape == (builder.layout.size,) and whole.tables.sum() == 10 * 3000
    codes = np.column_stack([m[g.encode(X[g.spec.name])] for g, m in zip(cells, builder.maps)])
    table = builder.layout.table(whole.tables, 0, 3)
    np.testing.assert_array_equal(table, np.bincount(codes[:, 0] * table.shape[1] + codes[:, 3],
                                                     minlength=table.size).reshape(table.shape))


@pytest.mark.parametrize("cap", [1, 8, 64, 256, pytest.param(10_000, marks=pytest.mark.slow)])  # 10,000: 4 s
def test_grouped_pair_tables_are_the_pair_tables(cap):
    # columns packed into groups count the same tables as every pair on its own, chunk after chunk
    rng = np.random.default_rng(cap)
    for _ in range(20):
        sizes = rng.integers(1, 40, rng.integers(2, 9))
        dep = np.stack([rng.integers(0, s, 700) for s in sizes])
        layout = PairLayout(sizes)
        counter = PairCounter(layout, cap)
        for part in np.array_split(dep, 3, axis=1):
            counter.add(part)
        tables = counter.result()
        for i in range(len(sizes)):
            for j in range(i + 1, len(sizes)):
                expected = np.bincount(dep[i] * sizes[j] + dep[j], minlength=sizes[i] * sizes[j])
                np.testing.assert_array_equal(layout.table(tables, i, j), expected.reshape(sizes[i], sizes[j]))
        groups = column_groups(sizes, cap)
        assert sorted(j for g in groups for j in g) == list(range(len(sizes)))
        assert all(np.prod(sizes[g]) <= max(cap, sizes[g].max()) for g in groups)


# ------------------------------------------------------------------------------------------ NPGC from chunks
@pytest.mark.parametrize("epsilon", [1.0, None])
@pytest.mark.usefixtures("reproducible_noise")
def test_iterable_of_chunks_gives_the_release_of_the_whole_table(epsilon):
    X = _table(4000)
    est = NPGCSynthesizer(epsilon=epsilon, schema=SCHEMA, random_state=3)
    whole = clone(est).fit(X)
    chunked = clone(est).fit(chunks_of(X, 333))  # a generator: read once, chunk by chunk
    assert _released(chunked) == _released(whole)
    assert chunked.dtypes_ == whole.dtypes_ and chunked.columns_ == whole.columns_
    pd.testing.assert_frame_equal(chunked.sample(200, random_state=0), whole.sample(200, random_state=0))
    if epsilon is not None:  # the same accounting: noise added once, to the merged statistics
        assert chunked.privacy_spent_.epsilon == pytest.approx(epsilon)
        assert [r.target for r in chunked.budget_log_] == [r.target for r in whole.budget_log_]


@pytest.mark.usefixtures("reproducible_noise")
def test_list_of_frames_and_partial_fit():
    X, Y = _table(2000, seed=1), _table(1500, seed=2)
    est = NPGCSynthesizer(epsilon=2.0, schema=SCHEMA, random_state=0)
    a = clone(est).fit([X.iloc[:900], X.iloc[900:]]).partial_fit(iter([Y.iloc[:10], Y.iloc[10:]]))
    b = clone(est).fit(X).partial_fit(Y)
    assert _released(a) == _released(b) and a.n_cohorts_ == 2


def test_chunk_problems_fail_before_any_budget():
    X = _table(600)
    est = NPGCSynthesizer(epsilon=1.0, schema=SCHEMA, random_state=0)
    bad = X.copy()
    bad.loc[550, "course"] = "dance"
    with pytest.raises(SchemaError, match="categories"):
        est.fit(chunks_of(bad, 100))  # the bad value is in the last chunk
    with pytest.raises(SchemaError, match="same columns"):
        est.fit(iter([X.iloc[:300], X.iloc[300:].drop(columns="age")]))
    with pytest.raises(SchemaError, match="public schema"):
        NPGCSynthesizer(epsilon=1.0).fit(chunks_of(X, 100))
    with pytest.raises(ValueError, match="y must be a column"):
        est.fit(chunks_of(X, 100), y=np.zeros(600))
    with pytest.raises(TypeError, match="DataFrames"):
        est.fit(iter([X, X.to_numpy()]))
    assert not hasattr(est, "budget_log_")


def test_clipping_counted_over_all_chunks_and_warned_once_without_exact_counts():
    X = _table(900)
    X.loc[::3, "score"] = 150.0  # 300 rows, 30-40 in every chunk of 100
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = NPGCSynthesizer(epsilon=10.0, schema=SCHEMA, random_state=0).fit(chunks_of(X, 100))
    clipped = [w for w in caught if "clipped" in str(w.message)]
    (clip,) = [r for r in est.budget_log_ if "clipped to the public bounds" in r.target]
    # the message shows the noisy count (which rounds to the exact 300 in about 7 % of fits: sigma 5.7)
    assert len(clipped) == 1 and f"'score' (about {est.clip_counts_['score']:.0f} rows)" in str(clipped[0].message)
    assert abs(est.clip_counts_["score"] - 300) < 8 * clip.noise_scale  # the tally of all nine chunks, noised


def test_memory_is_bounded_by_the_chunk_not_the_table():
    def stream(n_chunks, rows=20_000):
        for i in range(n_chunks):
            yield _table(rows, seed=i)

    def peak(n_chunks):
        tracemalloc.start()
        NPGCSynthesizer(epsilon=1.0, schema=SCHEMA, random_state=0).fit(stream(n_chunks))
        out = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return out

    small, large = peak(2), peak(12)  # 40,000 vs 240,000 rows
    assert large < 1.5 * small  # the peak does not grow with the number of rows
    assert CHUNK_CELLS * 8 * 6 > large  # a few chunk-sized buffers at most


# ------------------------------------------------------------------------------------------ Dask
@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


# a local Dask cluster takes about 3 s to start and 6 s to fit: the Dask tests run with -m slow; the merge of the
# partitions' statistics runs by default without a cluster (the chunked and grouped tests above)
@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [1.0, None])
@pytest.mark.usefixtures("reproducible_noise")
def test_dask_dataframe_on_a_local_cluster(dask_client, epsilon):
    dd = pytest.importorskip("dask.dataframe")
    X = _table(5000, seed=4)
    ddf = dd.from_pandas(X, npartitions=7)
    assert is_dask_frame(ddf) and is_chunked(ddf)
    est = NPGCSynthesizer(epsilon=epsilon, schema=SCHEMA, random_state=5)
    on_cluster = clone(est).fit(ddf)  # statistics per partition on the workers, merged there
    in_memory = clone(est).fit(X)
    assert _released(on_cluster) == _released(in_memory)
    # Dask may hold text as its string dtype: the release keeps the input's dtype, the rest matches
    text = {c for c, dt in ddf.dtypes.items() if str(dt) != str(X[c].dtype)}
    assert {c: v for c, v in on_cluster.dtypes_.items() if c not in text} == \
        {c: v for c, v in in_memory.dtypes_.items() if c not in text}
    out = on_cluster.sample(300, random_state=0)
    assert set(out["course"].dropna()) <= set(SCHEMA["course"].categories)
    assert len(dask_client.scheduler_info()["workers"]) == 2


@pytest.mark.slow
def test_dask_partition_errors_reach_the_caller(dask_client):
    dd = pytest.importorskip("dask.dataframe")
    X = _table(800)
    X.loc[700, "course"] = "dance"
    est = NPGCSynthesizer(epsilon=1.0, schema=SCHEMA, random_state=0)
    with pytest.raises(SchemaError, match="categories"):
        est.fit(dd.from_pandas(X, npartitions=4))
    assert not hasattr(est, "budget_log_")
