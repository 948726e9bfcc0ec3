"""SDMetrics quality report as a plain function."""

from __future__ import annotations

import warnings

import pandas as pd

from skdpsynth.utils._optional import import_optional

__all__ = ["sdmetrics_quality", "sdmetrics_metadata"]


def sdmetrics_metadata(frame: pd.DataFrame, schema=None) -> dict:
    """SDMetrics single-table metadata from a schema (or from dtypes when no schema is given)."""
    columns = {}
    for name in frame.columns:
        kind = schema[name].kind if schema is not None and name in schema else None
        if kind is None:
            dt = frame[name].dtype
            if pd.api.types.is_bool_dtype(dt):
                kind = "boolean"
            elif pd.api.types.is_datetime64_any_dtype(dt):
                kind = "datetime"
            elif pd.api.types.is_numeric_dtype(dt):
                kind = "continuous"
            else:
                kind = "categorical"
        sd_type = {"continuous": "numerical", "integer": "numerical", "categorical": "categorical",
                   "boolean": "boolean", "datetime": "datetime"}[kind]
        columns[name] = {"sdtype": sd_type}
    return {"columns": columns}


def sdmetrics_quality(real: pd.DataFrame, synthetic: pd.DataFrame, schema=None) -> dict[str, float]:
    """SDMetrics QualityReport scores.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Tables with the same columns.
    schema : TableSchema, optional
        Declares column kinds; dtypes are used when absent.

    Returns
    -------
    dict
        ``overall``, ``column_shapes``, ``column_pair_trends`` (all in [0, 1], greater is better).
        SDMetrics scores categorical pairs only when their real association passes its threshold;
        when no pair does, ``column_pair_trends`` is NaN and ``overall`` is the column-shapes score.
    """
    QualityReport = import_optional("sdmetrics.reports.single_table", "sdmetrics_quality").QualityReport

    report = QualityReport()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report.generate(real, synthetic[real.columns], sdmetrics_metadata(real, schema), verbose=False)
    props = report.get_properties().set_index("Property")["Score"]
    return {
        "overall": float(report.get_score()),
        "column_shapes": float(props.get("Column Shapes")),
        "column_pair_trends": float(props.get("Column Pair Trends")),
    }
