"""Score files, utt2spk files and speaker attribute files.

Score file (:doc:`/contracts`): whitespace separated, one trial per line, no header::

    <enroll-id> <test-id> <score> <target|nontarget>

Rules, each broken one raising :class:`sparc_eval.errors.DataError` naming the file and line:

- a line must have exactly 4 fields; blank lines are skipped;
- the score must parse as a float and be finite: ``nan`` and ``inf`` are rejected;
- the label must be ``target`` or ``nontarget`` (lower case, as in Kaldi trial lists);
- an ``(enroll-id, test-id)`` pair may appear only once (the error names both lines);
- a file with no trials is an error. One-class files are read fine; the metrics then follow
  the null + not_applicable rule of results.json.

Reading is columnar (pyarrow.csv, about 0.3 s per 10^6 lines) for the common case: printable
ASCII, fields separated by single spaces, ``\n`` line ends, and a file that breaks no rule. Any
other file (tabs, CR, blank lines, non-ASCII ids) or any broken rule goes through the
line-by-line parser, which gives the same trials and the errors naming the line.

utt2spk (Kaldi): ``<utt-id> <speaker>`` per line; a repeated utterance id is an error.

Speaker attribute file (``--speakers``): JSON lines (one object per line with a ``speaker``
key) or CSV (a header row with a ``speaker`` column; comma, tab or semicolon separated).
Missing-value cells (empty, ``nan``, ``NA``, ``null``, ``None``) become None; ``sex``/``gender``
are normalised to ``F``/``M`` (a ``gender`` column is read as ``sex`` when there is no ``sex``);
CSV cells that read as numbers become numbers, as they would be in JSON lines (``age`` is then
binned by ``segment_table``; other numbers need a binning of the caller's choice and are not
segmented). A speaker listed twice is an error.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic import atomic_stream
from ..data.manifest import SEX_WORDS, clean_value
from ..errors import DataError

LABEL_WORDS = {"target": True, "nontarget": False}


@dataclass
class ScoreTrials:
    """Trials read from a score file; ``lines[i]`` is the 1-based line of trial i; ``enroll`` and
    ``test`` are object arrays of str."""

    enroll: np.ndarray
    test: np.ndarray
    scores: np.ndarray
    labels: np.ndarray
    lines: np.ndarray
    path: str = "<memory>"

    def __len__(self) -> int:
        return int(self.scores.size)


def _read_bytes(path) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError("file not found", path=path) from None


def _decode_lines(data: bytes, path):
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise DataError(f"not UTF-8 text ({err.reason} at byte {err.start})", path=path) from None


def _read_lines(path):
    return _decode_lines(_read_bytes(path), path)


def parse_scores(lines, path="<memory>") -> ScoreTrials:
    """Parse score-file lines (see the module rules); the work per line is a split."""
    fields = [line.split() for line in lines]
    numbers = [i for i, f in enumerate(fields) if f]
    for i in numbers:
        if len(fields[i]) != 4:
            raise DataError(
                f"expected 4 fields (<enroll-id> <test-id> <score> <target|nontarget>), got {len(fields[i])}: "
                f"{lines[i].strip()[:80]!r}",
                path=path,
                line=i + 1,
            )
    if not numbers:
        raise DataError("no trials in the score file", path=path)
    rows = [fields[i] for i in numbers]
    line_no = np.asarray(numbers, dtype=np.int64) + 1
    enroll = np.array([r[0] for r in rows], dtype=object)
    test = np.array([r[1] for r in rows], dtype=object)
    words = [r[3] for r in rows]
    try:
        scores = np.array([r[2] for r in rows], dtype=np.float64)
    except ValueError:
        for r, ln in zip(rows, line_no):
            try:
                float(r[2])
            except ValueError:
                raise DataError(
                    f"score {r[2]!r} is not a number", path=path, line=int(ln)
                ) from None
        raise
    bad = ~np.isfinite(scores)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"score {rows[i][2]!r} is not finite ({int(bad.sum())} non-finite scores in the file)",
            path=path,
            line=int(line_no[i]),
            hint="NaN and +/-inf scores are rejected; fix the scorer or map them to finite values",
        )
    word_arr = np.array(words)
    labels = word_arr == "target"
    unknown = ~labels & (word_arr != "nontarget")
    if unknown.any():
        i = int(np.flatnonzero(unknown)[0])
        raise DataError(
            f"unknown label {words[i]!r}",
            path=path,
            line=int(line_no[i]),
            hint="labels are 'target' or 'nontarget'",
        )
    _check_duplicates(enroll, test, line_no, path)
    return ScoreTrials(enroll, test, scores, labels, line_no, str(path))


def _check_duplicates(enroll, test, line_no, path):
    pairs = list(zip(enroll.tolist(), test.tolist()))
    if len(set(pairs)) == len(pairs):
        return
    seen = {}
    for pair, ln in zip(pairs, line_no.tolist()):
        if pair in seen:
            raise DataError(
                f"duplicate trial {pair[0]} {pair[1]}: also on line {seen[pair]}",
                path=path,
                line=ln,
                hint="each (enroll-id, test-id) pair may appear once; remove the repeats",
            )
        seen[pair] = ln


_PRINTABLE = bytes(range(32, 127))


def _fast_scores(data: bytes, path):
    """The trials of a plain, valid file read by columns, or None when the file is not plain
    or breaks a rule (then :func:`parse_scores` reads it and names the line)."""
    if not data.isascii():
        return None
    breaks = data.translate(None, _PRINTABLE)  # what is not printable must be line ends only
    if breaks.count(b"\n") != len(breaks):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pcsv

    names = ["enroll", "test", "score", "label"]
    try:
        table = pcsv.read_csv(
            pa.BufferReader(data),
            read_options=pcsv.ReadOptions(column_names=names),
            parse_options=pcsv.ParseOptions(
                delimiter=" ", quote_char=False, escape_char=False, ignore_empty_lines=False
            ),  # a blank line fails here
            convert_options=pcsv.ConvertOptions(
                column_types=dict(
                    zip(names, [pa.string(), pa.string(), pa.float64(), pa.string()])
                ),
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    n = table.num_rows
    if n == 0 or n != len(breaks) + (0 if data.endswith(b"\n") else 1):
        return None
    scores = table["score"].to_numpy()
    labels = pc.equal(table["label"], "target").to_numpy(zero_copy_only=False)
    known = pc.sum(pc.equal(table["label"], "nontarget")).as_py() or 0
    enroll, test = (
        pc.dictionary_encode(table[name].combine_chunks()) for name in ("enroll", "test")
    )
    pairs = np.sort(
        enroll.indices.to_numpy().astype(np.int64) * len(test.dictionary) + test.indices.to_numpy()
    )
    if (
        not np.isfinite(scores).all()
        or int(labels.sum()) + known != n
        or (pairs[1:] == pairs[:-1]).any()
    ):
        return None
    return ScoreTrials(
        _object_ids(enroll),
        _object_ids(test),
        scores,
        labels,
        np.arange(1, n + 1, dtype=np.int64),
        str(path),
    )


def _object_ids(codes) -> np.ndarray:
    """Ids as an object array of str from their dictionary codes (one str object per distinct id)."""
    return codes.dictionary.to_numpy(zero_copy_only=False)[codes.indices.to_numpy()]


def read_scores(path) -> ScoreTrials:
    """Read a score file (see the module rules)."""
    data = _read_bytes(path)
    fast = _fast_scores(data, path)
    if fast is not None:
        return fast
    return parse_scores(_decode_lines(data, path), str(path))


def read_spane_llrs(path):
    """SpAnE's raw verification scores (``llrs.npy``: rows of trial-speaker index,
    enrollment-speaker index and PLDA log-likelihood ratio; ``spk_labels.npy`` beside it names the
    indices): ``(ScoreTrials, utt2spk)``. A trial is a target when the two indices are equal; each
    trial speaker's test recording is named ``<speaker>:trial``."""
    path = Path(path)
    labels_path = path.with_name("spk_labels.npy")
    if not labels_path.is_file():
        raise DataError(
            f"{path}: SpAnE's scores need spk_labels.npy beside them ({labels_path} is missing)"
        )
    rows = np.load(path)
    names = np.load(labels_path, allow_pickle=True).astype(str)
    if rows.ndim != 2 or rows.shape[1] != 3:
        raise DataError(f"{path}: expected rows of (trial speaker, enrollment speaker, LLR)")
    idx = rows[:, :2].astype(np.int64)
    if (idx < 0).any() or (idx >= names.size).any() or not np.all(idx == rows[:, :2]):
        raise DataError(f"{path}: speaker indices must be integers in [0, {names.size})")
    test = np.array([f"{n}:trial" for n in names], dtype=object)[idx[:, 0]]
    trials = ScoreTrials(
        names.astype(object)[idx[:, 1]],
        test,
        rows[:, 2].astype(np.float64),
        idx[:, 0] == idx[:, 1],
        np.arange(1, len(rows) + 1),
        str(path),
    )
    return trials, {f"{n}:trial": n for n in names}


LINES_PER_WRITE = 16384  # score lines joined into one write, written while the next are built


def format_score(x: float) -> str:
    """Shortest text that reads back as the same float."""
    return repr(float(x))


def write_scores(path, enroll_ids, test_ids, scores, labels) -> None:
    """Write a score file atomically; ``labels`` are booleans (True = target) or label words."""
    scores = np.asarray(scores, dtype=np.float64)
    if not np.isfinite(scores).all():
        i = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise DataError(f"score {i} (0-based) is not finite; refusing to write it", path=path)
    labels = np.asarray(labels)
    if labels.dtype != bool:
        words = labels.astype(str)
        bad = ~np.isin(words, list(LABEL_WORDS))
        if bad.any():
            raise DataError(f"unknown label {words[np.flatnonzero(bad)[0]]!r}", path=path)
        labels = words == "target"
    rows = zip(enroll_ids, test_ids, scores.tolist(), labels.tolist())
    with atomic_stream(path) as handle:
        while block := list(itertools.islice(rows, LINES_PER_WRITE)):
            handle.write(
                "".join(
                    f"{e} {t} {format_score(s)} {'target' if y else 'nontarget'}\n"
                    for e, t, s, y in block
                )
            )


def read_utt2spk(path) -> dict:
    """``{utterance: speaker}`` from a Kaldi utt2spk file (2 fields per line)."""
    out = {}
    for i, line in enumerate(_read_lines(path), 1):
        f = line.split()
        if not f:
            continue
        if len(f) != 2:
            raise DataError(
                f"expected '<utt-id> <speaker>', got {len(f)} fields", path=path, line=i
            )
        if f[0] in out:
            raise DataError(f"utterance {f[0]} is listed twice", path=path, line=i)
        out[f[0]] = f[1]
    if not out:
        raise DataError("no entries in the utt2spk file", path=path)
    return out


def _number(value):
    """A CSV cell that reads as a finite number becomes one (as in JSON lines)."""
    if isinstance(value, str):
        try:
            x = float(value)
        except ValueError:
            return value
        return x if math.isfinite(x) else value
    return value


def _normalise_row(row: dict, *, csv_cells: bool = False) -> dict:
    row = {str(k).strip(): clean_value(v) for k, v in row.items() if k is not None}
    if csv_cells:
        row = {k: (v if k == "speaker" else _number(v)) for k, v in row.items()}
    if "sex" not in row and "gender" in row:
        row["sex"] = row.pop("gender")
    if row.get("sex") is not None:
        row["sex"] = SEX_WORDS.get(str(row["sex"]).strip().lower(), str(row["sex"]).strip())
    return row


def read_speakers(path) -> dict:
    """``{speaker: {attribute: value}}`` from a JSON-lines or CSV speaker file."""
    lines = _read_lines(path)
    first = next((ln.strip() for ln in lines if ln.strip()), "")
    if not first:
        raise DataError("empty speaker file", path=path)
    rows = []
    if first.startswith("{"):
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"not a JSON object: {err.msg}", path=path, line=i) from None
            if not isinstance(obj, dict):
                raise DataError("each line must be a JSON object", path=path, line=i)
            rows.append((i, obj))
    else:
        text = "\n".join(lines)
        try:
            dialect = csv.Sniffer().sniff(lines[0], delimiters=",\t;")
        except csv.Error:
            dialect = csv.excel
        reader = csv.DictReader(io.StringIO(text), dialect=dialect)
        if not reader.fieldnames or "speaker" not in [h.strip() for h in reader.fieldnames]:
            raise DataError(
                f"no 'speaker' column in the CSV header {reader.fieldnames}",
                path=path,
                line=1,
                hint="a speaker file is JSON lines or CSV with a 'speaker' column",
            )
        for i, rec in enumerate(reader, 2):
            rows.append((i, rec))
    out = {}
    for i, raw in rows:
        row = _normalise_row(raw, csv_cells=not first.startswith("{"))
        spk = row.pop("speaker", None)
        if spk is None:
            raise DataError("no speaker id on this line", path=path, line=i)
        spk = str(spk)
        if spk in out:
            raise DataError(f"speaker {spk} is listed twice", path=path, line=i)
        out[spk] = row
    return out


def map_ids(ids, mapping: dict, *, what: str, path=None, keep_unmapped: bool = False) -> np.ndarray:
    """Map each id through ``mapping``; unknown ids raise DataError naming the first few
    (or stay as they are with ``keep_unmapped``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    codes = pc.dictionary_encode(
        pa.array(np.asarray(ids).astype(str))
    )  # hashed: 4x a sort of 10^6 ids
    uniq = codes.dictionary.to_pylist()
    missing = sorted(u for u in uniq if u not in mapping)
    if missing and not keep_unmapped:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        raise DataError(
            f"{len(missing)} {what} not found: {shown}",
            path=path,
            hint=f"every {what.rstrip('s')} must be listed",
        )
    mapped = np.array([str(mapping.get(u, u)) for u in uniq])
    return mapped[codes.indices.to_numpy(zero_copy_only=False)]


def align_trials(a: ScoreTrials, b: ScoreTrials):
    """``(scores_a, scores_b, labels)`` of two score files over the same trials, in ``a``'s
    order, for :func:`sparc_eval.metrics.bootstrap.paired_bootstrap`. The trial sets must be
    equal and agree on every label (DataError naming the first mismatch otherwise)."""
    key_a = np.char.add(np.char.add(a.enroll.astype(str), "\t"), a.test.astype(str))
    key_b = np.char.add(np.char.add(b.enroll.astype(str), "\t"), b.test.astype(str))
    order_b = np.argsort(key_b)
    pos = np.searchsorted(key_b[order_b], key_a)
    pos = np.minimum(pos, key_b.size - 1)
    found = key_b[order_b][pos] == key_a
    if not found.all():
        i = int(np.flatnonzero(~found)[0])
        raise DataError(
            f"trial {a.enroll[i]} {a.test[i]} is not in {b.path}", path=a.path, line=int(a.lines[i])
        )
    if key_a.size != key_b.size:
        extra = np.setdiff1d(key_b, key_a)[0].replace("\t", " ")
        raise DataError(f"trial {extra} is only in this file, not in {a.path}", path=b.path)
    idx = order_b[pos]
    differ = a.labels != b.labels[idx]
    if differ.any():
        i = int(np.flatnonzero(differ)[0])
        raise DataError(
            f"trial {a.enroll[i]} {a.test[i]} has different labels in the two files "
            f"(line {int(b.lines[idx[i]])} of {b.path})",
            path=a.path,
            line=int(a.lines[i]),
        )
    return a.scores, b.scores[idx], a.labels
