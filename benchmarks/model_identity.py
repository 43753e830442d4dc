"""A local model folder's content identity (rr/model_identity.py): seconds once, then nothing.

Writes a dummy model folder (``config.json`` and ``--gb`` GB of random bytes in two
``.safetensors`` shards) under ``--dir`` (a fresh temporary folder, deleted afterwards), then times
:func:`rr.model_identity.local_identity` three times with an empty per-user digest cache: the first
call reads every byte, the second finds each file's (path, size, mtime) in the cache; after one
shard is touched (new mtime) only that shard is read again. The files were just written, so they
are in the page cache: a cold disk adds its read time to the first call only.

    python benchmarks/model_identity.py [--gb 3]
    python benchmarks/model_identity.py --quick     # 20 MB, seconds
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from rr.model_identity import local_identity

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^folder: [\d.]+ GB in 3 files$",
    r"^first \(reads every byte\): [\d.]+ s, [\d.]+ GB/s$",
    r"^second \(cached\): [\d.]+ ms$",
    r"^one shard touched: [\d.]+ s$",
]


def write_folder(folder: Path, gb: float) -> None:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "llama"}')
    block = 1 << 26
    for shard in range(2):
        remaining = int(gb * 1e9 / 2)
        with open(folder / f"model-0000{shard + 1}-of-00002.safetensors", "wb") as f:
            while remaining > 0:
                n = min(block, remaining)
                f.write(os.urandom(n))
                remaining -= n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=3.0)
    parser.add_argument(
        "--dir", default=None, help="where the dummy folder goes (default: a temporary folder)"
    )
    parser.add_argument("--quick", action="store_true", help="20 MB")
    args = parser.parse_args()
    gb = 0.02 if args.quick else args.gb
    root = Path(tempfile.mkdtemp(prefix="rr-identity-", dir=args.dir))
    os.environ["RR_IDENTITY_CACHE"] = str(root / "cache.json")
    try:
        folder = root / "model"
        write_folder(folder, gb)
        files = list(folder.iterdir())
        size = sum(p.stat().st_size for p in files)
        print(f"folder: {size / 1e9:.2f} GB in {len(files)} files")
        t = time.perf_counter()
        first = local_identity(str(folder))
        cold = time.perf_counter() - t
        print(f"first (reads every byte): {cold:.2f} s, {size / 1e9 / cold:.2f} GB/s")
        t = time.perf_counter()
        assert local_identity(str(folder)) == first
        print(f"second (cached): {(time.perf_counter() - t) * 1e3:.1f} ms")
        shard = sorted(folder.glob("*.safetensors"))[0]
        os.utime(shard)  # same bytes, new mtime: read again (same digest)
        t = time.perf_counter()
        assert local_identity(str(folder)) == first
        print(f"one shard touched: {time.perf_counter() - t:.2f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
