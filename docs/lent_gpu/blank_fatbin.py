"""Tabulate, or blank all but some architectures of, the CUDA fatbins inside an ELF shared object.

Blanking zeroes the payload of every machine-code (ELF) entry whose architecture is not kept;
headers and PTX entries stay, so the layout is unchanged and the driver still finds code for the
kept chip. The zeros then compress to almost nothing. Used only to carry vLLM to a lent GPU
machine within a call's 64 MiB (docs/lent_gpu_vllm.md); never for a real install.

    python docs/lent_gpu/blank_fatbin.py LIB.so          # print (kind, sm) -> MiB
    python docs/lent_gpu/blank_fatbin.py LIB.so 90       # keep sm_90 machine code only
"""
import collections, struct, subprocess, sys

def section(path):
    out = subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if ".nv_fatbin" in line:
            f = line.split("]")[1].split()
            return int(f[3], 16), int(f[4], 16)
    return None

def walk(data, off, size):
    p, end = off, off + size
    while p < end - 16:
        magic, _ver, hsz, fsz = struct.unpack_from("<IHHQ", data, p)
        if magic != 0xBA55ED50:
            p += 8
            continue
        q, stop = p + hsz, p + hsz + fsz
        while q < stop:
            kind, _v, ehsz, psz = struct.unpack_from("<HHIQ", data, q)
            arch = struct.unpack_from("<I", data, q + 28)[0]
            yield q, kind, ehsz, psz, arch
            q += ehsz + psz
        p = stop

def main():
    path, keep = sys.argv[1], {int(a) for a in sys.argv[2].split(",")} if len(sys.argv) > 2 else None
    data = bytearray(open(path, "rb").read())
    sec = section(path)
    if sec is None:
        print(path, "no fatbin"); return
    sizes = collections.Counter()
    for q, kind, ehsz, psz, arch in walk(data, *sec):
        sizes[("ptx" if kind == 1 else "elf", arch)] += psz
        if keep is not None and kind == 2 and arch not in keep:
            data[q + ehsz:q + ehsz + psz] = bytes(psz)
    print(path, sorted((k, round(v / 2**20, 1)) for k, v in sizes.items()))
    if keep is not None:
        open(path, "wb").write(data)

main()
