from typing import Any

def simhash_and_minhash(normalized: str, no_space_script: Any, /) -> tuple[int, bytes]: ...
def translated(text: str, code_point_values: Any, code_point_value: Any, /) -> str: ...
def spaced(text: str, whitespace: Any, no_space_script: Any, mask: int = -1, /) -> str: ...
def number_candidates(
    text: str,
    code_point_values: Any,
    code_point_value: Any,
    whitespace: Any,
    words_before: str,
    words_after: str,
    words_before_ago: str,
    /,
) -> list[int]: ...
def numbers_signature(
    normalized: str,
    code_point_values: Any,
    code_point_value: Any,
    units: str,
    chinese_units: str,
    labels: str,
    chinese_labels: str,
    seed: int,
    /,
) -> int: ...
def xxh64(data: bytes, seed: int, /) -> int: ...
def nfkc(text: str, inert: Any, normalize: Any, /) -> str: ...
def casefolded(text: str, known: bytearray, folds: dict[int, str], /) -> str: ...
