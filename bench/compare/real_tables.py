"""Small real tables that PyPI packages ship inside themselves, for the
comparison's sizes and writes (issue 15: "every real dataset <= 0.9x
Parquet-zstd in the default mode, no column larger than Parquet's, writes
never slower than Parquet-zstd").

Nobody tuned the format for these: they are public datasets as their
packages hand them out (vega_datasets' local datasets, scikit-learn's
bundled datasets, statsmodels' datasets), with the shapes real data has —
repeated categories, skewed small integers, dates and timestamps, floats
with few distinct values, missing values, short and long strings. Each
loads from the installed package alone (nothing is downloaded), so a run
measures the same bytes every time for a given package version.

Each table becomes a "light" Dataset: it is measured for size (per column
too), write, full scan and a take, not for the projections and filters the
large datasets define (a small table has no meaningful projected-scan or
filter figure: the open dominates). Names are "real-<package>-<table>", so
`--datasets real` selects them all and `--datasets real-vega` one package's.
"""
import pyarrow as pa

from .datasets import Dataset, _plain_schema


def _arrow(df):
    """A pandas DataFrame as a plain Arrow table: a named (non-default)
    index becomes a column (statsmodels' time series carry their dates
    there), categories become their values, strings plain `string`,
    timestamps microseconds (as in the flights dataset; time zones kept),
    no pandas metadata, one chunk per column."""
    import pandas as pd
    if not isinstance(df.index, pd.RangeIndex) or df.index.name is not None:
        df = df.reset_index()
    df = df.rename(columns=str)
    table = pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata(None)
    fields = []
    for f in table.schema:
        t = f.type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if pa.types.is_timestamp(t) and t.unit == "ns":
            t = pa.timestamp("us", t.tz)
        fields.append(pa.field(f.name, t, f.nullable))
    return _plain_schema(table.cast(pa.schema(fields)))


def _vega(name):
    import warnings

    from vega_datasets import local_data
    with warnings.catch_warnings():
        # vega_datasets 0.9 passes read_json an argument pandas 3 deprecates
        warnings.simplefilter("ignore")
        return local_data(name)


def _sklearn(loader):
    import sklearn.datasets as skd
    return getattr(skd, loader)(as_frame=True).frame


def _statsmodels(module):
    import importlib
    return importlib.import_module(f"statsmodels.datasets.{module}").load_pandas().data


# (name, package on PyPI, loader of a pandas DataFrame, what it is). Chosen
# for variety of shape, each at least a few hundred rows where the package
# has one that large.
TABLES = [
    ("vega-airports", "vega_datasets", lambda: _vega("airports"),
     "US airports: codes, names, cities, states, coordinates"),
    ("vega-cars", "vega_datasets", lambda: _vega("cars"),
     "car models: names, small floats with missing values, year, origin"),
    ("vega-seattle-weather", "vega_datasets", lambda: _vega("seattle-weather"),
     "daily Seattle weather 2012-2015: dates, rounded floats, a 5-value category"),
    ("vega-sf-temps", "vega_datasets", lambda: _vega("sf-temps"),
     "hourly San Francisco temperatures of one year: timestamps and one decimal"),
    ("vega-stocks", "vega_datasets", lambda: _vega("stocks"),
     "monthly prices of five stocks: symbol, date, price"),
    ("vega-us-employment", "vega_datasets", lambda: _vega("us-employment"),
     "monthly US employment by sector: one date and two dozen integer-like series"),
    ("vega-iris", "vega_datasets", lambda: _vega("iris"),
     "Fisher's iris: four one-decimal measurements and the species (150 rows)"),
    ("sklearn-digits", "scikit-learn", lambda: _sklearn("load_digits"),
     "8x8 handwritten digits: 64 pixel columns of 0-16 and the label"),
    ("sklearn-breast-cancer", "scikit-learn", lambda: _sklearn("load_breast_cancer"),
     "breast cancer measurements: 30 float columns and the label"),
    ("sm-randhie", "statsmodels", lambda: _statsmodels("randhie"),
     "RAND health insurance experiment: counts, logs and indicators"),
    ("sm-fair", "statsmodels", lambda: _statsmodels("fair"),
     "affairs survey: small-valued floats"),
    ("sm-co2", "statsmodels", lambda: _statsmodels("co2"),
     "weekly Mauna Loa CO2 1958-2001: dates and a float series with gaps"),
    ("sm-fertility", "statsmodels", lambda: _statsmodels("fertility"),
     "World Bank fertility rates: country names and codes, 54 yearly float columns, many missing"),
    ("sm-macrodata", "statsmodels", lambda: _statsmodels("macrodata"),
     "US quarterly macroeconomic series 1959-2009"),
    ("sm-anes96", "statsmodels", lambda: _statsmodels("anes96"),
     "1996 American National Election Study: coded survey answers"),
]


def load(name):
    """The light Dataset `name` (one of TABLES' names, without "real-")."""
    for key, package, loader, what in TABLES:
        if key == name:
            table = _arrow(loader())
            return Dataset(f"real-{key}", table, None, None, None, None,
                           f"{what} (PyPI package {package})", light=True)
    raise KeyError(name)


def plan():
    """[(name, build)] of every table, in TABLES' order."""
    return [(f"real-{key}", lambda key=key: load(key)) for key, *_ in TABLES]
