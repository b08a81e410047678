"""Tabulate, or blank all but some architectures of, the CUDA fatbins inside an ELF shared object.

Blanking zeroes the payload of every machine-code (ELF) entry whose architecture is not kept;
headers and PTX entries stay, so the layout is unchanged and the driver still finds code for the
kept chip. The zeros then compress to almost nothing. Used only to carry vLLM to a lent GPU
machine within a call's 64 MiB (docs/getting-started/gpus.md); never for a real install.

    python docs/lent_gpu/blank_fatbin.py LIB.so          # print (kind, sm) -> MiB
    python docs/lent_gpu/blank_fatbin.py LIB.so 90       # keep sm_90 machine code only
"""

from __future__ import annotations

import collections
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50
ELF_ENTRY = 2  # an entry's kind: 1 is PTX, 2 is machine code


def fatbin_section(path: Path) -> tuple[int, int] | None:
    """(file offset, size) of the ``.nv_fatbin`` section, from ``readelf``."""
    listing = subprocess.run(
        ["readelf", "-S", "-W", str(path)], capture_output=True, text=True, check=True
    ).stdout
    for line in listing.splitlines():
        if ".nv_fatbin" in line:
            fields = line.split("]")[1].split()
            return int(fields[3], 16), int(fields[4], 16)
    return None


def entries(data: bytes, offset: int, size: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(start, kind, header size, payload size, sm) of every entry of every fatbin there."""
    position, end = offset, offset + size
    while position < end - 16:
        magic, _version, header, length = struct.unpack_from("<IHHQ", data, position)
        if magic != FATBIN_MAGIC:  # fatbins are 8-byte aligned
            position += 8
            continue
        entry, stop = position + header, position + header + length
        while entry < stop:
            kind, _flags, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
            sm = struct.unpack_from("<I", data, entry + 28)[0]
            yield entry, kind, entry_header, payload, sm
            entry += entry_header + payload
        position = stop


def main(argv: list[str]) -> int:
    path = Path(argv[0])
    keep = {int(sm) for sm in argv[1].split(",")} if len(argv) > 1 else None
    data = bytearray(path.read_bytes())
    section = fatbin_section(path)
    if section is None:
        print(path, "has no fatbin")
        return 0
    sizes: collections.Counter = collections.Counter()
    for start, kind, header, payload, sm in entries(data, *section):
        sizes[("ptx" if kind != ELF_ENTRY else "elf", sm)] += payload
        if keep is not None and kind == ELF_ENTRY and sm not in keep:
            data[start + header : start + header + payload] = bytes(payload)
    print(path, sorted((key, round(value / 2**20, 1)) for key, value in sizes.items()))
    if keep is not None:
        path.write_bytes(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
