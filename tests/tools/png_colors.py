#!/usr/bin/env python3
"""What a screenshot shows, without an image library: png_colors.py FILE RRGGBB...
prints "WIDTH HEIGHT" and then, for each colour, how many pixels are within 40 of it on every
channel (anti-aliased lines come out a shade off). Reads the 8-bit RGB or RGBA, non-interlaced
PNGs that headless Chromium writes; anything else is an error (exit 2)."""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, head = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = head
    if depth != 8 or ctype not in (2, 6) or interlace:
        print(f"{path}: unsupported PNG (depth {depth}, colour type {ctype})", file=sys.stderr)
        sys.exit(2)
    bpp = 3 if ctype == 2 else 4
    raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):     # the five PNG filters, undone
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def main():
    w, h, bpp, rows = pixels(sys.argv[1])
    want = [tuple(int(c[i:i + 2], 16) for i in (0, 2, 4)) for c in sys.argv[2:]]
    counts = [0] * len(want)
    for line in rows:
        for x in range(0, len(line), bpp):
            px = line[x], line[x + 1], line[x + 2]
            for k, c in enumerate(want):
                if all(abs(px[i] - c[i]) <= 40 for i in range(3)):
                    counts[k] += 1
    print(w, h, *counts)


main()
