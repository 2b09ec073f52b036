"""Saved privacy ledgers read back: from a result ``.nc``, a ledger or accountant ``.json``, the
``releases.json`` of a run or a single release ``.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pymc_rdp.cli.errors import CLIError

__all__ = ["load_ledger"]


def load_ledger(path: Path, *, expected_digest: str | None = None, key: bytes | None = None) -> Any:
    """An :class:`~pymc_rdp.Accountant` rebuilt from a saved ledger, run or release file.

    A stored accountant is verified by :meth:`~pymc_rdp.Accountant.from_json` (curves
    recomputed, hash chain, ``expected_digest``, signature with ``key``); a refusal is a
    CLIError naming the file.
    """
    path = Path(path)
    verify = {"expected_digest": expected_digest, "key": key}
    if not path.exists():
        raise CLIError(f"file not found: {path}")
    if path.is_dir():
        for name in ("ledger.json", "posterior.nc"):
            if (path / name).exists():
                return load_ledger(path / name, **verify)
        raise CLIError(f"{path} is a directory without ledger.json or posterior.nc")
    with path.open("rb") as f:
        head = f.read(8)
    if head.startswith(b"\x89HDF") or path.suffix.lower() in (".nc", ".h5", ".netcdf"):
        return _ledger_from_doc(_ledger_from_netcdf(path), path, verify)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CLIError(f"{path} is neither a netCDF result nor a JSON file") from None
    return _ledger_from_doc(doc, path, verify)


#: keys under which a ledger may be stored, most complete first
_LEDGER_KEYS = ("pymc_rdp_accountant", "accountant", "ledger", "pymc_rdp_ledger")


def _ledger_from_doc(doc: Any, path: Path, verify: dict[str, Any] | None = None) -> Any:
    from pymc_rdp.privacy.accountant import Accountant

    verify = verify or {}
    if isinstance(doc, dict):
        fmt = doc.get("format")
        if fmt == "pymc-rdp-ledger":
            try:
                return Accountant.from_json(json.dumps(doc), **verify)
            except ValueError as exc:
                raise CLIError(f"{path}: the ledger does not verify, refused: {exc}") from None
        for key in _LEDGER_KEYS:
            if key in doc:
                inner = doc[key]
                if isinstance(inner, str):
                    try:
                        inner = json.loads(inner)
                    except json.JSONDecodeError:
                        continue
                return _ledger_from_doc(inner, path, verify)
        if fmt == "pymc-rdp.release" or isinstance(doc.get("mechanism"), dict):
            return _ledger_from_releases([doc], path, verify)
    if (
        isinstance(doc, list)
        and doc
        and all(isinstance(d, dict) and isinstance(d.get("mechanism"), dict) for d in doc)
    ):
        return _ledger_from_releases(doc, path, verify)
    raise CLIError(f"{path} holds no pymc-rdp ledger, accountant or release")


def _ledger_from_releases(
    docs: list[dict[str, Any]], path: Path, verify: dict[str, Any] | None = None
) -> Any:
    """A ledger rebuilt from release records: each mechanism re-evaluated on the default orders.

    Used for files that carry mechanisms but no accountant (a single release, or the private
    nodes of a model); the composition is sequential, which is an upper bound for releases
    that were in fact composed in parallel.
    """
    from pymc_rdp.privacy.accountant import Accountant
    from pymc_rdp.privacy.mechanisms import mechanism_from_dict

    if verify and any(v is not None for v in verify.values()):
        raise CLIError(
            f"{path} holds releases but no stored ledger: there is no digest or signature to "
            "verify (point at ledger.json or posterior.nc)"
        )
    acc = Accountant()
    for d in docs:
        entry = d.get("entry") or {}
        try:
            mech = mechanism_from_dict(d["mechanism"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CLIError(f"{path}: a release has an unreadable mechanism ({exc})") from None
        acc.spend(
            mech,
            count=int(entry.get("count", 1)),
            tag=entry.get("tag") or d.get("tag") or d.get("name") or None,
        )
    return acc


def _ledger_from_netcdf(path: Path) -> dict[str, str]:
    """The string attributes of a netCDF file's root group that may hold a ledger."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
    except OSError as exc:
        raise CLIError(f"cannot read netCDF file {path}: {exc}") from None
    found = {k: v for k, v in attrs.items() if k in _LEDGER_KEYS and isinstance(v, str)}
    if not found:
        raise CLIError(f"{path} has no privacy ledger in its attributes")
    return found
