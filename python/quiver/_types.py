"""Arrow types Quiver stores, and the casts applied to those it does not.

Quiver stores: null, bool, int8..int64, uint8..uint64, float16/32/64,
decimal128, date32, timestamp (any unit, any zone), string, large_string,
binary, large_binary, fixed_size_binary, struct, list, large_list,
fixed_size_list and map, nested to any depth, with field metadata.

Before writing, types with a lossless stored equivalent are cast in Python
(zero-copy where Arrow allows):
  string_view -> string, binary_view -> binary,
  dictionary<_, value> -> value (decoded), run_end_encoded<_, value> -> value,
  date64 -> date32 (Arrow requires date64 to hold whole days).
Anything else (time32/time64, duration, intervals, unions, decimal256, ...)
is rejected with NotSupportedError naming the field.
"""
import errno

import pyarrow as pa

from .errors import InvalidArgumentError, NotSupportedError


def _no_nul(text, what, path):
    """Names and time zones cross the Arrow C interface as C strings: a NUL
    would cut them there, silently. Refuse what cannot be stored whole."""
    if text is not None and "\0" in text:
        raise InvalidArgumentError(
            f"{path}: {what} {text!r} contains a NUL character, which Arrow's C interface "
            "(and so Quiver) cannot carry", errno.EINVAL, "EINVAL")

_SCALAR_OK = (
    pa.types.is_null, pa.types.is_boolean, pa.types.is_integer, pa.types.is_floating,
    pa.types.is_date32, pa.types.is_timestamp, pa.types.is_string,
    pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary,
    pa.types.is_fixed_size_binary,
)


def storable_type(t, path="column"):
    """Returns the type Quiver stores for Arrow type `t` (t itself when it is
    stored as is). Raises NotSupportedError for types with no lossless
    equivalent."""
    if any(f(t) for f in _SCALAR_OK):
        if pa.types.is_timestamp(t):
            _no_nul(t.tz, "time zone", path)
        return t
    if pa.types.is_decimal(t):
        if isinstance(t, pa.Decimal128Type):
            return t
        raise NotSupportedError(f"{path}: {t} is not supported (decimal128 only)")
    if t == pa.string_view():
        return pa.string()
    if t == pa.binary_view():
        return pa.binary()
    if pa.types.is_date64(t):
        return pa.date32()
    if pa.types.is_dictionary(t):
        return storable_type(t.value_type, path)
    if pa.types.is_run_end_encoded(t):
        return storable_type(t.value_type, path)
    if pa.types.is_struct(t):
        fields = [storable_field(t.field(i), path) for i in range(t.num_fields)]
        if all(a is b for a, b in zip(fields, (t.field(i) for i in range(t.num_fields)))):
            return t
        return pa.struct(fields)
    if pa.types.is_map(t):
        k = storable_field(t.key_field, path)
        v = storable_field(t.item_field, path)
        if k is t.key_field and v is t.item_field:
            return t
        return pa.map_(k, v, keys_sorted=t.keys_sorted)
    if pa.types.is_list(t):
        v = storable_field(t.value_field, path)
        return t if v is t.value_field else pa.list_(v)
    if pa.types.is_large_list(t):
        v = storable_field(t.value_field, path)
        return t if v is t.value_field else pa.large_list(v)
    if pa.types.is_fixed_size_list(t):
        v = storable_field(t.value_field, path)
        if v is t.value_field:
            return t
        return pa.list_(v, t.list_size)
    raise NotSupportedError(f"{path}: Arrow type {t} is not supported by Quiver")


def storable_field(f, parent="column"):
    path = f.name if parent == "column" else f"{parent}.{f.name}"
    _no_nul(f.name, "field name", parent if parent != "column" else "schema")
    t = storable_type(f.type, path)
    if t is f.type:
        return f
    return f.with_type(t)


def storable_schema(schema):
    """The schema Quiver will store for `schema` (the same object when no
    cast is needed)."""
    fields = [storable_field(f) for f in schema]
    # pyarrow hands out new wrapper objects for the same types, so "is"
    # alone would see a cast where there is none: compare values too.
    if all(a is b or a.equals(b, check_metadata=True) for a, b in zip(fields, schema)):
        return schema
    return pa.schema(fields, metadata=schema.metadata)
